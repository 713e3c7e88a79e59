"""Crash reasons: the signal or exit code first, then what the crashed process itself printed last, never
torch's import-time warnings (a new user's SIGSEGV row read "No CUDA runtime is found, using CUDA_HOME=...")."""
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import pytest

from harness import build as build_stage
from harness.discovery import discover
from harness.env import collect_env
from harness.worker import crash_reason, output_tail, read_tail, worker_crash_reason

# What torch prints at import on a host without a GPU (torch 2.14, from a real sandbox's log), and a
# Python warning with the source line printed under it.
CUDA_WARNING = ("W1201 13:52:33.597000 30297 .venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py:183] "
                "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'")
USER_WARNING = ("/work/main/.venv/lib/python3.11/site-packages/torch/cuda/__init__.py:182: UserWarning: CUDA "
                "initialization: The NVIDIA driver on your system is too old\n"
                "  return torch._C._cuda_getDeviceCount() > 0")


def test_a_segfault_names_its_signal_and_skips_torch_warnings():
    output = f"{CUDA_WARNING}\n{USER_WARNING}\n\ncandidate: launching run()\n{CUDA_WARNING}\n"
    assert crash_reason("sandbox", -signal.SIGSEGV, output) == "sandbox died from SIGSEGV: candidate: launching run()"


def test_only_noise_leaves_the_signal_alone():
    """cpu_segfault.py prints nothing of its own: its reason is the signal, not the warning."""
    assert crash_reason("sandbox", -signal.SIGSEGV, f"{CUDA_WARNING}\n\n{USER_WARNING}\n") == "sandbox died from SIGSEGV"
    assert crash_reason("sandbox", -signal.SIGABRT, "") == "sandbox died from SIGABRT"
    assert crash_reason("sandbox", -77, "") == "sandbox died from signal 77"


def test_an_abort_keeps_the_last_few_lines_in_order():
    """cpu_abort.py's kind: the C++ runtime says why just before the signal."""
    output = (f"{CUDA_WARNING}\nfirst\nsecond\nterminate called after throwing an instance of 'c10::Error'\n"
              "  what():  expected a float tensor\n")
    assert crash_reason("sandbox", -signal.SIGABRT, output) == (
        "sandbox died from SIGABRT: second | terminate called after throwing an instance of 'c10::Error' | "
        "what():  expected a float tensor")


def test_an_exit_code_and_a_traceback():
    output = ("Traceback (most recent call last):\n  File \"judge.py\", line 3, in <module>\n    main()\n"
              "RuntimeError: the judge broke\n")
    assert crash_reason("judge", 1, output, " without a result") == (
        'judge exited with code 1 without a result: File "judge.py", line 3, in <module> | main() | '
        "RuntimeError: the judge broke")


def test_long_output_is_cut_keeping_the_newest_line():
    output = "\n".join(f"line {i} " + "x" * 300 for i in range(100)) + "\nthe very last words\n"
    tail = output_tail(output)
    assert tail.endswith("the very last words") and len(tail) <= 320
    assert all(len(part) <= 160 for part in tail.split(" | "))
    assert "\x1b" not in output_tail("\x1b[31merror: red\x1b[0m\x07\n") and output_tail("\x1b[31merror\x1b[0m") == "error"


def test_read_tail_starts_at_the_offset_and_reads_at_most_its_bytes(tmp_path):
    log = tmp_path / "evaluate.log"
    log.write_text("the judge's own line\n" + "a" * 100 + "\nend\n")
    assert read_tail(log, offset=len("the judge's own line\n")).startswith("a")
    assert read_tail(log, max_bytes=4) == "end\n"
    assert read_tail(tmp_path / "missing.log") == "" and read_tail("") == ""


def test_a_dead_judge_is_explained_by_its_log(tmp_path):
    log = tmp_path / "evaluate.log"
    log.write_text(f"{CUDA_WARNING}\nMemoryError: out of host memory\n{CUDA_WARNING}\n")
    outcome = SimpleNamespace(returncode=-signal.SIGKILL, log_path=log)
    assert worker_crash_reason("judge", outcome) == "judge died from SIGKILL: MemoryError: out of host memory"


def test_the_judge_quotes_what_its_dead_sandbox_printed_and_not_its_own_lines(tmp_path):
    """A real process that prints torch's warning and a line of its own, then dies from SIGSEGV, as a sandbox."""
    from harness.judge import SandboxClient, SandboxDied

    log_path = tmp_path / "evaluate.log"
    log_path.write_text("judge: the judge's own line before the sandbox started\n")
    offset = log_path.stat().st_size
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    script = (f"import os, signal, sys; sys.stderr.write({CUDA_WARNING!r} + '\\n'); "
              "print('candidate: writing through a null pointer', flush=True); "
              f"sys.stderr.write({CUDA_WARNING!r} + '\\n'); sys.stderr.flush(); os.kill(os.getpid(), signal.SIGSEGV)")
    with open(log_path, "ab") as log:
        process = subprocess.Popen([sys.executable, "-c", script], stdout=log, stderr=subprocess.STDOUT,
                                   pass_fds=(requests_read, replies_write))
    os.close(requests_read)
    os.close(replies_write)
    client = SandboxClient(process, requests_write, replies_read, None, log_path=str(log_path), log_offset=offset)
    try:
        with pytest.raises(SandboxDied) as died:
            client.read_line()
    finally:
        os.close(requests_write)
        os.close(replies_read)
    assert str(died.value) == "sandbox died from SIGSEGV: candidate: writing through a null pointer"


def test_a_build_worker_that_dies_at_import_is_not_explained_by_torchs_warning(tmp_path):
    """The row a new user saw: the build worker's log ends with torch's warning when a candidate crashes
    before printing anything of its own."""
    candidate_path = tmp_path / "crash_at_import.py"
    candidate_path.write_text(f"import os, signal, sys\nsys.stderr.write({CUDA_WARNING!r} + '\\n')\nsys.stderr.flush()\n"
                              "os.kill(os.getpid(), signal.SIGSEGV)\n")
    (candidate,) = discover([candidate_path])
    result = build_stage.compile_one(candidate, False, collect_env("cpu"), "9.0", tmp_path / "builds", 120)
    assert result.status == "crashed"
    assert result.reason == "build worker died from SIGSEGV", result.reason
