"""Fault injection: one small candidate per failure mode in tests/faults/, each must end with its status.

Every fixture opens with comment lines the tests read (the header ends at the first other line):

    # expect: STATUS[|STATUS]    required: the row's status (either one, where several are right)
    # reason: TEXT[|TEXT]        optional: the row's reason contains one of these (case-insensitive)
    # check: RULE                optional: the rule or check ID behind `rejected` / `integrity`
    # One line saying what the fixture does.

`cpu_*.py` fixtures (cpp_sources only) all run in ONE harness run together with the honest
tests/fixtures/cpu_scalar.py, which must still end `ok`; `cuda_*.py` fixtures run in one CUDA
run (GPU machines only) with an honest CUDA candidate evaluated after the illegal memory access.
A new fixture is picked up and asserted automatically.

The CPU fixtures include two light torch headers instead of the implicit <torch/extension.h>
(`no_implicit_headers=True`): a compile takes ~5 s of CPU instead of ~30 s, which keeps this file
within its few minutes on a 2-core machine.
"""
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.records import STATUSES
from tests.conftest import FIXTURES, REPO, harness_cli
from tests.processes import kill_pids, leftovers

FAULTS = Path(__file__).resolve().parent / "faults"
HONEST_CUDA = REPO / "tests" / "adversarial" / "honest" / "cuda_basic.py"
PROBLEM = "problems/scalar_gated_delta.yaml"
HEADER = re.compile(r"#\s*(expect|reason|check)\s*:\s*(.*?)\s*$")

# Small limits so that hangs end quickly, yet long enough for an honest candidate on a loaded
# 2-core machine, where `make test` runs another test file beside this one: a light-header compile
# (cpu_scalar) takes 10-30 s there, and a cached candidate's evaluation (fresh Python, torch import,
# verify, a short timing) 3-10 s. A full <torch/extension.h> compile took 30-60 s alone and over 90 s
# beside another file's builds. On a machine half as fast per core (2026-12-02), the honest cpu_scalar,
# evaluated while the other faults compiled and the judge corpus compiled beside it, passed 30 s and was
# killed: the evaluation limit is 60 s.
CPU_CONFIG = """\
build:
  cache_dir: {cache}
  time_limit_s: 90
  overlap_evaluation: always   # crashes and hangs evaluated while other candidates still compile
evaluate:
  time_limit_s: 60
timing:
  budget_s: 0.3
  warmup_ms: 5
"""
CUDA_CONFIG = """\
build:
  cache_dir: {cache}
  time_limit_s: 600
  overlap_evaluation: never   # evaluated in the order given: cuda_basic may be cached from another test and built first
evaluate:
  time_limit_s: 60
timing:
  budget_s: 0.3
  warmup_ms: 5
baselines:
  graph: false
  compile: false
"""


def header(path: Path) -> dict[str, list[str]]:
    """The fixture's `# key: value` lines, values split on `|`."""
    fields: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        match = HEADER.match(line)
        if match:
            fields[match.group(1)] = [part.strip() for part in match.group(2).split("|") if part.strip()]
    return fields


CPU_FAULTS = sorted(FAULTS.glob("cpu_*.py"))
CUDA_FAULTS = sorted(FAULTS.glob("cuda_*.py"))


@dataclass
class FaultRun:
    rows: dict
    records: list
    stdout: str
    leftovers: dict   # fixture stem -> {pid: command} still running after the run (then killed)


