"""What a harness run left running, told apart from the live processes of another run beside it (pytest-xdist
runs test files in parallel, and every harness run uses the same sandbox users)."""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from harness.confine import SANDBOX_SLOTS, SANDBOX_UID_BASE

SANDBOX_UIDS = range(SANDBOX_UID_BASE, SANDBOX_UID_BASE + SANDBOX_SLOTS)


@dataclass(frozen=True)
class Process:
    pid: int
    uid: int
    parent: int
    argv: tuple[str, ...]
    text: bytes          # command line and environment, for needles

    @property
    def command(self) -> str:
        return " ".join(self.argv)[:200]

    @property
    def harness(self) -> bool:
        """A sandbox user's process, or a harness process (runner, judge, worker, sandbox) of any user."""
        return (self.uid in SANDBOX_UIDS or self.argv[1:3] == ("-m", "harness")
                or (len(self.argv) > 2 and self.argv[1] == "-m" and self.argv[2].startswith("harness."))
                or any("harness.sandbox" in arg for arg in self.argv[1:4]))


def process_table() -> dict[int, Process]:
    """Every live (not zombie) process."""
    table = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line)
            if fields.get("State", "").strip().startswith(("Z", "X")):
                continue
            cmdline = (proc / "cmdline").read_bytes()
            try:
                environ = (proc / "environ").read_bytes()
            except OSError:
                environ = b""
            table[int(proc.name)] = Process(int(proc.name), int(fields["Uid"].split()[0]), int(fields["PPid"]),
                                            tuple(cmdline.decode(errors="replace").split("\0")[:-1]),
                                            cmdline + b"\0" + environ)
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return table


def abandoned(pid: int, table: dict[int, Process]) -> bool:
    """Nothing live waits for it: up from its parent, through harness processes only, the chain ends at init
    (the run that started it is gone) rather than at a live launcher (a test, or another pytest worker's run).
    The process itself may be anything: a daemon can exec any program."""
    seen = {pid}
    pid = table[pid].parent if pid in table else 0
    while pid > 1 and pid in table and pid not in seen:
        seen.add(pid)
        if not table[pid].harness:
            return False
        pid = table[pid].parent
    return pid <= 1 or pid not in table


def leftovers(*needles: str, sandbox_users: bool = False) -> dict[int, str]:
    """pid -> command of the abandoned processes whose command line or environment holds every needle (with
    `sandbox_users`, of every abandoned sandbox user's process)."""
    table = process_table()
    found = {}
    for pid, process in table.items():
        wanted = process.uid in SANDBOX_UIDS if sandbox_users else all(n.encode() in process.text for n in needles)
        if wanted and pid != os.getpid() and abandoned(pid, table):
            found[pid] = process.command
    return found


def kill_pids(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
