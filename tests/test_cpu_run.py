"""What a CPU run tells its user about the machine it ran on."""
import dataclasses
import json

from harness import env as env_module
from harness import runner
from harness.config import load_config
from harness.discovery import discover
from harness.env import MachineLoad, collect_env
from harness.problem import load_problem
from tests.conftest import FIXTURES, REPO


def test_a_machine_is_busy_past_a_quarter_of_its_cores_and_half_of_one():
    assert MachineLoad(1.0, 2).busy and not MachineLoad(0.4, 2).busy
    assert not MachineLoad(3.0, 16).busy and MachineLoad(5.0, 16).busy


def test_machine_load_reads_proc_stat():
    load = env_module.machine_load(0.05)
    assert load is not None and 0.0 <= load.busy_cores <= load.cores


class Notes:
    def __init__(self):
        self.notes = []

    def phase(self, name, total, *rest):
        pass

    def advance(self, name, description, *outcome):
        pass

    def note(self, message):
        self.notes.append(message)


def cpu_run_notes(tmp_path, monkeypatch, load: MachineLoad) -> tuple[list[str], dict]:
    monkeypatch.setattr(runner, "machine_load", lambda: load)
    monkeypatch.setattr(runner.Run, "build_and_evaluate", lambda self, baselines, candidates, overlap: None)
    options = runner.RunOptions(load_problem(REPO / "problems" / "scalar_gated_delta.yaml"), load_config(None),
                                dataclasses.replace(collect_env("cpu"), device="cpu"),
                                discover([FIXTURES / "cpu_scalar.py"]), ["seed"], tmp_path)
    reporter = Notes()
    runner.run(options, reporter)
    meta = json.loads((tmp_path / "scalar_gated_delta" / "leaderboard.json").read_text())
    return reporter.notes, meta


def test_a_busy_machine_is_named_before_cpu_timings_and_recorded(tmp_path, monkeypatch):
    notes, meta = cpu_run_notes(tmp_path, monkeypatch, MachineLoad(1.9, 2))
    assert any("busy" in n and "--fresh" in n for n in notes), notes
    assert meta["machine_load_at_start"] == {"busy_cores": 1.9, "cores": 2}
    assert meta["timing_method"] == "cpu"


def test_a_quiet_machine_gets_no_warning(tmp_path, monkeypatch):
    notes, _ = cpu_run_notes(tmp_path, monkeypatch, MachineLoad(0.1, 2))
    assert not any("busy" in n for n in notes), notes


def test_cpu_leaderboards_speak_of_the_cpu_not_a_gpu():
    from harness.leaderboard import to_markdown

    cpu = collect_env("cpu").to_json() | {"device": "cpu", "cpu": "Some CPU", "cpu_count": 2, "torch_cuda": "13.0"}
    text = to_markdown("p", cpu, [], ["seed"])
    assert "Device: CPU, Some CPU (2 cores)" in text
    assert "driver" not in text and "CUDA" not in text and "synchronize" not in text
    gpu = cpu | {"device": "cuda", "device_name": "NVIDIA H200", "driver": "580"}
    assert "driver 580" in to_markdown("p", gpu, [], ["seed"])


def pinning(monkeypatch, available, device="cpu", pin="auto"):
    from types import SimpleNamespace

    from harness import judge

    pinned = {}
    monkeypatch.setattr(judge.os, "sched_getaffinity", lambda pid: set(available))
    monkeypatch.setattr(judge.os, "sched_setaffinity", lambda pid, cores: pinned.setdefault(pid, set(cores)))
    stub = SimpleNamespace(job=SimpleNamespace(device=device), settings={"cpu_pin": pin})
    return judge.Judge.sandbox_cores(stub), pinned


def test_cpu_sandbox_is_pinned_off_the_judges_core_on_four_cores_or_more(monkeypatch):
    cores, pinned = pinning(monkeypatch, range(8))
    assert cores == set(range(1, 8)) and pinned == {0: {0}}
    assert pinning(monkeypatch, range(2))[0] is None           # two cores: a candidate would lose half of them
    assert pinning(monkeypatch, range(8), device="cuda")[0] is None
    assert pinning(monkeypatch, range(8), pin="off")[0] is None
