"""Build worker: one candidate compiled in a confined process of its own; a job on stdin, a JSON line out.

`python -m harness.worker` reads one build job (JSON) from stdin, imports the candidate (which compiles
its extension through load_inline) and appends one JSON line to the job's `results_path`. The line is
the candidate's own claim: a build that lies only fails its evaluation, which the judge runs (judge.py).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
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


# Lines a process prints whatever the candidate does: never the reason it died.
NOISE_LINES = (
    re.compile(r"No CUDA runtime is found"),                          # torch.utils.cpp_extension on a host with no GPU
    re.compile(r"^[WI]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] "),    # torch's own warning and info log lines
    re.compile(r"^# build of "),                                      # the header build.py writes into each build log
)
WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")                  # warnings.warn: FILE:LINE: UserWarning: ...
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")   # colours, cursor moves, control bytes


def output_tail(text: str, lines: int = 3, limit: int = 300) -> str:
    """The last `lines` meaningful lines of a process's output, oldest first, joined with " | " in at most about
    `limit` characters: blank lines, torch's import-time warnings and Python warnings (with the source line
    printed under them) are skipped, so a crash is explained by what the process itself said last."""
    kept: list[str] = []
    in_warning = False
    for raw in text.splitlines():
        line = ESCAPES.sub("", raw).rstrip()
        if in_warning and line[:1].isspace():
            continue   # the source line warnings.warn prints under its message
        in_warning = bool(WARNING_LINE.search(line))
        if in_warning or not line.strip() or any(pattern.search(line) for pattern in NOISE_LINES):
            continue
        kept.append(line.strip()[:160])
    tail: list[str] = []
    for line in reversed(kept[-lines:]):   # the newest lines first: they say most about the end
        if tail and sum(len(t) + 3 for t in tail) + len(line) > limit:
            break
        tail.insert(0, line)
    return " | ".join(tail)


def crash_reason(process: str, returncode: int | None, output: str = "", when: str = "") -> str:
    """Why `process` ended without its result: the signal or the exit code (followed by `when`) first, then the
    last meaningful lines of its own output, e.g. "sandbox died from SIGSEGV: what it printed last"."""
    if returncode is not None and returncode < 0:
        try:
            how = f"died from {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"died from signal {-returncode}"
    else:
        how = f"exited with code {returncode}{when}"
    tail = output_tail(output)
    return f"{process} {how}" + (f": {tail}" if tail else "")


def read_tail(path: str | os.PathLike, offset: int = 0, max_bytes: int = 64 << 10) -> str:
    """The end of a log file from `offset` on, at most `max_bytes` of it: a process may write gigabytes."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(offset, size - max_bytes))
            return handle.read(max_bytes).decode("utf-8", errors="replace")
    except (OSError, TypeError):
        return ""


def worker_crash_reason(process: str, outcome) -> str:
    """The reason for a worker (spawn.WorkerOutcome) that ended without a result, from its log."""
    return crash_reason(process, outcome.returncode, read_tail(outcome.log_path), " without a result")


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
