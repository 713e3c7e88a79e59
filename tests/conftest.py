import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def has_cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def can_compile_cuda() -> bool:
    import torch
    from harness.env import cuda_home
    return bool(torch.version.cuda) and bool(cuda_home())


# The files that take longest in a fresh clone (their module fixtures are whole harness runs), longest first:
# `make test` hands whole files to its workers in collection order, so these start at once, not last.
LONGEST_FIRST = ("test_judge_corpus.py", "test_faults.py", "test_end_to_end_cpu.py", "test_dynamic_checks.py",
                 "test_kernelbench.py", "test_ray_backend.py", "test_resume.py", "test_build.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))   # stable: the rest keep their order
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    skip_nvcc = pytest.mark.skip(reason="needs nvcc and a CUDA build of torch")
    gpu, nvcc = has_cuda(), can_compile_cuda()
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(skip_gpu)
        if "nvcc" in item.keywords and not nvcc:
            item.add_marker(skip_nvcc)


def harness_cli(*args: str, timeout: float = 900, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One build cache for the whole session: each test extension compiles once. HARNESS_TEST_BUILD_CACHE names
    a folder to keep it in across sessions (entries are keyed by source, flags, torch, CUDA and arch)."""
    kept = os.environ.get("HARNESS_TEST_BUILD_CACHE")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        return Path(kept).resolve()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # pytest-xdist: every worker's base folder sits in one for the session; a build both want is made once
        # (build.py locks each build's folder) and shared
        shared = tmp_path_factory.getbasetemp().parent / "builds"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("builds")


@pytest.fixture(scope="session")
def cache_config(tmp_path_factory, build_cache) -> Path:
    path = tmp_path_factory.mktemp("config") / "test.yaml"
    path.write_text(f"build:\n  cache_dir: {build_cache}\ntiming:\n  budget_s: 0.3\n  warmup_ms: 5\n")
    return path


def cpu_judge(candidate_id: str, secret_seed: int, shapes: tuple = ("seed",)):
    """A judge of the scalar problem on the CPU, as a harness run would make it, its sandbox not yet started."""
    from harness import judge
    from harness.config import load_config
    from harness.protocol import EvaluateJob
    config = load_config()
    job = EvaluateJob(device="cpu", problem_path=str(REPO / "problems" / "scalar_gated_delta.yaml"), shapes=shapes,
                      timing=dict(config.get("timing")), judge=dict(config.get("judge")), secret_seed=secret_seed,
                      results_path="", candidate_id=candidate_id)
    return judge.Judge(job, emit=lambda line: None)


@contextlib.contextmanager
def calibrated_judge(candidate_id: str, secret_seed: int, **rules):
    """A CPU judge with its sandbox started, the seed shape laid out and its empty call calibrated, the harness's
    trivial call loaded: (judge, shape, layout). `rules` override the judge's settings (configs/default.yaml)."""
    from harness import judge
    referee = cpu_judge(candidate_id, secret_seed)
    referee.rules.update(rules)
    shape = referee.problem.shapes["seed"]
    layout = referee.layouts["seed"] = referee.layout_for(shape, referee.slots_for(shape))
    referee.start_sandbox()
    try:
        referee.open_arena(judge.layout_end(layout))
        referee.sandbox.ask("load", kind="trivial")
        referee.calibration["seed"] = referee.calibrate(shape, layout)
        yield referee, shape, layout
    finally:
        referee.stop_sandbox()


@pytest.fixture
def requests_sent(monkeypatch):
    """Every request the judge writes to a sandbox, as (op, args), in order."""
    from harness.protocol import Request
    sent: list[tuple[str, dict]] = []
    encode = Request.encode

    def recording(self):
        sent.append((self.op, dict(self.args)))
        return encode(self)
    monkeypatch.setattr(Request, "encode", recording)
    return sent


def load_reference(referee) -> None:
    """The problem's reference, loaded in the judge's sandbox as the candidate: outputs that verify only where the
    judge and its sandbox see the same bytes."""
    from harness.kernelbench import INIT_SEED
    referee.sandbox.ask("load", kind="reference", path=str(referee.problem.reference_path),
                        init_inputs=list(referee.problem.init_inputs), init_seed=INIT_SEED, baseline="eager")
