"""The judge's corpus: cheats the judge alone must catch, and unusual honest candidates it must pass.

tests/adversarial/judge/ holds cheats written against the judge and sandbox design (judge.py, sandbox.py):
patching the sandbox's clocks, functions or reply pipe, reading the judge, forging records, daemons,
work after return, caches, calls routed around forward, peeking at the arena, hiding CPU time.
tests/adversarial/judge_honest/ holds honest candidates that look unusual (OpenMP, at::parallel_for,
cudaMallocAsync scratch, constant tables, a lazily built extension, ...), which must end ok.

Every file opens with two comment lines:

    # expect: STATUS[ or STATUS]   the statuses that count as caught (`ok` for the honest folder)
    # One sentence: what it does and which defence should catch it.

The cpu_* files of both folders (with tests/fixtures/cpu_scalar.py) run in ONE CPU harness run with the
static rules set to warnings only (`check: {static: warn}`), so nothing is rejected before the judge
sees it; the cuda_* files run in one CUDA run at seed and medium (GPU machines only). After each run:
- every cheat's row is not ok, and its status is one its header names (a cheat whose header also names
  `ok without gain` may end ok where its credited time is no better than the honest loop's); every honest row
  is ok;
- no process of a sandbox user (uids 61000-61063) survives the run, nor anything naming this run's build
  cache, results folder or forged files. A harness run beside this one (another pytest worker's) holds
  other sandbox users at the same time; its processes still hang from its live judges and build workers,
  so they are not counted (tests/processes.py);
- records.jsonl holds only records the runner wrote (signed, of a candidate in the run, none forged);
- no file a cheat tried to forge (every forger names its files judge_corpus_forged_<candidate>...)
  exists, inside or outside the results folder.
A new file in either folder is picked up and asserted automatically.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.records import STATUSES
from tests.conftest import FIXTURES, REPO, harness_cli
from tests.processes import SANDBOX_UIDS, abandoned, kill_pids, process_table

ADVERSARIAL = Path(__file__).resolve().parent / "adversarial"
CHEATS = ADVERSARIAL / "judge"
HONEST = ADVERSARIAL / "judge_honest"
PROBLEM = "scalar_gated_delta"
PROBLEM_YAML = f"problems/{PROBLEM}.yaml"
FORGED_MARK = "judge_corpus_forged"          # the prefix of every file a forging cheat tries to create
BASELINES = {"ref:eager", "ref:graph", "ref:compile"}
EXPECT = re.compile(r"# expect: (\S.*)$")
# A cheat whose trick only pays with an idle core may name this too: where it gained nothing (its credited time at
# every shape no better than the honest loop's in the same run) an ok row is a true record: it credits no gain
NO_GAIN = "ok without gain"

CHEAT_CPU = sorted(CHEATS.glob("cpu_*.py"))
CHEAT_CUDA = sorted(CHEATS.glob("cuda_*.py"))
HONEST_CPU = sorted(HONEST.glob("cpu_*.py"))
HONEST_CUDA = sorted(HONEST.glob("cuda_*.py"))
HONEST_FIXTURE = FIXTURES / "cpu_scalar.py"
# the CUDA run also holds the plainest honest kernel and the fastest shipped one
HONEST_CUDA_EXTRA = [ADVERSARIAL / "honest" / "cuda_basic.py", REPO / "candidates" / PROBLEM / "v20_ws.py"]

CONFIG = """\
build:
  cache_dir: {cache}
  time_limit_s: 900
check:
  static: warn
judge:
  receipts: always    # the CPU's bursts too carry receipts, so cpu_forge_receipts has something to forge
evaluate:
  time_limit_s: 60
timing:
  budget_s: 0.2
  warmup_ms: 5
  min_iters: 5
baselines:
  graph: false
  compile: false
"""


def expected(path: Path) -> set[str]:
    """The statuses the file's first line names."""
    match = EXPECT.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.name}: first line must be `# expect: STATUS[ or STATUS]`"
    return {part.strip() for part in match.group(1).split(" or ")}


# --- what a run leaves behind --------------------------------------------------------------------------

