"""Build worker: one candidate compiled in a confined process of its own; a job on stdin, a JSON line out.

`python -m harness.worker` reads one build job (JSON) from stdin, imports the candidate (which compiles
its extension through load_inline) and appends one JSON line to the job's `results_path`. The line is
the candidate's own claim: a build that lies only fails its evaluation, which the judge runs (judge.py).
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import time
import traceback

class Emitter:
    def __init__(self, path: str):
        self.handle = open(path, "a", encoding="utf-8")

    def __call__(self, record: dict) -> None:
        self.handle.write(json.dumps(record) + "\n")
        self.handle.flush()
        os.fsync(self.handle.fileno())


def first_line(exc: BaseException, limit: int = 240) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:limit]


def is_build_failure(exc: BaseException) -> bool:
    return "Error building extension" in str(exc) or type(exc).__name__ == "CalledProcessError"


def import_candidate(path: str, sha256: str):
    spec = importlib.util.spec_from_file_location(f"candidate_{sha256[:16]}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def keep_compiler_output() -> None:
    """Make load_inline print the compiler's commands and output, so the build log keeps them."""
    import functools

    import torch.utils.cpp_extension as cpp_extension

    original = cpp_extension.load_inline

    @functools.wraps(original)
    def verbose_load_inline(*args, **kwargs):
        kwargs["verbose"] = True
        return original(*args, **kwargs)

    cpp_extension.load_inline = verbose_load_inline


def run_build(job: dict, emit: Emitter) -> None:
    keep_compiler_output()
    started = time.perf_counter()
    try:
        import_candidate(job["candidate"]["path"], job["candidate"]["sha256"])
    except BaseException as exc:  # a candidate may raise anything, SystemExit included
        traceback.print_exc()
        status = "compile_error" if is_build_failure(exc) else "load_error"
        from harness.build import first_error_line

        reason = (first_error_line(str(exc)) if status == "compile_error" else "") or first_line(exc)
        emit({"stage": "build", "status": status, "reason": reason, "compile_s": time.perf_counter() - started})
        return
    seconds = time.perf_counter() - started
    print(f"built and loaded in {seconds:.1f} s")
    emit({"stage": "build", "status": "ok", "reason": "", "compile_s": seconds})


def die_with_runner(runner_pid: int | None) -> None:
    """Ask Linux to kill this worker when the runner dies, so a killed run leaves no orphan behind."""
    if not runner_pid or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != runner_pid:   # the runner died before the request took effect
        os._exit(1)


def main() -> int:
    job = json.loads(sys.stdin.read())
    die_with_runner(job.get("runner_pid"))
    emit = Emitter(job["results_path"])
    run_build(job, emit)
    emit.handle.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)   # skip interpreter teardown: a broken extension can crash in destructors


if __name__ == "__main__":
    sys.exit(main())
