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


def pytest_collection_modifyitems(config, items):
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
    return tmp_path_factory.mktemp("builds")


@pytest.fixture(scope="session")
def cache_config(tmp_path_factory, build_cache) -> Path:
    path = tmp_path_factory.mktemp("config") / "test.yaml"
    path.write_text(f"build:\n  cache_dir: {build_cache}\ntiming:\n  budget_s: 0.3\n  warmup_ms: 5\n")
    return path