def surviving_processes(before: set[int], *needles: str) -> dict[int, str]:
    """What this run left running: processes of a sandbox user, or whose command line or environment names one of
    `needles`, that nothing live waits for any more (a daemon, a helper: tests/processes.py). Another harness run
    on the machine uses the same sandbox users: its processes still hang from its judges and build workers, so
    they are not counted; nor is anything that was running before this run started."""
    table = process_table()
    found = {}
    for pid, process in table.items():
        if pid in before or pid == os.getpid() or not abandoned(pid, table):
            continue
        if process.uid in SANDBOX_UIDS or any(needle.encode() in process.text for needle in needles):
            found[pid] = f"uid {process.uid}: {process.command[:160]}"
    return found


def forged_files(*roots: Path) -> list[Path]:
    """Every file a forging cheat managed to create under these folders (or in them, for big ones)."""
    found = []
    for root in roots:
        if not root.is_dir():
            continue
        shallow = root in (Path("/tmp"), Path("/dev/shm"))
        paths = root.glob(f"{FORGED_MARK}*") if shallow else root.rglob(f"{FORGED_MARK}*")
        found += [path for path in paths if path.is_file()]
    return sorted(set(found))


@dataclass
class CorpusRun:
    rows: dict
    records: list
    results: Path
    survivors: dict
    forged: list
    output: str


def run_corpus(tmp_path_factory, build_cache: Path, device: str, files: list[Path], *extra: str) -> CorpusRun:
    config = tmp_path_factory.mktemp("judge-corpus-config") / f"judge-corpus-{device}.yaml"
    config.write_text(CONFIG.format(cache=build_cache))
    results = tmp_path_factory.mktemp(f"judge-corpus-{device}")
    before = set(process_table())
    done = harness_cli("run", PROBLEM_YAML, "--device", device, "--results", str(results), "--config", str(config),
                       *extra, "--candidates", *map(str, files), timeout=3600)
    # looked at at once, before a daemon could finish its work, then ended so it cannot touch later tests
    survivors = surviving_processes(before, FORGED_MARK, str(build_cache), str(results))
    kill_pids(survivors)
    forged = forged_files(results, REPO / "results", REPO / ".cache" / "harness", REPO / "candidates",
                          build_cache, Path("/tmp"), Path("/dev/shm"))
    for path in forged:
        path.unlink(missing_ok=True)   # a planted candidate must not reach the next `make run`
    output = done.stdout[-4000:] + done.stderr[-4000:]
    assert done.returncode == 0, output
    folder = results / PROBLEM
    document = json.loads((folder / "leaderboard.json").read_text())
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]
    return CorpusRun({row["candidate"]: row for row in document["rows"]}, records, results, survivors, forged, output)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory, build_cache) -> CorpusRun:
    return run_corpus(tmp_path_factory, build_cache, "cpu", [*CHEAT_CPU, *HONEST_CPU, HONEST_FIXTURE])


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory, build_cache) -> CorpusRun:
    return run_corpus(tmp_path_factory, build_cache, "cuda", [*CHEAT_CUDA, *HONEST_CUDA, *HONEST_CUDA_EXTRA],
                      "--shapes", "seed,medium")


# --- the files themselves (fast) -----------------------------------------------------------------------

