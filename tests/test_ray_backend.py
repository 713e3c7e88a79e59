"""The Ray backend (harness/backend_ray.py): the same CPU run on a local Ray instance gives the local backend's
statuses and reasons; a Ray worker killed in mid-evaluation is retried and its record is written exactly once;
sources and builds travel by content. Skipped where Ray is not installed (`pip install .[ray]`), except the
test that `--backend ray` then fails with one line saying how to install it.

The builds come from the session's build cache (conftest's `build_cache`), so after tests/test_end_to_end_cpu.py
only the slow candidate here compiles.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO, harness_cli

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (pip install .[ray]; make test installs it)")

PROBLEM = "problems/scalar_gated_delta.yaml"
CANDIDATES = ["cpu_scalar.py", "cpu_zeros.py", "cpu_compile_error.py", "no_model_new.py"]
SLOW = "ray_slow_start"          # its constructor sleeps, so that its Ray worker can be killed mid-evaluation
SLOW_SLEEP_S = 8
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


def test_ray_backend_without_ray_is_one_line_saying_how_to_install_it(tmp_path):
    """An import hook makes `import ray` fail as it does where Ray is not installed."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nclass NoRay:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n            raise ImportError('No module named ray')\n"
        "sys.meta_path.insert(0, NoRay())\n")
    done = subprocess.run([sys.executable, "-m", "harness", "run", PROBLEM, "--device", "cpu", "--backend", "ray",
                           "--results", str(tmp_path / "results"), "--candidates", str(FIXTURES / "cpu_scalar.py")],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)])))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install .[ray]" in lines[0], done.stderr
    assert not (tmp_path / "results" / "scalar_gated_delta" / "records.jsonl").exists()


# --- what travels by content -----------------------------------------------------------------------------------

@needs_ray
def test_a_source_is_written_by_content_and_refused_when_its_bytes_do_not_match(tmp_path):
    from harness.backend_ray import SourceFile

    source = SourceFile.read(FIXTURES / "cpu_scalar.py")
    written = source.write_under(tmp_path / "node")
    assert written.read_bytes() == (FIXTURES / "cpu_scalar.py").read_bytes() and written.name == "cpu_scalar.py"
    with pytest.raises(ValueError, match="SHA-256"):
        SourceFile(source.name, source.data + b"# changed\n", source.sha256).write_under(tmp_path / "other")
    with pytest.raises(ValueError, match="relative"):
        SourceFile("../escape.py", source.data, source.sha256).write_under(tmp_path / "node")


@needs_ray
def test_a_packed_build_unpacks_into_a_trusted_cache_entry(tmp_path):
    """What crosses the object store: the extension, its marker and its log; a node's copy is trusted by the same
    check as the driver's (build.trusted_entry), and a failed build (no marker) brings only its log."""
    from harness import build as build_stage
    from harness.backend_ray import pack_build, unpack_build

    built = tmp_path / "driver" / "cand-abc"
    (built / "ext" / "cand").mkdir(parents=True)
    (built / "ext" / "cand" / "cand.so").write_bytes(b"\x7fELF pretend library")
    (built / "ext" / "cand" / "lock").write_text("")
    (built / "build.log").write_text("compiled\n")
    (built / "evaluate-run1.log").write_text("not shipped\n")
    (built / "built.json").write_text(json.dumps({"compile_s": 1.5, "libraries": build_stage.library_digests(built)}))
    node = tmp_path / "node" / "cand-abc"
    unpack_build(pack_build(built), node)
    assert build_stage.trusted_entry(node)["compile_s"] == 1.5
    assert (node / "build.log").read_text() == "compiled\n" and not (node / "evaluate-run1.log").exists()
    (built / "built.json").unlink()
    failed = tmp_path / "node2" / "cand-abc"
    unpack_build(pack_build(built), failed)
    assert build_stage.trusted_entry(failed) is None and (failed / "build.log").exists()


def _float_rounds_up(ns: int, probe: Path) -> int:
    """A time in ns near `ns` that a float of seconds (what tarfile keeps) moves later, as tarfile would."""
    probe.write_text("")
    while True:
        os.utime(probe, ns=(ns, ns))
        seconds = os.stat(probe).st_mtime
        os.utime(probe, (seconds, seconds))
        if os.stat(probe).st_mtime_ns > ns:
            return ns
        ns += 37


