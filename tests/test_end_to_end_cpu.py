"""A real CPU run: C++ candidates compiled with load_inline, verified, timed, tabulated; then resumed."""
import json

import pytest

from tests.conftest import FIXTURES, REPO, harness_cli

pytestmark = pytest.mark.slow

CANDIDATES = ["cpu_scalar.py", "cpu_zeros.py", "cpu_compile_error.py", "no_model_new.py"]
CUDA_CANDIDATE = "adversarial/honest/cuda_basic.py"   # relative to tests/: checked, never compiled on a CPU run


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory, cache_config):
    results = tmp_path_factory.mktemp("results")
    # run from tests/ with paths relative to it: workers start in the repository root, and must still find them
    done = harness_cli("run", "../problems/scalar_gated_delta.yaml", "--device", "cpu", "--results", str(results),
                       "--config", str(cache_config), "--candidates", *[f"fixtures/{c}" for c in CANDIDATES],
                       CUDA_CANDIDATE, cwd=REPO / "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    return results / "scalar_gated_delta", done


def rows(folder):
    return {row["candidate"]: row for row in json.loads((folder / "leaderboard.json").read_text())["rows"]}


def test_every_candidate_gets_its_status(cpu_run):
    folder, _ = cpu_run
    table = rows(folder)
    assert table["cpu_scalar"]["status"] == "ok"
    assert table["cpu_zeros"]["status"] == "wrong"
    assert table["cpu_compile_error"]["status"] == "compile_error"
    assert "this_method_does_not_exist" in table["cpu_compile_error"]["reason"]
    assert table["no_model_new"]["status"] == "rejected"
    assert table["no_model_new"]["check"] in ("S002", "S003")
    assert table["ref:eager"]["status"] == "ok"


def test_cuda_only_baselines_are_skipped_without_a_judge(cpu_run):
    """ref:graph and ref:compile cannot run on a CPU: the runner says so itself, where a judge process (and its
    torch import, seconds on this machine) once started only to say `skipped`."""
    folder, _ = cpu_run
    table = rows(folder)
    for baseline in ("ref:graph", "ref:compile"):
        assert table[baseline]["status"] == "skipped" and "CUDA-only" in table[baseline]["reason"], table[baseline]
    logs = sorted(path.name for path in (folder / "logs").iterdir())
    assert any(name.startswith("ref_eager-") for name in logs), logs
    assert not any(name.startswith(("ref_graph-", "ref_compile-")) for name in logs), logs


def test_cuda_candidate_is_checked_but_not_compiled_without_a_gpu(cpu_run):
    """Compiling CUDA where it cannot run cost minutes per candidate; `run --build-only` still compiles it."""
    folder, _ = cpu_run
    row = rows(folder)["cuda_basic"]
    assert row["status"] == "skipped" and "--build-only" in row["reason"], row
    assert row["compile_s"] is None
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    assert {r["stage"] for r in records if r["candidate"] == "cuda_basic"} == {"check"}


def test_ok_row_has_times_speedup_and_error(cpu_run):
    folder, _ = cpu_run
    row = rows(folder)["cpu_scalar"]
    seed = row["shapes"]["seed"]
    assert seed["time_us"] > 0 and seed["speedup"] > 0
    assert row["geomean_speedup"] == pytest.approx(seed["speedup"])
    assert 0 <= row["max_abs_err"] < 1e-3
    assert row["compile_s"] > 0 and len(row["source_hash"]) == 12
    assert row["rank"] >= 1


def test_leaderboard_files_and_records(cpu_run):
    folder, done = cpu_run
    document = json.loads((folder / "leaderboard.json").read_text())
    assert document["problem"] == "scalar_gated_delta"
    for key in ("device_name", "torch", "harness_commit"):
        assert key in document["env"]
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    assert all(r["schema_version"] == 2 and len(r["signature"]) == 64 for r in records), "signed by the runner"
    assert all(r["confinement"].get("private_tmp") for r in records if r["status"] == "ok"), "what was in force"
    assert len({(r["candidate"], r["shape"]) for r in records}) == len(records), "one record per (candidate, shape)"
    assert {"cpu_scalar", "cpu_zeros", "ref:eager"} <= {r["candidate"] for r in records}
    csv = (folder / "leaderboard.csv").read_text()
    assert csv.startswith("rank,candidate,kind,status")
    markdown = (folder / "leaderboard.md").read_text()
    assert "| cpu_scalar |" in markdown or "cpu_scalar" in markdown
    assert "cpu_scalar" in done.stdout


def test_second_run_reuses_records_and_builds(cpu_run, cache_config):
    folder, _ = cpu_run
    before = (folder / "records.jsonl").read_text()
    done = harness_cli("run", "problems/scalar_gated_delta.yaml", "--device", "cpu", "--results", str(folder.parent),
                       "--config", str(cache_config), "--candidates", *[str(FIXTURES / c) for c in CANDIDATES],
                       str(REPO / "tests" / CUDA_CANDIDATE))
    assert done.returncode == 0, done.stderr
    assert (folder / "records.jsonl").read_text() == before, "a resumed run with nothing left adds no records"
    assert "0 new records" in done.stdout


def test_report_rebuilds_the_same_leaderboard_from_records(cpu_run):
    folder, _ = cpu_run
    before = json.loads((folder / "leaderboard.json").read_text())["rows"]
    done = harness_cli("report", "problems/scalar_gated_delta.yaml", "--results", str(folder.parent))
    assert done.returncode == 0, done.stderr
    assert json.loads((folder / "leaderboard.json").read_text())["rows"] == before


def test_problem_with_a_constant_reference_is_refused(tmp_path, cache_config):
    """A reference whose output ignores its inputs would let an all-zeros candidate pass: the run stops."""
    (tmp_path / "flat.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, q, k, v, gate, beta):\n        return torch.zeros_like(q)\n")
    spec = (REPO / "problems" / "scalar_gated_delta.yaml").read_text()
    (tmp_path / "flat.yaml").write_text(spec.replace("name: scalar_gated_delta", "name: flat")
                                        .replace("reference: scalar_gated_delta.py", "reference: flat.py"))
    results = tmp_path / "results"
    done = harness_cli("run", str(tmp_path / "flat.yaml"), "--device", "cpu", "--results", str(results),
                       "--config", str(cache_config), "--candidates", str(FIXTURES / "cpu_scalar.py"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "near-constant" in done.stderr and "Traceback" not in done.stderr
    records = results / "flat" / "records.jsonl"
    kept = {json.loads(line)["candidate"] for line in records.read_text().splitlines()} if records.exists() else set()
    assert kept <= {"ref:eager"}, kept
    assert not (results / "flat" / "leaderboard.json").exists()


def test_a_prestarted_judge_does_its_host_work_then_waits_for_its_turn(tmp_path, cache_config):
    """evaluate.prestart (CUDA runs by default; forced here): the next candidate's judge and sandbox start while
    the current one is evaluated and wait at the gate; the statuses are those of a run without it."""
    config = tmp_path / "prestart.yaml"
    config.write_text(cache_config.read_text() + "evaluate:\n  prestart: always\n")
    results = tmp_path / "results"
    done = harness_cli("run", "problems/scalar_gated_delta.yaml", "--device", "cpu", "--results", str(results),
                       "--config", str(config), "--candidates", str(FIXTURES / "cpu_scalar.py"),
                       str(REPO / "candidates" / "scalar_gated_delta" / "cpu_loops.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (results / "scalar_gated_delta" / "records.jsonl").read_text().splitlines()]
    setups = {r["candidate"]: r["timing"]["judge_setup_s"] for r in records if r["kind"] == "candidate"}
    assert {r["candidate"]: r["status"] for r in records if r["kind"] == "candidate"} == \
        {"cpu_scalar": "ok", "cpu_loops": "ok"}
    for setup in setups.values():   # the sandbox was started and ready before the gate; the arena mapped after it
        assert setup["sandbox_start"] > 0 and "waiting_for_gpu" in setup and setup["sandbox_arena"] >= 0
        # the judge imported torch and the problem while its sandbox, started first, imported torch too
        assert list(setup)[:4] == ["process_start", "sandbox_start", "judge_init", "sandbox_ready"], setup
    # one of the two was started while the other was evaluated, and waited at its gate
    assert max(setup["waiting_for_gpu"] for setup in setups.values()) > 0.2, setups