def test_headers_are_valid():
    for path in sorted(CHEATS.glob("*.py")) + sorted(HONEST.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert path.name.startswith(("cpu_", "cuda_")), f"{path.name}: name it cpu_*.py or cuda_*.py"
        statuses = expected(path) - {NO_GAIN}
        assert statuses <= set(STATUSES), f"{path.name}: unknown status {statuses - set(STATUSES)}"
        assert path.parent == CHEATS or NO_GAIN not in expected(path), f"{path.name}: {NO_GAIN!r} is for cheats"
        if path.parent == HONEST:
            assert statuses == {"ok"}, f"{path.name}: an honest candidate expects exactly ok"
        else:
            assert "ok" not in statuses and "skipped" not in statuses, f"{path.name}: a cheat must be caught"
            assert "rejected" not in statuses, f"{path.name}: the corpus runs with static rules as warnings only"
        assert len(lines) > 1 and lines[1].startswith("# ") and len(lines[1]) > 40, \
            f"{path.name}: second line must say what it does and which defence catches it"
        uses_cuda = "cuda_sources" in path.read_text(encoding="utf-8")
        assert uses_cuda == path.name.startswith("cuda_"), f"{path.name}: cpu_ files pass cpp_sources only"


def test_corpus_size():
    assert len(CHEAT_CPU) + len(CHEAT_CUDA) >= 20, "the judge corpus needs at least 20 cheats"
    assert len(HONEST_CPU) + len(HONEST_CUDA) >= 8, "the judge corpus needs at least 8 honest candidates"
    assert CHEAT_CPU and CHEAT_CUDA and HONEST_CPU and HONEST_CUDA
    stems = [p.stem for p in CHEAT_CPU + CHEAT_CUDA + HONEST_CPU + HONEST_CUDA]
    assert len(stems) == len(set(stems)), "two corpus files share a name: their rows would collide"


# --- the checks one run allows --------------------------------------------------------------------------

def check_cheat(run: CorpusRun, path: Path) -> None:
    assert path.stem in run.rows, f"{path.stem} has no row"
    row = run.rows[path.stem]
    if row["status"] == "ok" and NO_GAIN in expected(path):
        honest = run.rows[HONEST_FIXTURE.stem]["shapes"]   # the same recurrence, honestly
        for shape, cell in row["shapes"].items():
            assert cell["time_us"] >= honest[shape]["ci_low_us"], (
                f"{path.stem}: ok and credited {cell['time_us']:.1f} us at {shape}, under the honest loop's "
                f"{honest[shape]['ci_low_us']:.1f} us (its interval's low end): a cheat credited a gain")
        return
    assert row["status"] != "ok", f"{path.stem}: not caught ({row.get('reason')})"
    assert row["status"] in expected(path), f"{path.stem}: {row['status']} ({row.get('reason')})"
    assert row["rank"] is None, path.stem


def check_honest(run: CorpusRun, path: Path) -> None:
    assert path.stem in run.rows, f"{path.stem} has no row"
    row = run.rows[path.stem]
    assert row["status"] == "ok", f"false positive on an honest candidate {path.stem}: {row.get('reason')}"
    assert row["rank"] is not None, path.stem


def check_no_survivors(run: CorpusRun) -> None:
    assert not run.survivors, f"still running after the run (now killed): {run.survivors}"


def check_records(run: CorpusRun, files: list[Path]) -> None:
    from harness import signing

    known = {p.stem for p in files} | BASELINES
    try:
        key = signing.record_key(signing.DEFAULT_KEY_PATH) if signing.DEFAULT_KEY_PATH.exists() else None
    except (signing.RecordKeyError, OSError):
        key = None
    assert run.records, "no records"
    for number, record in enumerate(run.records, 1):
        where = f"records.jsonl:{number} ({record.get('candidate')})"
        assert isinstance(record.get("signature"), str) and record["signature"], f"{where}: unsigned"
        assert record.get("candidate") in known, f"{where}: a candidate that was not in the run"
        assert not any(FORGED_MARK in str(value) or "forged" in str(key_) for key_, value in record.items()), \
            f"{where}: a forged record"
        if key is not None:
            assert signing.verify(record, key), f"{where}: signature does not verify with the runner's key"
    keys = [(r["candidate"], r["shape"]) for r in run.records]
    assert len(keys) == len(set(keys)), "a (candidate, shape) was recorded twice"
    assert run.rows.keys() == {r["candidate"] for r in run.records}, "leaderboard rows not derived from the records"


def check_no_forgeries(run: CorpusRun) -> None:
    assert not run.forged, f"files forged by candidates (now deleted): {[str(p) for p in run.forged]}"


# --- the CPU run ------------------------------------------------------------------------------------------

# Cheats the judge does not always catch, with why. Not strict: each is caught in some runs, by noise, so a
# pass says nothing; a row here is a gap to close (README, "What the cross-check can and cannot bound").
KNOWN_GAPS = {
    # returns a lazy tensor subclass (its D102 claim hidden by patching the sandbox) whose work runs when the
    # output is copied, out of the claimed call: 1.9-2.2x the claim in CPU time, inside the allowance of
    # 1.25 x at least two cores that drift between the timed calls and the bursts needs on a shared 2-core
    # machine; on a machine of many cores (allowance: the cores the timed calls kept busy, at least two) and
    # when the drift goes its way, it is caught
    "cpu_tensor_subclass_output": "work deferred out of the claimed call by under 2.5x passes the CPU allowance",
}


@pytest.mark.slow
@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_GAPS[p.stem], strict=False))
                                  if p.stem in KNOWN_GAPS else p for p in CHEAT_CPU], ids=lambda p: p.stem)