@needs_ray
def test_ninja_finds_an_unpacked_build_up_to_date(tmp_path):
    """torch builds with ninja, which rebuilds an output newer than the time its dependencies were recorded at:
    an unpacked build must keep every file's time to the nanosecond, or the sandbox compiles the candidate again
    (on an H200 a cached CUDA build took 59 s more per evaluation through Ray)."""
    import shutil as _shutil

    from harness.backend_ray import pack_build, unpack_build

    ninja = _shutil.which("ninja") or str(Path(sys.executable).with_name("ninja"))
    built = tmp_path / "driver" / "cand-abc"
    ext = built / "ext" / "cand"
    ext.mkdir(parents=True)
    (ext / "main.cpp").write_text("int main() { return 0; }\n")
    os.utime(ext / "main.cpp", ns=(1_700_000_000_000_000_000,) * 2)
    stamp = _float_rounds_up(1_796_146_668_123_456_789, tmp_path / "probe")
    # a depfile, recorded in .ninja_deps with the output's time, as torch's build.ninja does with `deps = gcc`
    (ext / "build.ninja").write_text(
        "rule compile\n  command = cp $in $out && printf '%s: %s\\n' $out $in > $out.d && "
        f"touch -d @{stamp // 10**9}.{stamp % 10**9:09d} $out\n  depfile = $out.d\n  deps = gcc\n"
        "build main.o: compile main.cpp\ndefault main.o\n")
    subprocess.run([ninja], cwd=ext, check=True, capture_output=True)
    assert os.stat(ext / "main.o").st_mtime_ns == stamp
    node = tmp_path / "node" / "cand-abc"
    unpack_build(pack_build(built), node)
    assert os.stat(node / "ext" / "cand" / "main.o").st_mtime_ns == stamp
    dry = subprocess.run([ninja, "-n", "-d", "explain"], cwd=node / "ext" / "cand", capture_output=True, text=True)
    assert "no work to do" in dry.stdout, dry.stdout + dry.stderr


# --- a real run on a local Ray instance ------------------------------------------------------------------------

@dataclass(frozen=True)
class Kill:
    worker_pid: int      # the Ray worker process that ran the judge of SLOW, killed with SIGKILL
    worker_cmdline: str
    judge_pid: int


def slow_candidate(folder: Path) -> Path:
    """cpu_scalar with a constructor that sleeps: its sandbox is alive and busy for SLOW_SLEEP_S seconds."""
    text = (FIXTURES / "cpu_scalar.py").read_text().replace('name="fixture_cpu_scalar"', f'name="{SLOW}"')
    text = text.replace("import torch\n", "import time\n\nimport torch\n", 1)
    text = text.replace("class ModelNew(nn.Module):\n",
                        f"class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                        f"        time.sleep({SLOW_SLEEP_S})\n\n", 1)
    path = folder / f"{SLOW}.py"
    path.write_text(text)
    return path


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def kill_ray_worker_of(candidate: str, run: subprocess.Popen, found: list[Kill], deadline_s: float = 400) -> None:
    """Wait for the sandbox that loads `candidate`, then SIGKILL the Ray worker above its judge, once."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and run.poll() is None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            line = cmdline(int(entry))
            if "harness.sandbox" not in line or not line.rstrip().endswith(candidate):
                continue
            judge = parent_of(int(entry))
            worker = parent_of(judge)
            if "harness.judge" in cmdline(judge) and "ray" in cmdline(worker).lower():
                time.sleep(1.0)   # in the constructor's sleep by now: mid-evaluation
                found.append(Kill(worker, cmdline(worker), judge))
                os.kill(worker, signal.SIGKILL)
                return
        time.sleep(0.1)


def cli_run(results: Path, config: Path, candidates: list[Path], *extra: str) -> subprocess.CompletedProcess:
    return harness_cli("run", PROBLEM, "--device", "cpu", "--results", str(results), "--config", str(config),
                       "--candidates", *map(str, candidates), *extra, timeout=900)


@pytest.fixture(scope="module")
def run_config(tmp_path_factory, build_cache) -> Path:
    """conftest's short timing, without the CUDA-only baselines (rows that say only `skipped` on a CPU run)."""
    path = tmp_path_factory.mktemp("ray-config") / "test.yaml"
    path.write_text(f"build:\n  cache_dir: {build_cache}\ntiming:\n  budget_s: 0.3\n  warmup_ms: 5\n"
                    "baselines:\n  graph: false\n  compile: false\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, run_config):
    """The local backend's run, then the Ray backend's of the same candidates, whose Ray worker evaluating SLOW
    is killed once in mid-evaluation. Returns both results folders and what was killed."""
    folder = tmp_path_factory.mktemp("ray-runs")
    candidates = [FIXTURES / c for c in CANDIDATES] + [slow_candidate(folder)]
    local = cli_run(folder / "local", run_config, candidates)
    assert local.returncode == 0, local.stdout + local.stderr
    command = [sys.executable, "-m", "harness", "run", PROBLEM, "--device", "cpu", "--results", str(folder / "ray"),
               "--config", str(run_config), "--candidates", *map(str, candidates), "--backend", "ray"]
    started = time.monotonic()
    with open(folder / "ray.log", "w") as output:
        run = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=REPO,
                               env=dict(os.environ, PYTHONPATH=str(REPO)))
        killed: list[Kill] = []
        killer = threading.Thread(target=kill_ray_worker_of, args=(SLOW, run, killed), daemon=True)
        killer.start()
        try:
            returncode = run.wait(timeout=900)
        finally:
            if run.poll() is None:
                run.kill()
        killer.join(timeout=5)
    text = (folder / "ray.log").read_text()
    assert returncode == 0, text
    return folder / "local" / "scalar_gated_delta", folder / "ray" / "scalar_gated_delta", killed, text, \
        time.monotonic() - started


def rows(folder: Path) -> dict[str, tuple]:
    """Each row's status, check and reason with its numbers blanked (they come from the run's secret seed)."""
    table = json.loads((folder / "leaderboard.json").read_text())["rows"]
    return {r["candidate"]: (r["status"], r["check"], NUMBER.sub("#", r["reason"] or "")) for r in table}


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]