def run_faults(tmp_path_factory, build_cache, template: str, device: str, candidates: list[Path], *extra: str):
    config = tmp_path_factory.mktemp("faults-config") / f"faults-{device}.yaml"
    config.write_text(template.format(cache=build_cache))
    results = tmp_path_factory.mktemp(f"faults-{device}")
    done = harness_cli("run", PROBLEM, "--device", device, "--results", str(results), "--config", str(config),
                       *extra, "--candidates", *map(str, candidates), timeout=1200)
    # whatever a killed candidate left running: looked at now, then ended so it cannot slow later tests (a run
    # beside this one, in another pytest worker, is alive and waited for: not abandoned, not counted)
    left = {p.stem: leftovers(f"{build_cache}/{p.stem}-") | leftovers("harness.sandbox", p.stem) for p in candidates}
    left["(sandbox users)"] = leftovers(sandbox_users=True)
    kill_pids(pid for found in left.values() for pid in found)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    folder = results / "scalar_gated_delta"
    document = json.loads((folder / "leaderboard.json").read_text())
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]
    return FaultRun({row["candidate"]: row for row in document["rows"]}, records, done.stdout, left)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory, build_cache) -> FaultRun:
    # Builds and evaluations follow this order. Hangs first: a compile that never ends then holds one
    # build worker while the others build, rather than running alone at the end. cpu_scalar (the
    # honest candidate) is built early and evaluated after the crashes and hangs.
    slow = [p for p in CPU_FAULTS if "timeout" in header(p)["expect"]]
    crashers = [p for p in CPU_FAULTS if p not in slow and "crashed" in header(p)["expect"]]
    rest = [p for p in CPU_FAULTS if p not in slow and p not in crashers]
    candidates = slow + crashers + [FIXTURES / "cpu_scalar.py"] + rest
    return run_faults(tmp_path_factory, build_cache, CPU_CONFIG, "cpu", candidates)


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory, build_cache) -> FaultRun:
    illegal = [p for p in CUDA_FAULTS if p.stem == "cuda_illegal_address"]
    hangs = [p for p in CUDA_FAULTS if "timeout" in header(p)["expect"]]
    others = [p for p in CUDA_FAULTS if p not in illegal and p not in hangs]
    # the honest candidate right after the context-destroying faults; hangs last (a killed
    # process's spinning kernel may hold the GPU for a moment)
    candidates = illegal + others + [HONEST_CUDA] + hangs
    return run_faults(tmp_path_factory, build_cache, CUDA_CONFIG, "cuda", candidates, "--shapes", "seed")


# --- the fixtures themselves (no compile: fast) -----------------------------------------------------------

def test_fixture_headers_are_valid():
    files = sorted(FAULTS.glob("*.py"))
    assert len(CPU_FAULTS) >= 12 and len(CUDA_FAULTS) >= 4, "the fault fixtures are missing"
    for path in files:
        assert path.name.startswith(("cpu_", "cuda_")), f"{path.name}: name it cpu_*.py or cuda_*.py"
        fields = header(path)
        assert fields.get("expect"), f"{path.name}: first line must be `# expect: STATUS`"
        assert path.read_text().startswith("# expect:"), f"{path.name}: first line must be `# expect: STATUS`"
        unknown = set(fields["expect"]) - set(STATUSES)
        assert not unknown, f"{path.name}: unknown status {unknown}"
        uses_cuda = "cuda_sources" in path.read_text()
        assert uses_cuda == path.name.startswith("cuda_"), f"{path.name}: cpu_ fixtures pass cpp_sources only"


def test_fixtures_pass_or_fail_the_static_check_as_expected():
    """A fault fixture must be honest apart from its fault: only `rejected` ones may be rejected."""
    from harness.problem import load_problem
    from harness.rules import ERROR, check_source, is_accepted, parse_candidate

    reference = load_problem(REPO / PROBLEM).reference_module
    for path in CPU_FAULTS + CUDA_FAULTS:
        findings = check_source(parse_candidate(str(path), path.read_text(encoding="utf-8"), reference))
        errors = [f.rule for f in findings if f.severity == ERROR]
        if header(path)["expect"] == ["rejected"]:
            assert not is_accepted(findings), path.name
            if "check" in header(path):
                assert errors[0] == header(path)["check"][0], (path.name, errors)
        else:
            assert is_accepted(findings), (path.name, errors)


# --- one CPU run with every CPU fault --------------------------------------------------------------------

def check_row(row: dict, path: Path) -> None:
    fields = header(path)
    assert row["status"] in fields["expect"], f"{path.name}: {row['status']} ({row['reason']})"
    if "reason" in fields:
        assert any(part.lower() in row["reason"].lower() for part in fields["reason"]), \
            f"{path.name}: reason {row['reason']!r} names none of {fields['reason']}"
    if "check" in fields:
        assert row["check"] == fields["check"][0], f"{path.name}: check {row['check']!r}"
    if row["status"] != "ok":
        assert row["rank"] is None and row["geomean_speedup"] is None, path.name


