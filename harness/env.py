"""Environment: what machine, toolkit and versions a run used, as an `EnvInfo`.

`probe_env` runs `python -m harness.env` in a child so that the parent never creates a CUDA
context; `cuda_home` finds the toolkit even where `nvcc` on the PATH is a wrapper script.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class EnvInfo:
    device: str                 # "cuda" or "cpu": where candidates run
    device_name: str            # GPU or CPU model
    gpu_count: int
    driver: str
    compute_capability: str     # "9.0"; "" on CPU
    sm_count: int
    l2_bytes: int
    torch: str
    torch_cuda: str             # CUDA version torch was built with; "" for a CPU build
    cuda_home: str              # toolkit used to compile; "" when none found
    nvcc: str
    python: str
    platform: str
    cpu: str
    cpu_count: int
    harness_commit: str
    harness_digest: str         # hash of the harness's own source: a dirty tree is told apart too

    @property
    def key(self) -> str:
        """Fingerprint of what can change a result; records are only reused under the same key."""
        fields = (self.device, self.device_name, self.driver, self.torch, self.torch_cuda, self.nvcc,
                  self.harness_digest)
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        return asdict(self) | {"key": self.key}


def _valid_toolkit(root: Path) -> bool:
    return (root / "bin" / "nvcc").is_file() and (root / "include" / "cuda_runtime.h").is_file()


def cuda_home() -> str:
    """The CUDA toolkit root, or "" when there is none.

    torch guesses from `which nvcc`, which is wrong when nvcc is a wrapper script elsewhere;
    here each guess must hold both bin/nvcc and include/cuda_runtime.h.
    """
    guesses = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        guesses.append(str(Path(nvcc).resolve().parent.parent))
        guesses.append(str(Path(nvcc).parent.parent))
    for guess in guesses:
        if guess and _valid_toolkit(Path(guess)):
            return str(Path(guess))
    return ""


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def harness_commit() -> str:
    """HARNESS_COMMIT when set (a copy of the tree whose .git is missing or stale), else the checkout's
    commit, "-dirty" when harness/ has changes. `harness_digest` identifies the code either way."""
    if os.environ.get("HARNESS_COMMIT"):
        return os.environ["HARNESS_COMMIT"]
    top = _run(["git", "-C", str(REPO_ROOT), "rev-parse", "--show-toplevel"])
    if not top or Path(top).resolve() != REPO_ROOT.resolve():
        return "unknown"   # a copy of the tree (git archive) inside another checkout: that HEAD is not this code
    commit = _run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"])
    if not commit:
        return "unknown"
    dirty = _run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no", "--", "harness"])
    return commit + ("-dirty" if dirty else "")


def harness_digest() -> str:
    digest = hashlib.sha256()
    package = REPO_ROOT / "harness"
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def collect_env(device: str) -> EnvInfo:
    import torch

    home = cuda_home()
    nvcc_version = ""
    if home:
        out = _run([str(Path(home) / "bin" / "nvcc"), "--version"])
        nvcc_version = out.splitlines()[-1].strip() if out else ""
    gpu_count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    use_cuda = device in ("cuda", "auto") and gpu_count > 0   # `--device cuda` with no GPU is refused by the caller
    name, driver, capability, sm_count, l2 = _cpu_name(), "", "", 0, 0
    if use_cuda:
        props = torch.cuda.get_device_properties(0)
        name, capability, sm_count = props.name, f"{props.major}.{props.minor}", props.multi_processor_count
        l2 = int(getattr(props, "L2_cache_size", 0))
        driver = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]).splitlines()[:1]
        driver = driver[0] if driver else ""
    return EnvInfo(
        device="cuda" if use_cuda else "cpu", device_name=name, gpu_count=gpu_count, driver=driver,
        compute_capability=capability, sm_count=sm_count, l2_bytes=l2, torch=torch.__version__,
        torch_cuda=torch.version.cuda or "", cuda_home=home, nvcc=nvcc_version,
        python=platform.python_version(), platform=platform.platform(), cpu=_cpu_name(),
        cpu_count=os.cpu_count() or 1, harness_commit=harness_commit(),
        harness_digest=harness_digest(),
    )


class EnvProbeError(RuntimeError):
    pass


def probe_env(device: str, timeout_s: float = 120) -> EnvInfo:
    """Collect the environment in a child process (no CUDA context in the runner)."""
    try:
        done = subprocess.run([sys.executable, "-m", "harness.env", device], capture_output=True, text=True,
                              timeout=timeout_s, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        raise EnvProbeError(f"environment probe took over {timeout_s:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvProbeError(f"environment probe failed: {last}")
    return EnvInfo(**{k: v for k, v in json.loads(done.stdout).items() if k != "key"})


if __name__ == "__main__":
    print(json.dumps(collect_env(sys.argv[1] if len(sys.argv) > 1 else "auto").to_json()))


@dataclass(frozen=True)
class MachineLoad:
    busy_cores: float      # cores kept busy by everything on the machine, over the sampled interval
    cores: int

    @property
    def busy(self) -> bool:
        """Busy enough to slow a CPU timing and spread it: more than a quarter of the cores, and at least half
        of one, already taken by something else."""
        return self.busy_cores > max(0.5, 0.25 * self.cores)


def _cpu_ticks() -> tuple[int, int]:
    with open("/proc/stat", encoding="ascii") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)   # idle + iowait
    return sum(fields[:8]), idle


def machine_load(interval_s: float = 0.5) -> MachineLoad | None:
    """How many cores the machine keeps busy over `interval_s`, from /proc/stat (None where it is absent).
    Taken before anything of the run's own starts, so all of it is someone else's."""
    try:
        total_before, idle_before = _cpu_ticks()
        time.sleep(interval_s)
        total_after, idle_after = _cpu_ticks()
    except (OSError, ValueError, IndexError):
        return None
    cores = os.cpu_count() or 1
    total = total_after - total_before
    if total <= 0:
        return MachineLoad(0.0, cores)
    return MachineLoad(round(cores * (1 - (idle_after - idle_before) / total), 2), cores)
