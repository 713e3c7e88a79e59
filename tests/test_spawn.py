"""Worker result lines reach the runner as they are written, each once; a cut-off line ends the stream; a gated
worker waits at its gate."""
import json
import os
import threading
import time

import pytest

from harness.build import BUILD_NICENESS, BUILD_SLOTS
from harness.confine import can_drop_privileges
from harness.spawn import LineReader, sandbox_slot, spawn_worker


def test_lines_arrive_once_and_a_partial_line_waits(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"shape": "seed"}) + "\n" + '{"shape": "med')
    reader = LineReader(path)
    assert reader.new_lines() == [{"shape": "seed"}]
    assert reader.new_lines() == []
    with open(path, "a") as handle:
        handle.write('ium"}\n')
    assert reader.new_lines() == [{"shape": "medium"}]


def test_a_corrupt_line_ends_the_stream(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"shape": "seed"}\n{not json}\n{"shape": "large"}\n')
    reader = LineReader(path)
    assert reader.new_lines() == [{"shape": "seed"}]
    assert reader.new_lines() == []


def test_a_gated_worker_has_its_job_at_once_but_goes_on_only_at_the_gate(tmp_path):
    """Prestart (runner.py): a judge starts while another evaluates and waits at its gate; the time limit counts
    from the gate, so a long wait there is never a timeout."""
    gate, seen, opened = threading.Event(), [], []

    def open_later() -> None:
        deadline = time.time() + 30
        while not seen and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(1.5)      # longer than the worker's limit
        opened.append(time.time())
        gate.set()

    threading.Thread(target=open_later, daemon=True).start()
    outcome = spawn_worker({}, {}, 1.0, tmp_path / "worker.log", on_line=seen.append,
                           module="tests.fixtures.gate_worker", gate=gate)
    assert [line["phase"] for line in outcome.lines] == ["host", "gpu"], (outcome, (tmp_path / "worker.log").read_text())
    assert outcome.lines[0]["at"] < opened[0] <= outcome.lines[1]["at"]
    assert not outcome.timed_out


def test_a_lowered_worker_runs_at_the_priority_asked(tmp_path):
    """Compiles beside an evaluation run niced (build.BUILD_NICENESS), so the judge's clock does not read them."""
    gate = threading.Event()
    gate.set()
    base = os.nice(0)
    plain = spawn_worker({}, {}, 30.0, tmp_path / "plain.log", module="tests.fixtures.gate_worker", gate=gate)
    lowered = spawn_worker({}, {}, 30.0, tmp_path / "lowered.log", module="tests.fixtures.gate_worker", gate=gate,
                           niceness=BUILD_NICENESS)
    assert plain.lines[0]["niceness"] == base
    assert lowered.lines[0]["niceness"] == min(19, base + BUILD_NICENESS) > base


@pytest.mark.skipif(not can_drop_privileges(), reason="needs root to confine the worker to a user of its own")
def test_a_confined_lowered_worker_cannot_take_its_priority_back(tmp_path):
    """A candidate's build code runs niced and confined: raising its own priority to crowd the judge is refused."""
    with sandbox_slot(0, BUILD_SLOTS) as slot:
        outcome = spawn_worker({}, {}, 60.0, tmp_path / "unnice.log", module="tests.fixtures.unnice_worker",
                               sandbox_slot=slot, niceness=BUILD_NICENESS)
    assert outcome.lines, (tmp_path / "unnice.log").read_text()
    line = outcome.lines[-1]
    assert line["refused"] and line["after"] == line["before"] >= BUILD_NICENESS, line
