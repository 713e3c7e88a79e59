"""Interruptions: a run killed outright (SIGKILL) mid-evaluation and started again ends with the same
leaderboard as an uninterrupted run, without redoing finished work; Ctrl-C exits 130 and keeps the records.

The builds come from the session's build cache (conftest's `build_cache` / `cache_config`), so a full
`make test` compiles nothing here; run alone, this file first compiles its five candidates.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO, harness_cli
from tests.processes import kill_pids, leftovers
from tests.test_faults import FAULTS

pytestmark = pytest.mark.slow

PROBLEM = "problems/scalar_gated_delta.yaml"
# ok, wrong (numbers), runtime_error (TORCH_CHECK), wrong (dtype), rejected (S001): every kind of row
CANDIDATES = [FIXTURES / "cpu_scalar.py", FIXTURES / "cpu_zeros.py", FAULTS / "cpu_torch_check.py",
              FAULTS / "cpu_wrong_dtype.py", FAULTS / "cpu_syntax_error.py"]
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


def run_args(results: Path, config: Path, candidates: list[Path]) -> list[str]:
    return ["run", PROBLEM, "--device", "cpu", "--results", str(results), "--config", str(config),
            "--candidates", *map(str, candidates)]


def start(args: list[str], log: Path) -> subprocess.Popen:
    """The CLI in a process group of its own, output to a file (a full pipe would block it)."""
    handle = open(log, "w")
    # As from a terminal: a shell without job control starts background jobs with SIGINT ignored, and
    # that would pass down to the CLI here (a CI runner launched that way hung in the Ctrl-C test).
    return subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=handle, stderr=subprocess.STDOUT,
                            cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def read_records(path: Path) -> list[dict]:
    """Every line must be a whole record: a kill must never leave half a line behind."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_until(condition, process: subprocess.Popen, what: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"the run ended (code {process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {timeout:.0f} s"
        time.sleep(0.05)


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(proc.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def command(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def evaluated_candidate(records: list[dict]) -> bool:
    return any(r["kind"] == "candidate" and r["stage"] not in ("check", "build") for r in records)


@dataclass
class Resumed:
    killed: list[dict]        # records on disk right after the SIGKILL
    resumed: list[dict]       # all records after the resumed run (the killed ones first)
    clean: list[dict]         # records of the uninterrupted run
    resumed_rows: list[dict]
    clean_rows: list[dict]
    resumed_stdout: str
    orphans: dict             # pid -> command: the killed run's processes that outlived the SIGKILL


@pytest.fixture(scope="module")
def resumed(tmp_path_factory, cache_config) -> Resumed:
    base = tmp_path_factory.mktemp("resume")
    killed_dir, clean_dir = base / "killed", base / "clean"
    folder = killed_dir / "scalar_gated_delta"
    args = run_args(killed_dir, cache_config, CANDIDATES)

    process = start(args, base / "killed.log")
    try:
        # mid-evaluation: the eager reference and at least one candidate are recorded, the rest is not
        wait_until(lambda: evaluated_candidate(read_records(folder / "records.jsonl")), process,
                   "a candidate was evaluated")
        family = descendants(process.pid)
        assert process.poll() is None, "the run finished before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    time.sleep(0.2)
    orphans = {pid: " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0"))[:200]
               for pid in family if running(pid)}
    kill_pids(orphans)   # harness workers run in sessions of their own: a SIGKILL of the CLI's group misses them
    killed = read_records(folder / "records.jsonl")
    assert not (folder / "leaderboard.json").exists(), "the killed run reached its end"

    done = harness_cli(*args, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    clean = harness_cli(*run_args(clean_dir, cache_config, CANDIDATES), timeout=900)
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    clean_folder = clean_dir / "scalar_gated_delta"
    return Resumed(killed, read_records(folder / "records.jsonl"), read_records(clean_folder / "records.jsonl"),
                   json.loads((folder / "leaderboard.json").read_text())["rows"],
                   json.loads((clean_folder / "leaderboard.json").read_text())["rows"], done.stdout, orphans)


def key(record: dict) -> tuple:
    return record["candidate"], record["shape"]


def test_the_run_was_killed_mid_evaluation(resumed):
    killed_keys = {key(r) for r in resumed.killed}
    assert ("ref:eager", "seed") in killed_keys
    assert evaluated_candidate(resumed.killed)
    assert len(killed_keys) < len({key(r) for r in resumed.clean}), "nothing was left for the resumed run to do"
    assert len({r["run_id"] for r in resumed.killed}) == 1


def test_resumed_run_does_not_redo_finished_work(resumed):
    assert resumed.resumed[:len(resumed.killed)] == resumed.killed, "records.jsonl is append-only"
    new = resumed.resumed[len(resumed.killed):]
    assert new, "the resumed run recorded nothing"
    assert {r["run_id"] for r in new}.isdisjoint({r["run_id"] for r in resumed.killed})
    repeated = {key(r) for r in new} & {key(r) for r in resumed.killed}
    assert not repeated, f"re-recorded after the kill: {sorted(repeated)}"
    keys = [key(r) for r in resumed.resumed]
    assert len(keys) == len(set(keys)), "a (candidate, shape) recorded twice for the same resume key"
    assert f"{len(new)} new records" in resumed.resumed_stdout


def test_resumed_records_cover_what_an_uninterrupted_run_does(resumed):
    assert sorted(map(key, resumed.resumed)) == sorted(map(key, resumed.clean))
    statuses = lambda records: {key(r): (r["status"], r["check"]) for r in records}
    assert statuses(resumed.resumed) == statuses(resumed.clean)


def comparable(row: dict) -> dict:
    """A row without what depends on timing: times, speedups, rank among ok rows, errors, compile time."""
    return {"candidate": row["candidate"], "kind": row["kind"], "status": row["status"], "check": row["check"],
            "source_hash": row["source_hash"], "reason": NUMBER.sub("#", row["reason"]),
            "shapes": {name: entry["status"] for name, entry in row["shapes"].items()},
            "ranked": row["rank"] is not None}


def test_resumed_leaderboard_equals_uninterrupted_one(resumed):
    got, want = resumed.resumed_rows, resumed.clean_rows
    assert len(got) == len(want)
    for rows in (got, want):
        names = [r["candidate"] for r in rows]
        assert len(names) == len(set(names)), f"duplicate rows: {names}"
    assert {r["candidate"]: comparable(r) for r in got} == {r["candidate"]: comparable(r) for r in want}
    unranked = lambda rows: [r["candidate"] for r in rows if r["rank"] is None]
    assert unranked(got) == unranked(want), "rows that are not ranked keep their order"
    statuses = {r["candidate"]: r["status"] for r in got}
    assert statuses["cpu_scalar"] == statuses["ref:eager"] == "ok"
    assert statuses["cpu_zeros"] == statuses["cpu_wrong_dtype"] == "wrong"
    assert statuses["cpu_torch_check"] == "runtime_error" and statuses["cpu_syntax_error"] == "rejected"
    assert len(got) == len(CANDIDATES) + 3   # + ref:eager, ref:graph, ref:compile


# --- Ctrl-C ---------------------------------------------------------------------------------------------------

@dataclass
class Interrupted:
    returncode: int
    output: str
    records: list[dict]
    folder: Path
    leftovers: dict   # pid -> command: the hung candidate's worker, if it outlived the CLI


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, cache_config, build_cache) -> Interrupted:
    """SIGINT to the CLI process (what Ctrl-C sends) while a candidate that never returns is evaluated."""
    base = tmp_path_factory.mktemp("interrupt")
    folder = base / "results" / "scalar_gated_delta"
    hang = FAULTS / "cpu_forward_hang.py"
    process = start(run_args(base / "results", cache_config, [hang]), base / "run.log")
    needle = f"{build_cache}/{hang.stem}-"
    try:
        wait_until(lambda: any(r["candidate"] == "ref:eager" for r in read_records(folder / "records.jsonl")),
                   process, "the eager reference was recorded")
        wait_until(lambda: any("harness.sandbox" in command(pid) and hang.stem in command(pid)
                               for pid in descendants(process.pid)), process, "the candidate's sandbox started")
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGUSR1)   # the CLI prints its threads' stacks to run.log
            time.sleep(1.0)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    time.sleep(0.5)
    left = leftovers(needle) | leftovers("harness.sandbox", hang.stem)
    kill_pids(left)
    return Interrupted(process.returncode, (base / "run.log").read_text(), read_records(folder / "records.jsonl"),
                       folder, left)


def test_ctrl_c_exits_130_and_keeps_finished_records(interrupted):
    assert interrupted.returncode == 130, interrupted.output[-3000:]
    text = " ".join(interrupted.output.split())   # rich may wrap the message
    assert "interrupted" in text and "finished records are kept in" in text, interrupted.output[-3000:]
    assert "run the same command again to resume" in text
    assert "Traceback" not in interrupted.output
    assert ("ref:eager", "seed") in {key(r) for r in interrupted.records}
    assert "cpu_forward_hang" not in {r["candidate"] for r in interrupted.records}, "an unfinished candidate was recorded"
    assert not (interrupted.folder / "leaderboard.json").exists()


def test_ctrl_c_takes_the_running_worker_down(interrupted):
    assert interrupted.returncode == 130
    assert not interrupted.leftovers, f"still running after Ctrl-C: {interrupted.leftovers}"


def test_two_runs_at_once_share_the_build_cache_and_the_results(tmp_path, cache_config, build_cache):
    """Two runs on one results folder and one build cache: each candidate built once, every record line whole."""
    candidates = [FIXTURES / "cpu_scalar.py", FIXTURES / "cpu_zeros.py"]
    results = tmp_path / "results"
    runs = [start(run_args(results, cache_config, candidates), tmp_path / f"run{i}.log") for i in range(2)]
    for run in runs:
        run.wait(timeout=900)
    logs = [(tmp_path / f"run{i}.log").read_text() for i in range(2)]
    assert [run.returncode for run in runs] == [0, 0], logs
    folder = results / "scalar_gated_delta"
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]   # no torn line
    assert len({r["run_id"] for r in records}) in (1, 2)
    per_run = {}
    for r in records:
        per_run.setdefault(r["run_id"], []).append((r["candidate"], r["shape"]))
    assert all(len(keys) == len(set(keys)) for keys in per_run.values()), "a run recorded a shape twice"
    rows = {row["candidate"]: row for row in json.loads((folder / "leaderboard.json").read_text())["rows"]}
    assert rows["cpu_scalar"]["status"] == "ok" and rows["cpu_zeros"]["status"] == "wrong"
    for stem in ("cpu_scalar", "cpu_zeros"):
        assert len(list(build_cache.glob(f"{stem}-*"))) == 1, f"{stem} built in more than one place"
