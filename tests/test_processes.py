"""tests/processes.py: what a run left running, told apart from a live run beside it."""
import os
import subprocess
import time

from tests.processes import SANDBOX_UIDS, Process, abandoned, leftovers, process_table

ROOT, SANDBOX = 0, SANDBOX_UIDS[0]


def table(*rows) -> dict[int, Process]:
    return {pid: Process(pid, uid, parent, tuple(argv.split()), argv.encode()) for pid, uid, parent, argv in rows}


def test_a_live_runs_processes_are_waited_for_and_an_orphans_are_not():
    processes = table(
        (1, ROOT, 0, "init"),
        (5, ROOT, 1, "bash .ci/run"),
        (10, ROOT, 5, "python -m pytest"),                          # a pytest worker: a live launcher
        (11, ROOT, 10, "python -m harness run problem.yaml"),       # its harness run ...
        (12, ROOT, 11, "python -m harness.judge"),
        (13, SANDBOX, 12, "python -I -c harness.sandbox 5 8 4 cpu candidate"),
        (14, SANDBOX, 13, "cc1plus main.cpp"),
        (20, SANDBOX, 1, "python -I -c harness.sandbox 5 8 4 cpu cheat"),   # a sandbox whose judge is gone
        (21, SANDBOX, 20, "sleep 60"),
        (30, SANDBOX, 1, "sleep 60"),                                # a daemon that double-forked and exec'd
        (40, ROOT, 99, "python -m harness.judge"),                   # its parent gone a moment ago
    )
    assert not any(abandoned(pid, processes) for pid in (10, 11, 12, 13, 14))
    assert all(abandoned(pid, processes) for pid in (20, 21, 30, 40))


def test_a_real_orphan_is_found_and_a_waited_child_is_not(tmp_path):
    marker = f"processes-test-{os.getpid()}-{time.time_ns()}"
    child = subprocess.Popen(["sleep", "60"], env={"MARK": marker})
    orphan = int(subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], env={"MARK": marker},
                                capture_output=True, text=True, check=True).stdout)
    try:
        deadline = time.time() + 10
        while process_table().get(orphan, Process(0, 0, 0, (), b"")).parent not in (0, 1) and time.time() < deadline:
            time.sleep(0.05)
        found = leftovers(marker)
        assert orphan in found and child.pid not in found, (found, orphan, child.pid)
    finally:
        child.kill()
        child.wait()
        try:
            os.kill(orphan, 9)
        except ProcessLookupError:
            pass