def test_cpu_cheat_is_caught(cpu_run, path):
    check_cheat(cpu_run, path)


@pytest.mark.slow
@pytest.mark.parametrize("path", [*HONEST_CPU, HONEST_FIXTURE], ids=lambda p: p.stem)
def test_cpu_honest_candidate_is_ok(cpu_run, path):
    check_honest(cpu_run, path)


@pytest.mark.slow
def test_cpu_run_leaves_no_sandbox_process(cpu_run):
    check_no_survivors(cpu_run)


@pytest.mark.slow
def test_cpu_records_are_the_runners(cpu_run):
    check_records(cpu_run, [*CHEAT_CPU, *HONEST_CPU, HONEST_FIXTURE])
    assert cpu_run.rows["ref:eager"]["status"] == "ok", cpu_run.rows["ref:eager"].get("reason")


@pytest.mark.slow
def test_cpu_run_forged_nothing(cpu_run):
    check_no_forgeries(cpu_run)


@pytest.mark.slow
def test_a_verdict_of_the_judges_clock_keeps_its_evidence(cpu_run):
    """A row the judge's clocks caught (D108-D114, after timing) records what they read, as an ok row would:
    the claim, the lone calls, the room allowed, the twin's slowdown, so a reader can weigh the verdict."""
    from harness.judge import EVIDENCE_CHECKS

    caught = [r for r in cpu_run.records if r["status"] == "integrity" and r["check"] in EVIDENCE_CHECKS
              and r["stage"] == "time"]
    assert caught, "no cheat in the corpus was caught by the judge's clocks"
    for record in caught:
        timing = record["timing"]
        assert {"median_us", "judge_us", "judge_latency_us", "judge_lone_allowed_us", "judge_costs_s",
                "judge_lone_us", "judge_lone_overhead_us"} <= set(timing), f"{record['candidate']}: {sorted(timing)}"
        # every lone call is kept, and the latency judged is the quickest less the (scaled) empty call
        lone = timing["judge_lone_us"]
        assert len(lone) == timing["judge_lone_calls"] and all(value > 0 for value in lone), (record["candidate"], lone)
        if "judge_second_look" not in timing:
            expected = max(0.0, min(lone) - timing.get("judge_slowdown", 1.0) * timing["judge_lone_overhead_us"])
            assert abs(expected - timing["judge_latency_us"]) <= 0.5, (record["candidate"], expected, timing)


# --- the CUDA run (GPU machines only) ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
@pytest.mark.parametrize("path", CHEAT_CUDA, ids=lambda p: p.stem)
def test_cuda_cheat_is_caught(cuda_run, path):
    check_cheat(cuda_run, path)


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
@pytest.mark.parametrize("path", [*HONEST_CUDA, *HONEST_CUDA_EXTRA], ids=lambda p: p.stem)
def test_cuda_honest_candidate_is_ok(cuda_run, path):
    check_honest(cuda_run, path)


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
def test_cuda_run_leaves_no_sandbox_process(cuda_run):
    check_no_survivors(cuda_run)


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
def test_cuda_records_are_the_runners(cuda_run):
    check_records(cuda_run, [*CHEAT_CUDA, *HONEST_CUDA, *HONEST_CUDA_EXTRA])


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.nvcc
def test_cuda_run_forged_nothing(cuda_run):
    check_no_forgeries(cuda_run)