@pytest.mark.slow
@pytest.mark.parametrize("path", CPU_FAULTS, ids=lambda p: p.stem)
def test_cpu_fault_ends_with_expected_status(cpu_run, path):
    rows = cpu_run.rows
    assert path.stem in rows, f"{path.stem} has no row"
    check_row(rows[path.stem], path)


@pytest.mark.slow
def test_honest_candidate_in_the_same_run_stays_ok(cpu_run):
    rows, records = cpu_run.rows, cpu_run.records
    for name in ("cpu_scalar", "ref:eager"):
        row = rows[name]
        assert row["status"] == "ok", (name, row["reason"])
        assert row["shapes"]["seed"]["time_us"] > 0 and row["max_abs_err"] < 1e-3
    assert rows["cpu_scalar"]["rank"] is not None
    assert "cpu_scalar" in cpu_run.stdout
    order = [r["candidate"] for r in records]
    crashed = [p.stem for p in CPU_FAULTS if rows[p.stem]["status"] in ("crashed", "timeout")
               and rows[p.stem]["reason"].startswith(("sandbox died", "worker died", "evaluation killed"))]
    assert crashed, "no fault crashed or hung a worker"
    assert all(order.index(name) < order.index("cpu_scalar") for name in crashed), \
        "cpu_scalar was meant to be evaluated after the crashes and hangs"


@pytest.mark.slow
def test_one_record_per_candidate_and_shape(cpu_run):
    rows, records = cpu_run.rows, cpu_run.records
    keys = [(r["candidate"], r["shape"]) for r in records]
    assert len(keys) == len(set(keys)), "a (candidate, shape) was recorded twice"
    assert {p.stem for p in CPU_FAULTS} | {"cpu_scalar", "ref:eager"} <= {r["candidate"] for r in records}
    assert set(rows) == {r["candidate"] for r in records}
    for record in records:
        assert record["status"] in STATUSES


@pytest.mark.slow
def test_hung_forward_is_killed_with_its_worker(cpu_run):
    assert cpu_run.rows["cpu_forward_hang"]["status"] == "timeout"
    assert not cpu_run.leftovers["cpu_forward_hang"], f"still running after the run: {cpu_run.leftovers}"
    assert not any(cpu_run.leftovers[p.stem] for p in CPU_FAULTS if p.stem != "cpu_compile_hang"), cpu_run.leftovers
    assert not cpu_run.leftovers["(sandbox users)"], cpu_run.leftovers


@pytest.mark.slow
def test_hung_compile_is_killed_with_its_compiler(cpu_run):
    assert cpu_run.rows["cpu_compile_hang"]["status"] == "timeout"
    assert not cpu_run.leftovers["cpu_compile_hang"], f"still running after the run: {cpu_run.leftovers}"


# --- one CUDA run with every CUDA fault (GPU machines only) ----------------------------------------------

@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
@pytest.mark.parametrize("path", CUDA_FAULTS, ids=lambda p: p.stem)
def test_cuda_fault_ends_with_expected_status(cuda_run, path):
    rows = cuda_run.rows
    assert path.stem in rows, f"{path.stem} has no row"
    check_row(rows[path.stem], path)


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
def test_cuda_candidate_after_illegal_access_stays_ok(cuda_run):
    """The CUDA context is per process: a kernel that destroyed its own does not touch the next one's."""
    rows, records = cuda_run.rows, cuda_run.records
    assert rows["cuda_illegal_address"]["status"] in ("runtime_error", "crashed")
    assert rows["cuda_basic"]["status"] == "ok", rows["cuda_basic"]["reason"]
    assert rows["ref:eager"]["status"] == "ok", rows["ref:eager"]["reason"]
    order = [r["candidate"] for r in records]
    assert order.index("cuda_illegal_address") < order.index("cuda_basic")
    keys = [(r["candidate"], r["shape"]) for r in records]
    assert len(keys) == len(set(keys))