@needs_ray
@pytest.mark.slow
def test_the_ray_backend_gives_the_local_backends_statuses_and_reasons(runs):
    local, on_ray, _, output, _ = runs
    expected = rows(local)
    assert expected["cpu_scalar"][0] == "ok" and expected["cpu_zeros"][0] == "wrong", expected
    assert expected["cpu_compile_error"][0] == "compile_error" and expected["no_model_new"][0] == "rejected", expected
    assert rows(on_ray) == expected, output[-3000:]
    signed = records(on_ray)
    assert all(len(r["signature"]) == 64 for r in signed), "the driver signs every record, as locally"
    assert all(r["confinement"].get("private_tmp") for r in signed if r["status"] == "ok"), "the sandbox was confined"


@needs_ray
@pytest.mark.slow
def test_a_ray_worker_killed_mid_evaluation_is_retried_and_recorded_once(runs):
    _, on_ray, killed, output, _ = runs
    assert killed, f"no Ray worker running {SLOW}'s judge was found to kill:\n{output[-3000:]}"
    assert not Path(f"/proc/{killed[0].worker_pid}").exists(), "the worker died"
    mine = [r for r in records(on_ray) if r["candidate"] == SLOW]
    assert len(mine) == 1, mine                       # one shape (seed): exactly one record, not zero, not two
    assert mine[0]["status"] == "ok", mine[0]         # the retry, in a fresh worker, finished it
    keys = [(r["candidate"], r["shape"]) for r in records(on_ray)]
    assert len(keys) == len(set(keys)), "no record written twice"


@needs_ray
@pytest.mark.slow
def test_a_second_ray_run_resumes_every_record(runs, run_config):
    """The driver's record path is the runner's: resume works unchanged (and needs no Ray task at all)."""
    _, on_ray, _, _, _ = runs
    before = (on_ray / "records.jsonl").read_text()
    candidates = [FIXTURES / c for c in CANDIDATES] + [on_ray.parent.parent / f"{SLOW}.py"]
    done = cli_run(on_ray.parent, run_config, candidates, "--backend", "ray")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 new records" in done.stdout
    assert (on_ray / "records.jsonl").read_text() == before


@needs_ray
def test_a_cluster_that_does_not_answer_is_one_line_at_once(tmp_path):
    """ray.init would wait minutes for it; the backend tries the address first."""
    started = time.monotonic()
    done = harness_cli("run", PROBLEM, "--device", "cpu", "--backend", "ray", "--ray-address", "127.0.0.1:1",
                       "--results", str(tmp_path / "results"), "--candidates", str(FIXTURES / "cpu_scalar.py"),
                       timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().count("\n") == 0 and "ray start --head" in done.stderr, done.stderr
    assert time.monotonic() - started < 60
