"""Worker result lines reach the runner as they are written, each once; a cut-off line ends the stream; a gated
worker waits at its gate."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness import spawn
from harness.build import BUILD_NICENESS, BUILD_SLOTS
from harness.confine import can_drop_privileges
from harness.spawn import LineReader, move_process, plan_cores, sandbox_slot, spawn_worker


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


def test_each_gpu_lane_gets_cores_of_its_own_where_the_host_has_enough():
    """On a GPU host that compiles while it times, each lane's judge and sandbox get cores no compile may use."""
    plan = plan_cores(list(range(16)), [0])
    assert plan.lanes == {0: (14, 15)} and plan.rest == frozenset(range(14))
    two = plan_cores(list(range(32)), [0, 1])
    assert two.lanes == {0: (28, 29), 1: (30, 31)} and two.rest == frozenset(range(28))
    assert plan_cores(list(range(0, 32, 2)), [3]).lanes == {3: (28, 30)}   # the cores this process may use
    assert plan_cores(list(range(8)), [0]).lanes == {0: (6, 7)}
    assert plan_cores(list(range(7)), [0]) is None     # under three cores left per reserved one: none taken
    assert plan_cores([0, 1], [0]) is None
    assert plan_cores(list(range(16)), []) is None


def thread_cores(pid: int) -> dict[int, str]:
    cores = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        status = open(f"/proc/{pid}/task/{tid}/status").read()
        cores[int(tid)] = next(line.split(":")[1].strip() for line in status.splitlines()
                               if line.startswith("Cpus_allowed_list"))
    return cores


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to move a process between")
def test_a_process_moves_to_a_lane_with_every_thread_and_those_it_starts_later():
    """sched_setaffinity moves one thread: a judge moving its sandbox, which has started threads, moves them all."""
    first, last = min(os.sched_getaffinity(0)), max(os.sched_getaffinity(0))
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, sys, threading, time
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        print("started", flush=True)
        sys.stdin.readline()
        later = threading.Thread(target=lambda: print(sorted(os.sched_getaffinity(0)), flush=True))
        later.start(); later.join()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "started"
        assert len(thread_cores(child.pid)) == 2
        move_process(child.pid, {last})
        assert set(thread_cores(child.pid).values()) == {str(last)}
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == str([last])
    finally:
        child.kill()
        child.wait()
    move_process(os.getpid(), os.sched_getaffinity(0))   # a process that ended meanwhile is no error either
    move_process(child.pid, {first})


@pytest.mark.skipif(not can_drop_privileges(), reason="needs root to confine the worker and mount in its namespace")
@pytest.mark.gpu
def test_a_build_finds_no_cuda_device_on_a_gpu_host(tmp_path):
    """The real device nodes: torch in a worker spawned as builds are finds no GPU, and one spawned as judges are
    finds it."""
    job = {"paths": [], "cuda": True}
    with sandbox_slot(0, BUILD_SLOTS) as slot:
        shown = spawn_worker(job, {}, 120.0, tmp_path / "shown.log", module="tests.fixtures.gpu_probe_worker",
                             sandbox_slot=slot)
        hidden = spawn_worker(job, {}, 120.0, tmp_path / "hidden.log", module="tests.fixtures.gpu_probe_worker",
                              sandbox_slot=slot, hide_gpus=True)
    assert shown.lines and shown.lines[-1]["seen"]["cuda"]["available"], (tmp_path / "shown.log").read_text()
    assert hidden.lines, (tmp_path / "hidden.log").read_text()
    assert hidden.lines[-1]["seen"]["cuda"] == {"available": False, "devices": 0}


def test_a_build_sees_no_gpu_device(tmp_path, monkeypatch):
    """spawn_worker(hide_gpus=True), as every build runs: each node GPU_DEVICES names reads as /dev/null and each
    folder as empty, so a build's code cannot run work on a GPU where another candidate is being timed."""
    devices = Path(tempfile.mkdtemp(prefix="harness-test-gpu-", dir="/tmp"))
    try:
        os.chmod(devices, 0o755)
        (devices / "nvidiactl").write_text("the driver")
        (devices / "nvidia0").write_text("the GPU")
        (devices / "nvidia-caps").mkdir(mode=0o755)
        (devices / "nvidia-caps" / "nvidia-cap1").write_text("a capability")
        for node in (devices / "nvidiactl", devices / "nvidia0", devices / "nvidia-caps" / "nvidia-cap1"):
            node.chmod(0o644)
        monkeypatch.setattr(spawn, "GPU_DEVICES", str(devices / "nvidia*"))
        paths = [str(devices / "nvidiactl"), str(devices / "nvidia0"), str(devices / "nvidia-caps")]
        job = {"paths": paths}
        with sandbox_slot(0, BUILD_SLOTS) as slot:
            shown = spawn_worker(job, {}, 60.0, tmp_path / "shown.log", module="tests.fixtures.gpu_probe_worker",
                                 sandbox_slot=slot)
            hidden = spawn_worker(job, {}, 60.0, tmp_path / "hidden.log", module="tests.fixtures.gpu_probe_worker",
                                  sandbox_slot=slot, hide_gpus=True)
        assert shown.lines, (tmp_path / "shown.log").read_text()
        assert shown.lines[-1]["seen"] == {paths[0]: "the driver", paths[1]: "the GPU", paths[2]: ["nvidia-cap1"]}
        assert hidden.lines, (tmp_path / "hidden.log").read_text()
        assert hidden.lines[-1]["seen"] == {paths[0]: "", paths[1]: "", paths[2]: []}
    finally:
        shutil.rmtree(devices, ignore_errors=True)


@pytest.mark.skipif(not can_drop_privileges(), reason="needs root to confine the worker to a user of its own")
def test_a_confined_worker_cannot_widen_its_cores(tmp_path):
    """A build's code keeps the cores it was started on (confine's seccomp filter): an affinity alone it could
    widen, back onto a GPU lane's cores (spawn.plan_cores). The same code unconfined moves."""
    free = spawn_worker({}, {}, 60.0, tmp_path / "free.log", module="tests.fixtures.affinity_worker")
    assert free.lines and free.lines[-1] == {"os": "moved", "syscall": "moved"}, (tmp_path / "free.log").read_text()
    with sandbox_slot(0, BUILD_SLOTS) as slot:
        confined = spawn_worker({}, {}, 60.0, tmp_path / "confined.log", module="tests.fixtures.affinity_worker",
                                sandbox_slot=slot, niceness=BUILD_NICENESS, hide_gpus=True)
    assert confined.lines, (tmp_path / "confined.log").read_text()
    assert confined.lines[-1] == {"os": "Operation not permitted", "syscall": "Operation not permitted"}
