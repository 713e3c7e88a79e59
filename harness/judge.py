"""Judge: one candidate (or baseline) evaluated without ever importing its code; a job in, `ShapeOutcome` lines out.

`python -m harness.judge` reads an `EvaluateJob` (JSON) on stdin and appends one `ShapeOutcome` per
shape to the job's results file. It holds what a candidate must not reach: the secret seed, the float64
gold model, the verifier, the statistics and the results path. The candidate runs in a sandbox process
(sandbox.py) under a user of its own (confine.py); the two share only a memory arena (a memfd holding
input and output slots) and two pipes of typed, versioned messages (protocol.py).

What the judge does itself, and so what no candidate can forge:
- draws every input from the secret seed and writes it into the arena;
- reads every output back from the arena and compares it with the gold it computed;
- gives every timed call inputs it has never seen, and decides in secret, after the calls, which of their
  outputs it fetches and checks (D103);
- stages timed inputs sealed, readable only with a seed it sends in the request that calls them (seal.py);
- times back-to-back bursts of calls by its own clock and holds the claimed per-call time against them
  (D108), measures a fetch against a calibrated one (D109, work still running), and reads the sandbox
  user's CPU time from /proc, so CPU burnt between requests (D110) or processes left running (D114) show;
- computes the statistics and writes the outcome.
The sandbox's per-call event times are claims, accepted only within what the judge's clock accounts for.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import mmap
import os
import secrets
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import confine, receipt, seal, spawn
from harness.kernelbench import INIT_SEED, seeded
from harness.worker import Emitter, crash_reason, die_with_runner, read_tail
from harness.protocol import EvaluateJob, ProtocolError, Reply, Request, ShapeOutcome, finite_numbers, parse_reply

ALIGN = 256
MAX_SLOTS = 64
CHECKS = {
    "D101": "inputs changed by the call (the sandbox compares them with a copy: a claim)",
    "D102": "output is not a plain torch.Tensor owning its own storage (a claim)",
    "D103": "an output the judge checked, in verification or drawn in secret from the timed calls, is wrong "
            "in a way that shows a cached or replayed answer",
    "D104": "the call left more threads running than before it (a claim)",
    "D105": "the same inputs twice gave different answers",
    "D108": "the claimed time per call is below what the judge's own clock measured for back-to-back calls",
    "D109": "a fetch of finished outputs took far longer than a calibrated one: work still running",
    "D110": "the sandbox burnt CPU time between requests: work done outside any call",
    "D112": "the sandbox broke the protocol (malformed, inconsistent or impossible replies)",
    "D113": "forward is not reached by a plain call: hooks, a rerouted __call__, or not exactly ModelNew",
    "D114": "the candidate left a process running beside the sandbox",
    "D115": "a burst's receipt does not match the output fetched: its reply was sent before its outputs existed",
}


RECEIPT_FETCH_BYTES = 1 << 30   # a burst's outputs fetched for their receipts alone, at most (check_receipts)


class Integrity(Exception):
    def __init__(self, check: str, detail: str):
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.evidence: dict = {}   # what the judge measured before it found this: kept in the record's timing


class Wrong(Exception):
    pass


class SandboxFailed(Exception):
    """The sandbox answered a request with a failure (the candidate raised): a status and a reason."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


class CandidateCallFailed(Exception):
    """Carries an exception of the candidate's call through the twin sandbox's error handling."""


class TwinFailed(Exception):
    """The twin sandbox could not be started or timed: the first look's figures stand."""


class SandboxDied(Exception):
    pass


def cuda_context_lost(text: str) -> bool:
    text = text.lower()
    return any(s in text for s in ("cuda error", "illegal memory access", "device-side assert", "unspecified launch failure",
                                   "cudaerror", "acceleratorerror", "misaligned address", "illegal instruction"))


# --- CPU time from /proc: the sandbox cannot change what the kernel counts -------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().decode(errors="replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


# Where an evaluation's time goes before its first shape (README, "Throughput"): the judge's process start,
# imports and CUDA context, its gold model, the sandbox's start, calibration, the candidate's load and the check
# shapes, each in seconds; STARTED is the judge process's start on the monotonic clock.
SETUP: dict[str, float] = {}
STARTED = time.monotonic()


def process_age_s() -> float:
    """Seconds since this process started (from /proc), so the interpreter's own start counts too."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
            return max(0.0, float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


@contextlib.contextmanager
def setup_phase(name: str):
    started = time.monotonic()
    try:
        yield
    finally:
        SETUP[name] = SETUP.get(name, 0.0) + time.monotonic() - started


def stop_and_wait(pid: int, timeout_s: float = 0.5) -> None:
    """SIGSTOP a process group and wait until its leader shows stopped: the signal is taken when the process
    next runs, which on a busy machine comes after kill() returns."""
    os.killpg(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        fields = _stat_fields(str(pid))
        if fields is None or fields[0] in ("T", "t", "Z", "X"):
            return
        time.sleep(0.0002)


def _uid_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def sandbox_processes(uid: int | None, root_pid: int) -> dict[int, float]:
    """pid -> CPU seconds (its own and its waited-for children's) of every process of the sandbox, zombies
    included: all of its user's where it has one, else the sandbox and its descendants."""
    found: dict[int, float] = {}
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields_ = _stat_fields(entry)
        if fields_ is None:   # zombies count: a child left unreaped keeps its CPU time out of its parent's
            continue
        if uid is not None and _uid_of(entry) != uid:
            continue
        stats[int(entry)] = fields_
        parents[int(entry)] = int(fields_[1])
    if uid is None:
        keep, todo = {root_pid}, [root_pid]
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        while todo:
            for child in children.get(todo.pop(), []):
                keep.add(child)
                todo.append(child)
        stats = {pid: s for pid, s in stats.items() if pid in keep}
    for pid, fields_ in stats.items():
        children = (int(fields_[13]) + int(fields_[14])) / CLOCK_TICKS   # cutime cstime: reaped children
        found[pid] = process_cpu_s(pid, fields_) + children
    return found


def process_cpu_s(pid: int, fields_: list[str]) -> float:
    """A process's own CPU time, its threads' living and ended: to the nanosecond from the kernel's CPU clock
    of that process (clock_getcpuclockid), else from /proc in ticks. Ticks would not do: a reading rounds
    down to 10 ms, so every request whose CPU time crosses a tick would seem to have spent 10 ms."""
    try:
        return time.clock_gettime_ns((~pid << 3) | 2) / 1e9   # CPUCLOCK_SCHED of the whole thread group
    except (OSError, OverflowError, AttributeError):
        return (int(fields_[11]) + int(fields_[12])) / CLOCK_TICKS


# --- the sandbox, seen from the judge --------------------------------------------------------------------

@dataclass
class Exchange:
    reply: Reply
    seconds: float           # the judge's clock, request written to reply read
    cpu_s: float             # the sandbox's CPU time over the same span
    receipt_seed: int | None = None   # a burst's: the seed of the weights its receipts digest outputs with


@dataclass
class SandboxClient:
    process: subprocess.Popen
    requests: int
    replies: int
    uid: int | None
    buffer: bytes = b""
    idle_cpu_s: float = 0.0
    busy_cpu_s: float = 0.0
    last_cpu_s: float | None = None
    extra_processes: dict = field(default_factory=dict)
    watch_processes: bool = False
    copy_s_per_byte: float | None = None   # the sandbox's CPU per byte staged or fetched, calibrated
    copy_s_per_request: float = 0.0        # ... and per copy request of one set, whatever its size
    idle_by: dict = field(default_factory=dict)   # where the idle CPU was seen: "before OP" or "in OP"
    sealed: dict | None = None                    # the unsealing owed the slots staged last (seal.py), if any
    receipts: bool = False                        # every burst's reply carries a digest of each output (receipt.py)
    log_path: str = ""                     # where the sandbox's stdout and stderr go ...
    log_offset: int = 0                    # ... from this byte on: what it printed, for a crash's reason

    COPIES = ("stage", "fetch")
    CALLS = ("call", "warm", "time", "burst")   # requests that call the candidate on staged slots

    def cpu_now(self) -> float:
        processes = sandbox_processes(self.uid, self.process.pid)
        if self.watch_processes:
            others = {pid for pid in processes if pid != self.process.pid}
            if others:
                self.extra_processes = {pid: processes[pid] for pid in others}
        return sum(processes.values())

    def read_line(self) -> bytes:
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.replies], [], [], 1.0)
            if not ready:
                if self.process.poll() is not None:
                    raise self.died()
                continue
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                self.process.wait()
                raise self.died()
            self.buffer += chunk
            if len(self.buffer) > (8 << 20):
                raise ProtocolError("reply longer than 8 MiB without a line end")
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def ask(self, op: str, copied_bytes: int = 0, meanwhile: Callable[[], object] | None = None,
            **args) -> Exchange:
        """One request and its reply, on the judge's clock and the sandbox's CPU time. CPU time between
        requests is idle; so is CPU time a copy request (`copied_bytes` staged or fetched) takes beyond
        what copying that much took before the candidate loaded: a thread that computes answers from the
        arena while inputs are staged is working outside any call. `meanwhile` runs in the judge between
        the request and the reply."""
        if op in ("layout", "stage"):   # what is staged now is plain unless the judge seals it after this request
            self.sealed = None
        elif op in self.CALLS and "unseal" not in args and self.sealed:
            # the seed goes out with the first request that calls the sealed slots, never before (seal.py)
            args["unseal"], self.sealed = self.sealed, None
        if op == "burst" and self.receipts:   # a fresh seed a burst, sent with it: no digest is known before
            args["receipt"] = {"seed": seal.new_seed()}
        cpu_start = self.cpu_now()
        if self.last_cpu_s is not None:
            self.add_idle(f"before {op}", cpu_start - self.last_cpu_s)
        payload = Request(op, args).encode()
        started = time.perf_counter()
        try:
            os.write(self.requests, payload)
        except BrokenPipeError:
            self.process.wait()
            raise self.died() from None
        if meanwhile is not None:
            meanwhile()
        line = self.read_line()
        seconds = time.perf_counter() - started
        cpu_end = self.cpu_now()
        self.last_cpu_s = cpu_end
        spent = max(0.0, cpu_end - cpu_start)
        if op in self.COPIES and self.copy_s_per_byte is not None:
            allowed = 0.005 + 3 * (self.copy_s_per_request + max(self.copy_s_per_byte, 0.2e-9) * copied_bytes)
            self.add_idle(f"in {op}", spent - allowed)
            spent = min(spent, allowed)
        self.busy_cpu_s += spent
        reply = parse_reply(line, op)
        if not reply.ok:
            raise SandboxFailed(reply.status, reply.error)
        if op == "fetch" and len(reply.data["outputs"]) != len(args["positions"]):   # else outputs go unchecked
            raise ProtocolError(f"fetch: {len(reply.data['outputs'])} outputs for {len(args['positions'])} asked")
        if op == "burst":
            owed = reply.data["kept"] if "receipt" in args else 0
            if len(reply.data["receipts"]) != owed:
                raise ProtocolError(f"burst: {len(reply.data['receipts'])} receipts for {owed} outputs kept")
            return Exchange(reply, seconds, cpu_end - cpu_start, args["receipt"]["seed"] if owed else None)
        return Exchange(reply, seconds, cpu_end - cpu_start)

    def end(self) -> None:
        """Ask the process to quit, kill its process group if it has not within 5 s, and close the pipes."""
        try:
            if self.process.poll() is None:
                os.write(self.requests, Request("quit").encode())
                self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for fd in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)

    def died(self) -> SandboxDied:
        return SandboxDied(died_reason(self.process.returncode, read_tail(self.log_path, self.log_offset)
                                       if self.log_path else ""))

    def add_idle(self, where: str, seconds: float) -> None:
        if seconds > 0:
            self.idle_cpu_s += seconds
            self.idle_by[where] = self.idle_by.get(where, 0.0) + seconds

    def idle_summary(self, top: int = 3) -> str:
        largest = sorted(self.idle_by.items(), key=lambda item: -item[1])[:top]
        return ", ".join(f"{seconds * 1e3:.0f} ms {where}" for where, seconds in largest)


def died_reason(code: int | None, output: str = "") -> str:
    """The signal or exit code, then the last lines the sandbox printed (the candidate's own words, not
    torch's import-time warnings)."""
    return crash_reason("sandbox", code, output, " mid-request")


# --- layouts: where each slot lives in the arena ---------------------------------------------------------

def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class Layout:
    shape: str
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    dtype: str
    element_bytes: int
    in_offsets: tuple[tuple[int, ...], ...]   # per input slot, per input
    out_offsets: tuple[int, ...]
    constants: tuple[tuple[int, object], ...] = ()   # forward's non-tensor arguments, (position, value)

    @property
    def slots(self) -> int:
        return len(self.in_offsets)

    @property
    def output_bytes(self) -> int:
        return math.prod(self.output) * self.element_bytes

    @property
    def input_bytes(self) -> int:
        """One input set's bytes."""
        return sum(math.prod(sizes) for sizes in self.inputs) * self.element_bytes

    def arena_claim(self) -> dict:
        """The claim for an output the sandbox already wrote to its arena slot (CPU bursts copy out before replying)."""
        return {"shape": list(self.output), "dtype": self.dtype, "plain": "", "copied": True}

    def message(self, spin_us: float) -> dict:
        return {"shape": self.shape, "inputs": [list(s) for s in self.inputs], "output": list(self.output),
                "dtype": self.dtype, "in_offsets": [list(o) for o in self.in_offsets],
                "out_offsets": list(self.out_offsets), "spin_us": spin_us} | (
            {"constants": [list(c) for c in self.constants]} if self.constants else {})


def plan_layout(shape: str, inputs: list[tuple[int, ...]], output: tuple[int, ...], dtype: str, element_bytes: int,
                slots: int, constants: tuple = ()) -> Layout:
    offset, in_offsets = 0, []
    for _ in range(slots):
        row = []
        for sizes in inputs:
            row.append(offset)
            offset += _aligned(math.prod(sizes) * element_bytes)
        in_offsets.append(tuple(row))
    out_offsets = []
    for _ in range(max(2, slots)):
        out_offsets.append(offset)
        offset += _aligned(math.prod(output) * element_bytes)
    return Layout(shape, tuple(tuple(s) for s in inputs), tuple(output), dtype, element_bytes, tuple(in_offsets),
                  tuple(out_offsets), tuple(constants))


def layout_end(layout: Layout) -> int:
    return layout.out_offsets[-1] + _aligned(layout.output_bytes)


def unseal_as_timed(layout: Layout, slots: list[int]) -> dict:
    """For the harness's empty call: the unsealing a timed request of the candidate does on slots 0 .. len(slots) - 1,
    so that the judge's clock counts its cost on both sides of the subtraction. The empty call reads no input, so
    any seed does."""
    return {"seed": 1, "slots": len(slots)}


# --- what the judge holds against the claims: evidence in, a registry of checks ---------------------------

@dataclass(frozen=True)
class Evidence:
    """What the judge measured itself about one (candidate, shape), beside what the sandbox claimed."""
    device: str                  # "cuda" or "cpu"
    claimed_us: float            # the claimed time per call (the median of the sandbox's samples)
    judge_us: float              # the judge's clock per back-to-back call, less the harness's own empty call
    latency_us: float            # the judge's clock for one call alone (output in the arena on CPU), likewise
    cpu_us: float                # the sandbox user's CPU time per call in those bursts, less the empty call's
    cores: int                   # how many cores the sandbox may run on
    calls: int                   # calls in the bursts, all together
    fetch_s: float | None        # GPU: the quickest fetch of one finished output
    calibrated_fetch_s: float    # the same fetch of the harness's own call, before the candidate loaded
    idle_cpu_s: float            # the sandbox user's CPU time between requests, since the sandbox started
    busy_cpu_s: float            # ... and while serving them
    extra_processes: dict        # pid -> CPU seconds: processes of the sandbox beside it, after the load
    parallelism: float = 1.0     # CPU: the sandbox's CPU time over the judge's wall time in the timed calls
    idle_where: str = ""         # where most of the idle CPU was seen
    slowdown: float = 1.0        # the machine's, since calibration: a twin sandbox's empty call now over then (1-2)


EVIDENCE_CHECKS: dict[str, object] = {}


def evidence_check(check_id: str):
    """Register a check on `Evidence`: it returns why the evidence shows cheating, or ""."""
    def register(function):
        EVIDENCE_CHECKS[check_id] = function
        return function
    return register


def lone_allowance(cpu: bool, claimed_us: float, judge_us: float, cores: int, rules: dict) -> float:
    """How long one call alone may take beyond the harness's own empty call (D108; see below)."""
    ratio, margin = float(rules["clock_ratio"]), float(rules["clock_margin_us"])
    paced_us = max(claimed_us, judge_us)
    return ratio * paced_us * min(cores, 2) + margin if cpu else 2 * ratio * paced_us + 3 * margin


def cores_of(sandbox) -> int:
    return len(os.sched_getaffinity(sandbox.process.pid)) if hasattr(os, "sched_getaffinity") else 1


@evidence_check("D108")
def clock_accounts_for_claim(evidence: Evidence, rules: dict) -> str:
    """The claimed time must account for the judge's clock: one call alone by wall time (no pipelining across
    calls shortens it); then on the GPU, back-to-back calls by wall time; on the CPU, the sandbox user's CPU
    time (threads and processes included), which unlike wall time does not grow when the machine is busy,
    with room for every core it may use and /proc's tick resolution."""
    ratio, margin = float(rules["clock_ratio"]), float(rules["clock_margin_us"])
    # A lone CPU call of a multi-threaded kernel waits for its threads to wake, more so on a busy machine (an
    # honest at::parallel_for call read 1.6x its claim): twice the room, whatever the cores, so that on a
    # machine of many cores work spread across calls cannot hide behind them. A lone GPU call pays host work
    # that back-to-back calls overlap with the device's (launches, allocations, the synchronize, a GPU that
    # idled while inputs were staged): on an H200 honest calls alone read up to 2.1x their claim at the seed
    # shape. Twice the room there too, and three margins: work kept off the timed stream gains at most that.
    # Against the bursts' time per call too, if larger: a loaded machine slows a lone call and the bursts
    # alike (an honest CPU call alone read 3.8x its claim on a 2-core machine running two test suites).
    # A machine slower now than at calibration (measured by a twin sandbox, see Judge.twin_lone_calls) stretches
    # the empty call subtracted and this room alike, by at most 2x.
    lone = evidence.slowdown * lone_allowance(evidence.device != "cuda", evidence.claimed_us, evidence.judge_us,
                                              evidence.cores, rules)
    if evidence.latency_us > lone:
        return (f"one call alone took {evidence.latency_us:.1f} us on the judge's clock beyond the harness's own "
                f"empty call, against a claimed {evidence.claimed_us:.1f} us (allowed {lone:.1f} us): work the "
                "claim leaves running after the call returns")
    if evidence.device != "cuda":
        # As many cores as the timed calls kept busy (CPU time over the judge's wall time there), not every
        # core it may use, so on a many-core machine deferred work cannot hide in the idle ones; but at least
        # two: the bursts come after the timed calls, and on a shared machine the same work's CPU time drifts
        # between the two (an honest single-threaded call read 2.1x its claim in one of four runs on a 2-core VM).
        cores = min(float(evidence.cores), max(2.0, evidence.parallelism))
        allowed = ratio * evidence.claimed_us * cores + margin
        if evidence.cpu_us > allowed:
            return (f"the sandbox used {evidence.cpu_us:.1f} us of CPU per call beyond the harness's own empty call, "
                    f"against a claimed {evidence.claimed_us:.1f} us on the {cores:.2f} cores its timed calls kept "
                    f"busy (allowed {allowed:.1f} us): work the claim does not account for")
        return ""
    if evidence.judge_us > ratio * evidence.claimed_us + margin:
        return (f"the judge's clock measured {evidence.judge_us:.1f} us per call beyond the harness's own empty call, "
                f"against a claimed {evidence.claimed_us:.1f} us (allowed: {ratio:g} x claimed + {margin:g} us): time "
                "the claim does not account for")
    return ""


def quickest_like(samples: list[float], rounds: int) -> float:
    """The order statistic of `samples` at the quantile that the quickest of `rounds` samples of the same spread
    reaches on average, 1/(rounds + 1) (the k-th of n reaches k/(n + 1)): of 7 samples against the quickest of
    3, the second quickest. The judge's figures of the candidate and of the empty call then mean the same."""
    rank = min(len(samples), max(1, round((len(samples) + 1) / (rounds + 1))))
    return sorted(samples)[rank - 1]


def per_call_us(wall_s: float, overhead_s: float, calls: int) -> float:
    """The judge's clock per back-to-back call of a burst, less the harness's own empty burst of as many calls."""
    return max(0.0, (wall_s - overhead_s) / calls * 1e6)


@dataclass(frozen=True)
class TwinBursts:
    """Bursts of the candidate (fresh inputs, an output checked in secret) timed alternating with a twin sandbox's
    empty bursts of as many calls, the candidate stopped while the twin is timed (Judge.bursts_beside_twin)."""
    calls: int
    walls_s: tuple[float, ...]         # the candidate's bursts, on the judge's clock
    cpu_s: tuple[float, ...]           # ... and the sandbox user's CPU time in each
    twin_walls_s: tuple[float, ...]    # the twin's empty bursts
    twin_cpu_s: tuple[float, ...]


def beside_twin(evidence: Evidence, bursts: TwinBursts, calibrated_s: float, calibrated_cpu_per_call_s: float
                ) -> Evidence:
    """The bursts' figures taken again against the empty burst timed now by the twin, not the one calibrated
    before the candidate loaded: at a large shape a burst holds 3 calls, and a calibration that caught a
    lucky-fast empty burst (264 us against 510-705 in other processes on an H200) subtracted ~400 us too little.
    Quickest against quickest, wall time and CPU time, as in the first look. Never more than the twin measured is
    subtracted, nor more than twice calibration (as the lone calls' slowdown is capped): a candidate that
    slowed the twin (work left on the GPU while it was stopped) buys at most one calibrated empty burst over
    the burst's calls."""
    calls = bursts.calls
    judge_us = per_call_us(min(bursts.walls_s), empty_burst_now_s(bursts, calibrated_s), calls)
    cpu_overhead_s = min(min(bursts.twin_cpu_s) / calls, 2.0 * calibrated_cpu_per_call_s)
    cpu_us = max(0.0, min(bursts.cpu_s) / calls - cpu_overhead_s) * 1e6
    return dataclasses.replace(evidence, judge_us=judge_us, cpu_us=cpu_us)


def empty_burst_now_s(bursts: TwinBursts, calibrated_s: float) -> float:
    """The empty burst beside_twin subtracts: the twin's quickest, at most twice the calibrated one."""
    return min(min(bursts.twin_walls_s), 2.0 * calibrated_s)


def bursts_failed(evidence: Evidence, rules: dict) -> bool:
    """Whether D108 fails on the bursts (GPU wall time, CPU time), whatever the lone calls read."""
    return bool(clock_accounts_for_claim(dataclasses.replace(evidence, latency_us=0.0), rules))


@evidence_check("D109")
def nothing_running_after_return(evidence: Evidence, rules: dict) -> str:
    """A fetch of finished outputs waits for nothing: one slower than twice the calibrated fetch plus a margin
    waited for work still running after the calls returned."""
    if evidence.fetch_s is None:
        return ""
    allowed = 2 * evidence.calibrated_fetch_s + float(rules["fetch_margin_ms"]) / 1e3
    if evidence.fetch_s > allowed:
        return (f"fetching one finished output took {evidence.fetch_s * 1e3:.2f} ms against "
                f"{evidence.calibrated_fetch_s * 1e3:.2f} ms calibrated: work still running after the calls returned")
    return ""


@evidence_check("D110")
def no_work_between_requests(evidence: Evidence, rules: dict) -> str:
    """Between two requests the sandbox has nothing to do: CPU time it burns then is work outside any call
    (precomputing inputs read from the arena, finishing answers late)."""
    allowed = float(rules["idle_cpu_ms"]) / 1e3 + 0.05 * evidence.busy_cpu_s
    if evidence.idle_cpu_s > allowed:
        where = f"; most of it {evidence.idle_where}" if evidence.idle_where else ""
        return (f"the sandbox burnt {evidence.idle_cpu_s * 1e3:.0f} ms of CPU between requests (allowed "
                f"{allowed * 1e3:.0f} ms{where}): work done outside any call")
    return ""


@evidence_check("D114")
def no_process_beside_the_sandbox(evidence: Evidence, rules: dict) -> str:
    """A candidate starts nothing: a process of the sandbox's user alive beside it after the load is a daemon
    or a helper working out of sight."""
    if evidence.extra_processes:
        return (f"{len(evidence.extra_processes)} process(es) of the sandbox's user beside it (pids "
                f"{sorted(evidence.extra_processes)[:5]}): a candidate starts nothing")
    return ""


@dataclass(frozen=True)
class SecondLook:
    """A shape whose lone calls alone failed D108 at first: what retaking them after the other shapes needs."""
    layout: Layout
    method: str
    rounds: int
    evidence: Evidence
    reason: str          # the first look's verdict


def passes_checks(evidence: Evidence, rules: dict) -> bool:
    try:
        run_checks(evidence, rules)
    except Integrity:
        return False
    return True


def run_checks(evidence: Evidence, rules: dict) -> None:
    """Every registered check in ID order; the first that finds something ends the row as integrity."""
    for check_id in sorted(EVIDENCE_CHECKS):
        reason = EVIDENCE_CHECKS[check_id](evidence, rules)
        if reason:
            raise Integrity(check_id, reason)


# --- the judge -------------------------------------------------------------------------------------------

class Judge:
    def __init__(self, job: EvaluateJob, emit, load: bool = True):
        """With `load`, imports torch and the problem at once; else `load()` does, e.g. while the sandbox,
        already started, imports torch itself (main)."""
        self.job = job
        self.emit = emit
        self.settings = dict(job.timing)
        self.rules = dict(job.judge)
        self.secret_seed = int(job.secret_seed)
        self.random = secrets.SystemRandom()
        self.layouts: dict[str, Layout] = {}
        self.calibration: dict[str, dict] = {}
        self.sandbox: SandboxClient | None = None
        self.confinement: dict = {}
        self.private_tmp: Path | None = None
        self.costs: dict[str, float] = {}
        self.arena_fd: int | None = None
        self.arena: mmap.mmap | None = None
        self.gold_graphs = None
        self.second_looks: dict[str, SecondLook] = {}
        if load:
            self.load()

    def load(self) -> None:
        """torch, the problem and the float64 gold model (on the host)."""
        import torch

        from harness.problem import import_reference, load_problem, override_tolerance

        self.torch = torch
        self.device = torch.device(self.job.device)
        # `run --rtol/--atol` travel in the config's judge section, so the records' config says which tolerance held
        self.problem = override_tolerance(load_problem(self.job.problem_path), **self.rules.get("tolerance", {}))
        reference_module = import_reference(self.problem)
        with seeded(INIT_SEED):   # random weights drawn as the sandbox draws them for the reference and candidate
            self.gold_model = reference_module.Model(*self.problem.init_inputs).double().eval()

    def begin(self) -> None:
        """The GPU's part of setting up, once the runner lets this judge go (everything before is host work:
        a judge started early waits for the GPU without touching it)."""
        from harness.verify import GoldGraphs
        self.gold_model = self.gold_model.to(self.device)
        if self.device.type == "cuda" and self.rules.get("gold_graphs", "auto") == "auto":
            self.gold_graphs = GoldGraphs(self.gold_model)

    @contextlib.contextmanager
    def cost(self, phase: str):
        """Wall time of one of the judge's phases, summed per shape: what each defence costs (README)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.costs[phase] = self.costs.get(phase, 0.0) + time.perf_counter() - started

    # --- inputs, gold and the arena ----------------------------------------------------------------------
    def draw(self, shape, case, seed: int) -> list:
        from harness.verify import make_inputs
        return make_inputs(self.problem, shape, case, seed, self.device)

    def gold(self, inputs: list):
        from harness.verify import gold_output
        with self.cost("gold"):
            gold = self.gold_graphs(inputs) if self.gold_graphs is not None else gold_output(self.gold_model, inputs)
            if self.device.type == "cuda":   # the comparison that follows would wait for it anyway
                self.torch.cuda.synchronize()
        return gold

    def layout_for(self, shape, slots: int) -> Layout:
        from harness.verify import DTYPES
        dtype = DTYPES[self.problem.dtype]
        inputs = [spec.sizes(shape) for spec in self.problem.inputs]
        probe = self.draw(shape, None, 0)
        output = tuple(self.gold(probe).shape)
        del probe
        element = self.torch.empty((), dtype=dtype).element_size()
        return plan_layout(shape.name, inputs, output, self.problem.dtype, element, slots, self.problem.constants)

    def slots_for(self, shape) -> int:
        from harness.verify import DTYPES
        element = self.torch.empty((), dtype=DTYPES[self.problem.dtype]).element_size()
        sizes = [math.prod(spec.sizes(shape)) for spec in self.problem.inputs]
        per_set = (sum(sizes) + max(sizes)) * element   # the inputs, and an output about the largest input's size
        budget = float(self.rules["input_memory_mb"]) * 2**20
        return max(1, min(MAX_SLOTS, int(budget // max(1, per_set))))

    def write_inputs(self, layout: Layout, slot: int, inputs: list, arena=None) -> None:
        from harness.verify import tensors_of
        for offset, tensor in zip(layout.in_offsets[slot], tensors_of(inputs)):
            self.arena_view(offset, tuple(tensor.shape), tensor.dtype, arena).copy_(tensor)

    def arena_view(self, offset: int, shape: tuple, dtype, arena=None):
        count = math.prod(shape)
        nbytes = count * self.torch.empty((), dtype=dtype).element_size()
        arena = self.arena_bytes if arena is None else arena
        return arena[offset:offset + nbytes].view(dtype).view(shape)

    def read_output(self, layout: Layout, out_slot: int, claim: dict, like):
        """The output bytes the sandbox copied into a slot, as the judge's own tensor; its claim about the
        output decides only the reason given when the bytes cannot be the answer."""
        if claim["plain"]:
            raise Integrity("D102", claim["plain"])
        if not claim["copied"]:
            expected_dtype = str(like.dtype).replace("torch.", "")
            if tuple(claim["shape"]) != tuple(layout.output):
                raise Wrong(f"output shape {tuple(claim['shape'])}, expected {tuple(layout.output)}")
            if claim["dtype"] != expected_dtype:
                raise Wrong(f"output dtype {claim['dtype']}, expected {expected_dtype}")
            raise Wrong(f"output on another device ({claim['dtype']}), expected {self.device.type}")
        view = self.arena_view(layout.out_offsets[out_slot], layout.output, like.dtype)
        return view.to(self.device, copy=True)

    # --- the sandbox ------------------------------------------------------------------------------------
    def start_sandbox(self, wait: bool = True) -> None:
        """The candidate's sandbox, started and confined; it maps the arena and touches the GPU only when
        `open_arena` says hello. With `wait`, returns once its imports are done; else `sandbox_ready()` waits."""
        job = self.job
        uid = confine.sandbox_uid(job.sandbox_slot) if job.sandbox_slot is not None and confine.can_drop_privileges() else None
        if uid is not None:
            confine.kill_user(uid)   # whatever an earlier sandbox of this user left
        keep = dict(job.sandbox_env)
        binds: list[tuple[str, str]] = []
        self.extension_copy = None
        extension_dir = Path(job.extension_dir) if job.extension_dir else None
        build_cache = ""
        if extension_dir is not None and extension_dir.exists():
            if uid is not None and spawn.mounts_possible():
                # torch's loader takes a lock and may rewrite files in the build folder: the sandbox gets a
                # private copy at the path the build used, so nothing in the shared cache can change
                self.extension_copy = Path(tempfile.mkdtemp(prefix="harness-ext-copy-"))
                os.chmod(self.extension_copy, 0o755)
                shutil.copytree(extension_dir, self.extension_copy / "ext", symlinks=True)
                binds.append((str(self.extension_copy / "ext"), str(spawn.extension_mount())))
                keep["TORCH_EXTENSIONS_DIR"] = str(spawn.EXTENSION_MOUNT)
                build_cache = "a private copy: the shared cache is out of the sandbox's reach"
            else:
                keep["TORCH_EXTENSIONS_DIR"] = str(extension_dir)
                build_cache = "shared: no separate user or mount namespace"
        # the loader writes a lock (and, were the build stale, the build) where the sandbox sees its extension:
        # its private copy, or without root the cache folder itself (then nothing keeps it from changing it)
        writable = [self.extension_copy / "ext"] if self.extension_copy is not None else (
            [extension_dir] if extension_dir is not None and extension_dir.exists() else [])
        if keep.get("TORCHINDUCTOR_CACHE_DIR") and uid is None:   # the torch.compile baseline (trusted) fills it
            Path(keep["TORCHINDUCTOR_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
            writable.append(Path(keep["TORCHINDUCTOR_CACHE_DIR"]))
        self.writable = writable
        self.private_tmp, confinement = confine.prepare_sandbox(uid, writable)
        self.confinement = confinement.to_json() | ({"build_cache": build_cache} if build_cache else {})
        self.candidate_path = job.candidate_path
        if job.candidate_path:   # its own copy: the sandbox's user may not reach the original's folder
            copy = self.private_tmp / "candidate.py"
            shutil.copyfile(job.candidate_path, copy)
            self.candidate_path = str(copy)
            if uid is not None:
                os.chown(copy, uid, uid)
        cores = self.sandbox_cores()
        if cores:
            self.confinement["pinned_cores"] = sorted(cores)
        self.stash = Path(tempfile.mkdtemp(prefix="harness-stash-")) if uid is not None and spawn.mounts_possible() else None
        self.sandbox, self.arena_fd = self.spawn(job.candidate_id or job.baseline, uid, confinement,
                                                 confine.sandbox_env(self.private_tmp, keep), self.private_tmp, cores,
                                                 binds, self.stash)
        if wait:
            self.sandbox_ready()

    def move_to_lane(self, cores: tuple[int, ...]) -> None:
        """Onto the cores the runner keeps for this GPU's lane, the sandbox too: until the gate they shared the
        other cores with the compiles, so as not to disturb the judge timing before them."""
        from harness.spawn import move_process
        try:
            move_process(os.getpid(), cores)
            self.torch.set_num_threads(len(cores))   # its thread pool was sized for the cores it had at import
            if self.sandbox is not None:
                move_process(self.sandbox.process.pid, cores)
            self.confinement["lane_cores"] = list(cores)
        except OSError as exc:   # e.g. a judge that may not move its sandbox's user: timed where it is, and said so
            self.confinement["lane_cores"] = f"not moved: {exc}"

    def sandbox_ready(self) -> None:
        self.sandbox.ask("ready")   # its imports done, before the judge waits for the GPU

    def planned_shapes(self) -> list[tuple[object, int]]:
        """Each shape the judge lays out in the arena, with its input slots: the timed shapes, then the check
        shapes (one set each, correctness only; baselines run none)."""
        checks = [] if self.job.baseline else list(getattr(self.problem, "check_shapes", {}).values())
        return [(self.problem.shapes[name], self.slots_for(self.problem.shapes[name])) for name in self.job.shapes] \
            + [(shape, 1) for shape in checks]

    def map_arena_ahead(self) -> None:
        """Host work while the judge waits for the GPU: size the arena for the layouts to come (taking the output
        to be the size of the largest input; a larger one is mapped afresh after the gate), allocate its pages
        and fault them into the judge's and the sandbox's mappings. Page-locking them after the gate is then
        quick: 0.17 s against 2.3 s for 4.2 GiB on an H200 host (tools/gold_bench.py)."""
        if self.problem.input_source == "get_inputs":   # a KernelBench file's own inputs: sizes known only once drawn
            return
        from harness.timing import populate_pages
        from harness.verify import DTYPES
        element = self.torch.empty((), dtype=DTYPES[self.problem.dtype]).element_size()
        ends = []
        for shape, slots in self.planned_shapes():
            inputs = [spec.sizes(shape) for spec in self.problem.inputs]
            ends.append(layout_end(plan_layout(shape.name, inputs, max(inputs, key=math.prod), self.problem.dtype,
                                               element, slots, self.problem.constants)))
        size = max(ends)
        available = available_memory()
        if available is not None and 2 * size > available:   # the judge before this one holds an arena as large
            self.confinement["arena_ahead"] = (f"not mapped: {size >> 20} MiB, with {available >> 20} MiB available "
                                               "beside the arena of the evaluation before")
            return
        try:
            os.ftruncate(self.arena_fd, size)
            os.posix_fallocate(self.arena_fd, 0, size)
            self.arena = mmap.mmap(self.arena_fd, size)
        except OSError as exc:   # e.g. short of memory now: sized and mapped after the gate, as without this
            self.confinement["arena_ahead"] = f"not mapped: {exc}"
            return
        populated = {}
        reply = self.sandbox.ask("map", arena_bytes=size,
                                 meanwhile=lambda: populated.update(judge=populate_pages(self.arena))).reply.data
        self.confinement["arena_ahead"] = {"bytes": size, "populated": bool(populated.get("judge") and reply.get("populated"))}

    def open_arena(self, arena_bytes: int) -> None:
        self.arena, hello = self.attach_arena(self.sandbox, self.arena_fd, arena_bytes, pin=True, mapped=self.arena)
        self.arena_bytes = self.torch.frombuffer(self.arena, dtype=self.torch.uint8)
        if self.sandbox.uid is not None and hello["uid"] != self.sandbox.uid:
            raise Integrity("D112", f"sandbox says it runs as uid {hello['uid']}, expected {self.sandbox.uid}")

    def attach_arena(self, sandbox: "SandboxClient", fd: int, arena_bytes: int, pin: bool,
                     mapped: mmap.mmap | None = None) -> tuple[mmap.mmap, dict]:
        """Size the arena, map it here and in the sandbox (its hello), and on CUDA page-lock both mappings, the
        two at once (each took ~2 s for 4.2 GB on an H200 host, one after the other). `mapped`: the mapping
        map_arena_ahead made, kept where it is large enough."""
        if mapped is not None and len(mapped) >= max(arena_bytes, 1):
            arena, size = mapped, len(mapped)
        else:
            if mapped is not None:
                mapped.close()
            size = max(arena_bytes, 1)
            os.ftruncate(fd, size)
            arena = mmap.mmap(fd, size)
        os.close(fd)

        def pin_here() -> None:
            from harness.timing import pin_for_copies
            with setup_phase("pin_arena"):
                self.confinement["arena"] = pin_for_copies(self.torch.frombuffer(arena, dtype=self.torch.uint8)) \
                    or "pinned"

        pinning = pin and self.device.type == "cuda"
        hello = sandbox.ask("hello", arena_bytes=size, pin=pin, meanwhile=pin_here if pinning else None).reply.data
        return arena, hello

    def spawn(self, label: str, uid: int | None, confinement, env: dict, cwd: Path,
              cores: set[int] | None, binds: list[tuple[str, str]] = (), stash: Path | None = None
              ) -> tuple[SandboxClient, int]:
        """A sandbox process serving requests on two pipes, and the memfd of its arena (sized and mapped by
        attach_arena); its output goes to the log."""
        from harness.env import REPO_ROOT

        job = self.job
        fd = os.memfd_create("harness-arena", 0)
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        command = [sys.executable, "-I", "-c",
                   f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); from harness.sandbox import main; main(sys.argv[1:])",
                   str(requests_read), str(replies_write), str(fd), job.device,
                   label]   # the last only names the process for ps
        preexec = confine.preexec(uid, confinement)
        if cores:
            confined, preexec = preexec, lambda: (os.sched_setaffinity(0, cores), confined())
        log = open(job.log_path, "ab") if job.log_path else subprocess.DEVNULL
        log_offset = os.path.getsize(job.log_path) if job.log_path else 0   # the judge's own lines come before
        try:
            process = subprocess.Popen(command, pass_fds=(requests_read, replies_write, fd), env=env, cwd=str(cwd),
                                       stdout=log, stderr=subprocess.STDOUT,
                                       preexec_fn=spawn.with_binds(list(binds), preexec, stash), start_new_session=True)
        finally:
            for unused in (requests_read, replies_write):
                os.close(unused)
            if log is not subprocess.DEVNULL:
                log.close()
        return SandboxClient(process, requests_write, replies_read, uid, log_path=job.log_path,
                             log_offset=log_offset, receipts=self.receipts()), fd

    def receipts(self) -> bool:
        """Whether bursts carry receipts (receipt.py): on the GPU, where a reply can leave before the work ends;
        on the CPU too with `judge.receipts: always` (a burst there copies its outputs out before replying)."""
        return self.job.device.split(":")[0] == "cuda" or self.rules.get("receipts", "auto") == "always"

    def sandbox_cores(self) -> set[int] | None:
        """CPU runs with `timing.cpu_pin: auto` on 4 cores or more: the sandbox gets every core but one, which
        the judge keeps, so the judge's own work never lands on a timed call's core and the sandbox's threads
        stay on a fixed set. On fewer cores that would take away a quarter or more of a multi-threaded
        candidate's cores, so nothing is pinned there."""
        if self.job.device != "cpu" or self.settings.get("cpu_pin", "auto") != "auto" \
                or not hasattr(os, "sched_getaffinity"):
            return None
        available = sorted(os.sched_getaffinity(0))
        if len(available) < 4:
            return None
        os.sched_setaffinity(0, {available[0]})
        return set(available[1:])

    def stop_sandbox(self) -> None:
        sandbox = self.sandbox
        if sandbox is not None:
            sandbox.end()
            confine.kill_user(sandbox.uid)
        if self.private_tmp is not None:
            confine.release_sandbox(self.private_tmp, getattr(self, "writable", []))
        if getattr(self, "extension_copy", None) is not None:
            shutil.rmtree(self.extension_copy, ignore_errors=True)
        if getattr(self, "stash", None) is not None:
            shutil.rmtree(self.stash, ignore_errors=True)

    # --- calibration, before any candidate code is loaded -----------------------------------------------
    def calibrate(self, shape, layout: Layout) -> dict:
        started = time.perf_counter()
        return self.calibrate_clock(shape, layout) | {"seconds": time.perf_counter() - started}

    def calibrate_clock(self, shape, layout: Layout) -> dict:
        """The judge's clock on the harness's own near-empty call, the same way it will time the candidate:
        a burst of `slots` calls, and a fetch of one output. Runs before the candidate is imported, so the
        candidate cannot slow it to buy itself slack."""
        sandbox = self.sandbox
        sandbox.ask("layout", **layout.message(float(self.settings.get("spin_us", 40.0))))
        for slot in range(layout.slots):
            self.write_inputs(layout, slot, self.draw(shape, None, 1 + slot))
        staged = sandbox.ask("stage", slots=list(range(layout.slots)))
        rate = staged.cpu_s / max(1, layout.slots * layout.input_bytes)
        sandbox.copy_s_per_byte = max(sandbox.copy_s_per_byte or 0.0, rate)
        one = min(sandbox.ask("stage", slots=[0]).cpu_s for _ in range(3))
        sandbox.copy_s_per_request = max(sandbox.copy_s_per_request, one)
        copy_out = self.device.type != "cuda"
        singles, fulls, fetches, cpus = [], [], [], []
        rounds = max(3, int(self.rules["bursts"]))
        every = list(range(layout.slots))
        for _ in range(rounds):
            sandbox.ask("burst", slots=[0], copy_out=copy_out)   # untimed, as before each lone call (lone_call)
            single = sandbox.ask("burst", slots=[0], copy_out=copy_out, unseal=unseal_as_timed(layout, [0]))
            singles.append(single.seconds)
            full = sandbox.ask("burst", slots=every, copy_out=copy_out, unseal=unseal_as_timed(layout, every))
            fulls.append(full.seconds)
            cpus.append(full.cpu_s)
            fetches.append(sandbox.ask("fetch", layout.output_bytes, positions=[0], out_slots=[0]).seconds)
        # The candidate's bursts are judged by their quickest of `rounds` (wall time and CPU time); the empty
        # burst by as low a quantile of twice as many and one, so that one lucky-fast empty burst cannot set it
        # (at the large shape a burst holds 3 calls, and an H200 calibration read 264 us where other evaluations
        # read 510-705)
        for _ in range(rounds + 1):
            full = sandbox.ask("burst", slots=every, copy_out=copy_out, unseal=unseal_as_timed(layout, every))
            fulls.append(full.seconds)
            cpus.append(full.cpu_s)
        single, full_s = min(singles), quickest_like(fulls, rounds)
        per_call = (full_s - single) / (layout.slots - 1) if layout.slots > 1 else 0.0
        return {"round_trip_s": max(0.0, single - max(0.0, per_call)), "per_call_s": max(0.0, per_call),
                "fetch_s": min(fetches), "cpu_per_call_s": quickest_like(cpus, rounds) / layout.slots,
                "empty_us": {"single": [round(x * 1e6, 1) for x in singles], "full": [round(x * 1e6, 1) for x in fulls]}}

    # --- verification -----------------------------------------------------------------------------------
    def verify(self, shape, layout: Layout, check_reference: bool) -> dict:
        from harness.verify import compare, is_near_constant, tensors_of, trials_for

        torch = self.torch
        sandbox = self.sandbox
        sandbox.ask("layout", **layout.message(float(self.settings.get("spin_us", 40.0))))
        worst_abs, worst_rel, worst_case, golds, count = 0.0, 0.0, "", [], 0
        previous, threads_after_first = None, None
        for trial, case in trials_for(self.problem, self.secret_seed, shape):
            inputs = self.draw(shape, case, trial.seed)
            self.write_inputs(layout, 0, inputs)
            sandbox.ask("stage", layout.input_bytes, slots=[0])
            reply = sandbox.ask("call", slot=0, out_slots=[0, 1], poison=True).reply.data
            if len(reply["outputs"]) != 2:
                raise Integrity("D112", f"{len(reply['outputs'])} outputs for 2 calls")
            if threads_after_first is not None and reply["threads_after"] > max(reply["threads_before"], threads_after_first):
                raise Integrity("D104", f"{reply['threads_after'] - reply['threads_before']} more threads after the call")
            threads_after_first = reply["threads_after"] if threads_after_first is None else threads_after_first
            if reply["inputs_changed"] >= 0:
                index = reply["inputs_changed"]
                name = self.problem.inputs[index].name if index < len(self.problem.inputs) else str(index)
                raise Integrity("D101", f"input {name} was modified by the call")
            gold = self.gold(inputs)
            like = tensors_of(inputs)[0]
            first = self.read_output(layout, 0, reply["outputs"][0], like)
            max_abs, rel, ok, reason = compare(first, gold, self.problem)
            if not ok:
                if previous is not None and torch.equal(first, previous):
                    raise Integrity("D103", "returned the previous inputs' answer for new inputs in the same "
                                            "buffers (result cached by address or shape)")
                raise Wrong(f"{case.name}: {reason}")
            second = self.read_output(layout, 1, reply["outputs"][1], like)
            _, _, same, reason = compare(second, first.double(), self.problem)
            if not same:
                raise Integrity("D105", f"second call on the same inputs differs: {reason}")
            count += 1
            worst_abs = max(worst_abs, max_abs)
            if rel >= worst_rel:
                worst_rel, worst_case = rel, case.name
            if case.name == "default" and check_reference:
                golds.append(gold)
            previous = first
            del inputs, gold, second
        result = {"trials": count, "max_abs_err": worst_abs, "max_rel_err": worst_rel, "worst_case": worst_case}
        if check_reference and is_near_constant(golds):
            result["near_constant"] = True
        return result

    # --- timing -------------------------------------------------------------------------------------------
    def check_fetched(self, shape, layout: Layout, seeds: list[int], positions: list[int], claims: list[dict],
                      check_id: str, what: str, out_slots: list[int] | None = None,
                      burst: Exchange | None = None) -> None:
        """Each output read from its slot against the gold of its inputs (`check_id`), and, where `burst` carried
        receipts, against the burst's receipt for it (D115)."""
        from harness.verify import compare, tensors_of

        out_slots = out_slots if out_slots is not None else list(range(len(positions)))
        for out_slot, position, claim in zip(out_slots, positions, claims):
            inputs = self.draw(shape, None, seeds[position])
            gold = self.gold(inputs)
            try:
                out = self.read_output(layout, out_slot, claim, tensors_of(inputs)[0])
            except Wrong as exc:
                raise Integrity(check_id, f"{what} output {position}: {exc}") from None
            _, _, ok, reason = compare(out, gold, self.problem)
            if not ok:
                raise Integrity(check_id, f"{what} output {position}, checked in secret, is wrong on inputs it "
                                          f"had never seen: {reason}")
            if burst is not None and burst.receipt_seed is not None:
                self.check_receipt(burst, position, out, what)

    def stage_fresh(self, shape, layout: Layout, tag: str, batch: int, count: int | None = None,
                    before_write: Callable[[], object] | None = None) -> list[int]:
        """Inputs never seen before in the first `count` slots (all by default); returns their seeds.
        `before_write` runs once they are drawn, before any reaches the arena (the sandbox cannot see them yet)."""
        from harness.verify import derive_seed, tensors_of
        count = layout.slots if count is None else count
        seeds = [derive_seed(self.secret_seed, "timing", shape.name, tag, batch, i) for i in range(count)]
        drawn = None
        if before_write is not None:   # every set held at once: only for the few slots of a lone call
            with self.cost("fresh_inputs"):
                drawn = [self.draw(shape, None, seed) for seed in seeds]
            before_write()
        secret = seal.new_seed()
        with self.cost("fresh_inputs"):
            begin, end = seal.region(layout.in_offsets, layout.out_offsets, count)
            stream = seal.keystream(secret, end - begin, self.device)
            for slot, seed in enumerate(seeds):
                tensors = [t.contiguous() for t in tensors_of(drawn[slot] if drawn else self.draw(shape, None, seed))]
                for offset, tensor in zip(layout.in_offsets[slot], tensors):
                    seal.xor_(tensor, stream[offset - begin:offset - begin + tensor.numel() * tensor.element_size()])
                self.write_inputs(layout, slot, tensors)
            del stream
            self.sandbox.ask("stage", count * layout.input_bytes, slots=list(range(count)))
        self.sandbox.sealed = {"seed": secret, "slots": count}   # sent with the request that calls them
        return seeds

    def time(self, shape, layout: Layout, method: str, baseline: bool) -> dict:
        from harness import timing

        settings, sandbox = self.settings, self.sandbox
        sandbox.ask("layout", **layout.message(float(settings["spin_us"])))
        self.stage_fresh(shape, layout, "warm", 0, 1)
        sandbox.ask("warm", slot=0, iters=int(settings["warmup_iters"]), ms=float(settings["warmup_ms"]),
                    budget_s=float(settings["budget_s"]))
        samples: list[float] = []
        empty: list[float] = []
        discarded, checked, batch, host_bound, spin = 0, 0, 0, False, 0.0
        timed_s = timed_cpu_s = 0.0
        started = time.perf_counter()
        wanted = int(self.rules["checked_outputs"])
        probability = float(self.rules["check_probability"])
        while True:
            batch += 1
            seeds = self.stage_fresh(shape, layout, "timed", batch)
            with self.cost("timed_calls"):
                exchange = sandbox.ask("time", slots=list(range(layout.slots)), method=method, settings=settings)
            timed_s += exchange.seconds
            timed_cpu_s += exchange.cpu_s
            data = exchange.reply.data
            new = finite_numbers("time.samples_us", data["samples_us"], 0.0, 1e9)
            overhead = finite_numbers("time.empty_us", data["empty_us"], 0.0, 1e9)
            if data["kept"] != layout.slots or len(new) + data["discarded"] != layout.slots:
                raise Integrity("D112", f"{data['kept']} outputs kept and {len(new)} samples for {layout.slots} calls")
            if data["host_bound"] and not host_bound:   # every sample of a call is timed the same way
                discarded += len(samples)
                samples.clear()
                empty.clear()
            host_bound, spin = data["host_bound"], float(data["spin_us"])
            samples += new
            empty += overhead
            discarded += data["discarded"]
            wall_s = time.perf_counter() - started
            if not samples and wall_s > 16 * float(settings["budget_s"]):
                raise RuntimeError(f"no call could be timed in {wall_s:.1f} s ({discarded} outran the spin)")
            done = _enough(samples, timed_s, wall_s, settings)
            positions = [i for i in range(layout.slots) if self.random.random() < probability]
            if not positions:
                positions = [self.random.randrange(layout.slots)]
            if done and checked + len(positions) < wanted:
                rest = [i for i in range(layout.slots) if i not in positions]
                self.random.shuffle(rest)
                positions += rest[:wanted - checked - len(positions)]
            positions.sort()
            with self.cost("secret_checks"):
                reply = sandbox.ask("fetch", len(positions) * layout.output_bytes, positions=positions,
                                    out_slots=list(range(len(positions)))).reply.data
                if len(reply["outputs"]) != len(positions):
                    raise Integrity("D112", f"{len(reply['outputs'])} outputs fetched for {len(positions)} asked")
                self.check_fetched(shape, layout, seeds, positions, reply["outputs"], "D103", "timed")
            checked += len(positions)
            if done and checked >= wanted:
                break
        if not samples:
            raise RuntimeError(f"no call could be timed ({discarded} outran the spin)")
        events = None
        if self.device.type == "cuda" and method != "host":
            events = timing.EventSamples(samples, empty, spin, discarded, host_bound)
            samples = events.device_us(bool(settings["subtract_event_overhead"]))
        result = timing.summarize(method if self.device.type == "cuda" else "host", samples, 0.0, events,
                                  bool(settings["subtract_event_overhead"]))
        timing_json = result.to_json() | {"checked_outputs": checked, "timed_batches": batch,
                                          "slots_per_batch": layout.slots,
                                          "load_1min": round(os.getloadavg()[0], 2)}   # this run's processes included
        try:
            with self.cost("bursts"):
                judge = self.cross_check(shape, layout, result.median_us, baseline, method,
                                         timed_cpu_s / timed_s if timed_s > 0 else 1.0)
        except Integrity as exc:   # the claim and the judge's clocks, so a reader can weigh the verdict
            exc.evidence = timing_json | exc.evidence | self.phases()
            raise
        timing_json |= judge | self.phases()
        return {"timing": timing_json, "time_us": result.median_us, "host_us": judge.get("judge_us")}

    def phases(self) -> dict:
        """Where the judge's time went: this shape's phases, the setup's, and the time since it started."""
        phases = {"judge_costs_s": {k: round(v, 3) for k, v in self.costs.items()},
                  "judge_setup_s": {k: round(v, 3) for k, v in SETUP.items()},
                  "judge_elapsed_s": round(time.monotonic() - STARTED, 3)}
        if self.gold_graphs is not None:
            phases["judge_gold_graphs"] = self.gold_graphs.summary()
        return phases

    def checked_burst(self, shape, layout: Layout, method: str, calls: int, index: int
                      ) -> tuple[Exchange, float | None]:
        """One burst of `calls` back-to-back calls on fresh inputs (seeds of burst `index`); one output, drawn
        in secret, is checked (D103). Returns the burst's exchange and, on the GPU, the fetch's seconds."""
        sandbox, cpu = self.sandbox, self.device.type != "cuda"
        seeds = self.stage_fresh(shape, layout, "burst", index, calls)
        exchange = sandbox.ask("burst", slots=list(range(calls)), copy_out=cpu, method=method)
        if exchange.reply.data["kept"] != calls:
            raise Integrity("D112", f"{exchange.reply.data['kept']} outputs kept for {calls} calls")
        position = self.random.randrange(calls)
        if cpu:   # already in the arena: written before the reply
            self.check_fetched(shape, layout, seeds, [position], [layout.arena_claim()], "D103", "burst", [position],
                               burst=exchange)
            self.check_receipts(layout, exchange, [other for other in range(calls) if other != position])
            return exchange, None
        fetched = sandbox.ask("fetch", layout.output_bytes, positions=[position], out_slots=[0])
        self.check_fetched(shape, layout, seeds, [position], fetched.reply.data["outputs"], "D103", "burst",
                           burst=exchange)
        self.check_receipts(layout, exchange, [other for other in range(calls) if other != position])
        return exchange, fetched.seconds

    def check_receipts(self, layout: Layout, burst: Exchange, positions: list[int]) -> None:
        """The receipts of a burst's other outputs against their bytes (D115), as many as RECEIPT_FETCH_BYTES
        allows, drawn in secret: a sandbox that replied before part of its work ended cannot know which receipts
        it may forge. Only the output checked against gold costs a float64 reference; these cost a fetch."""
        if burst.receipt_seed is None or not positions:
            return
        budget = max(0, RECEIPT_FETCH_BYTES // max(1, layout.output_bytes))
        positions = sorted(self.random.sample(positions, min(len(positions), budget)))
        if not positions:
            return
        if self.device.type == "cuda":   # on the CPU every output is in the arena already, at its position
            claims = self.sandbox.ask("fetch", len(positions) * layout.output_bytes, positions=positions,
                                      out_slots=positions).reply.data["outputs"]
        else:
            claims = [layout.arena_claim()] * len(positions)
        like = self.torch.empty(0, dtype=getattr(self.torch, layout.dtype))
        for position, claim in zip(positions, claims):
            try:
                out = self.read_output(layout, position, claim, like)
            except Wrong as exc:
                raise Integrity("D103", f"burst output {position}: {exc}") from None
            self.check_receipt(burst, position, out, "burst")

    def check_receipt(self, burst: Exchange, position: int, out, what: str) -> None:
        """One output against the receipt its burst's reply gave for it (D115)."""
        with self.cost("receipts"):
            why = receipt.mismatch(burst.reply.data["receipts"][position], out, burst.receipt_seed, self.device)
        if why:
            raise Integrity("D115", f"{what} output {position}: {why}: the reply to its burst was sent before its "
                                    f"outputs existed")

    def cross_check(self, shape, layout: Layout, claimed_us: float, baseline: bool, method: str,
                    parallelism: float = 1.0) -> dict:
        """Bursts of back-to-back calls on fresh inputs, timed by the judge's clock; the claimed time must
        account for them (D108). One output of each burst, drawn in secret, is fetched (timed: D109) and
        checked (D103). `parallelism`: the sandbox's CPU time over the judge's wall time in the timed calls."""
        sandbox = self.sandbox
        calibration = self.calibration[shape.name]
        walls, fetch_s, cpu_s = [], [], []
        cpu = self.device.type != "cuda"
        # enough calls that a burst spans well past the pipe's noise (~50 ms), within the staged slots
        calls = max(1, min(layout.slots, math.ceil(50_000 / max(claimed_us, 1.0))))
        rounds = 1 if baseline else max(1, int(self.rules["bursts"]))
        for index in range(rounds):
            exchange, fetched_s = self.checked_burst(shape, layout, method, calls, index)
            walls.append(exchange.seconds)
            cpu_s.append(exchange.cpu_s)
            if fetched_s is not None:
                fetch_s.append(fetched_s)
        overhead_s = calibration["round_trip_s"] + calls * calibration["per_call_s"]
        per_call = per_call_us(min(walls), overhead_s, calls)
        cores = cores_of(sandbox)
        allowed_us = lone_allowance(cpu, claimed_us, per_call, cores, self.rules)
        lone = self.lone_calls(shape, layout, method, rounds, 0, allowed_us, twin=not baseline)
        latency_us, allowed_us, singles = lone.pop("latency_us"), lone.pop("allowed_us"), lone.pop("singles")
        report = lone
        report |= {"judge_us": round(per_call, 3), "judge_latency_us": round(latency_us, 3),
                   "judge_lone_calls": len(singles), "judge_lone_allowed_us": round(allowed_us, 3),
                   "judge_burst_calls": calls, "judge_overhead_us": round(overhead_s / calls * 1e6, 3),
                   "judge_burst_us": [round(wall * 1e6, 1) for wall in walls]}
        if "empty_us" in calibration:   # every empty call calibration timed, so a reader sees its spread
            report["judge_calibrated_empty_us"] = calibration["empty_us"]
        total = len(walls) * calls
        # CPU time as wall time: the quickest burst. Each burst holds all of its own calls' work (their inputs are
        # sealed until its request, one output of it drawn in secret is checked, and CPU time between requests
        # is D110's), so no burst can read less than the work; a load spike that hits one inflates only that one
        # (on a 2-core machine beside memory-bound load, one burst in three read +50%)
        evidence = Evidence(
            device=self.device.type, claimed_us=claimed_us, judge_us=per_call, latency_us=latency_us,
            cpu_us=max(0.0, min(cpu_s) / calls - calibration["cpu_per_call_s"]) * 1e6, cores=cores, calls=total,
            fetch_s=min(fetch_s) if fetch_s else None, calibrated_fetch_s=calibration["fetch_s"],
            idle_cpu_s=sandbox.idle_cpu_s, busy_cpu_s=sandbox.busy_cpu_s, extra_processes=dict(sandbox.extra_processes),
            parallelism=parallelism, idle_where=sandbox.idle_summary(), slowdown=report.get("judge_slowdown", 1.0))
        if not baseline and bursts_failed(evidence, self.rules):
            # The empty burst subtracted was calibrated before the candidate loaded, and at a large shape a
            # burst holds only 3 calls: a calibration that caught a lucky-fast empty call fails honest bursts.
            # The bursts are taken again beside a twin that times the empty burst now (beside_twin); the
            # verdict stands only if they fail again. Work the claim leaves out shows in every burst.
            evidence = self.bursts_again(shape, layout, method, calls, rounds, evidence, report)
        report["judge_idle_cpu_ms"] = round(sandbox.idle_cpu_s * 1e3, 1)
        if cpu:
            report |= {"judge_cpu_us": round(evidence.cpu_us, 3), "judge_cores": cores,
                       "judge_parallelism": round(parallelism, 3)}
        if evidence.fetch_s is not None:
            report["judge_fetch_ms"] = round(evidence.fetch_s * 1e3, 3)
        if not baseline:   # the baselines are the reference itself: reported, not judged
            try:
                run_checks(evidence, self.rules)
            except Integrity as exc:
                exc.evidence = report
                if exc.check != "D108" or not passes_checks(dataclasses.replace(evidence, latency_us=0.0), self.rules):
                    raise
                # Only the lone calls failed. A host's noise can hold a lone call back for seconds (an honest
                # variant of v13 read 106-124 us over a room of 82-93 at seed on an H200, its twin no slower):
                # the verdict waits for a second look after the other shapes, and stands only if that fails too.
                # Work left running after every call shows in every lone call, whenever it is taken.
                self.second_looks[shape.name] = SecondLook(layout, method, rounds, evidence, str(exc))
                report["judge_second_look"] = "pending"
        return report

    def bursts_again(self, shape, layout: Layout, method: str, calls: int, rounds: int, evidence: Evidence,
                     report: dict) -> Evidence:
        """The bursts that failed D108, taken again beside a twin (bursts_beside_twin, beside_twin): the evidence
        to judge, the first look's where the twin could not be had. What both looks read goes into `report`."""
        calibration = self.calibration[shape.name]
        started = time.perf_counter()
        first = {"judge_first_us": report["judge_us"],
                 "judge_first_reason": clock_accounts_for_claim(dataclasses.replace(evidence, latency_us=0.0),
                                                                self.rules)}
        if evidence.device != "cuda":
            first["judge_first_cpu_us"] = round(evidence.cpu_us, 3)
        try:
            bursts = self.bursts_beside_twin(shape, layout, method, calls, rounds, rounds)
        except TwinFailed as exc:
            report |= first | {"judge_twin_burst_error": str(exc)}
            return evidence
        calibrated_s = calibration["round_trip_s"] + calls * calibration["per_call_s"]
        again = beside_twin(evidence, bursts, calibrated_s, calibration["cpu_per_call_s"])
        report |= first | {
            "judge_us": round(again.judge_us, 3),
            "judge_burst_again_us": [round(wall * 1e6, 1) for wall in bursts.walls_s],
            "judge_twin_burst_us": [round(wall * 1e6, 1) for wall in bursts.twin_walls_s],
            "judge_twin_overhead_us": round(empty_burst_now_s(bursts, calibrated_s) / calls * 1e6, 3),
            "judge_twin_burst_s": round(time.perf_counter() - started, 3)}
        return again

    def second_look(self, shape, record: dict) -> tuple[str, str, str]:
        """The lone calls of a shape whose first ones alone failed D108, retaken after the other shapes (with
        a twin where they fail again); returns the shape's status, reason and check."""
        look = self.second_looks.pop(shape.name)
        timing = record.setdefault("timing", {})
        self.sandbox.ask("layout", **look.layout.message(float(self.settings.get("spin_us", 40.0))))
        # a fresh layout's slots are empty, and lone_call warms on slot 1 (slot 0 where it is the only one)
        warmed = list(range(min(2, look.layout.slots)))
        self.stage_fresh(shape, look.layout, "warm", 0, len(warmed))
        self.sandbox.ask("burst", slots=warmed, copy_out=look.evidence.device != "cuda", method=look.method)
        allowed_us = lone_allowance(look.evidence.device != "cuda", look.evidence.claimed_us, look.evidence.judge_us,
                                    look.evidence.cores, self.rules)
        lone = self.lone_calls(shape, look.layout, look.method, look.rounds, 2 * look.rounds, allowed_us, twin=True)
        evidence = dataclasses.replace(look.evidence, latency_us=lone["latency_us"],
                                       slowdown=lone.get("judge_slowdown", 1.0))
        timing["judge_second_look"] = {"first": look.reason, "latency_us": round(lone["latency_us"], 3),
                                       "allowed_us": round(lone["allowed_us"], 3), "lone_calls": len(lone["singles"]),
                                       "lone_us": lone["judge_lone_us"]} \
            | {key: value for key, value in lone.items() if key.startswith("judge_twin") or key == "judge_slowdown"}
        try:
            run_checks(evidence, self.rules)
        except Integrity as exc:
            return "integrity", str(exc), exc.check
        return "ok", "", ""

    def lone_call(self, shape, layout: Layout, method: str, index: int) -> float:
        """One call per request: a call's latency, which no pipelining across calls (work left running after
        one call returns, finished during the next) can shorten. Its output is checked like any other.

        It follows an untimed call made right before it, as the empty call subtracted follows one (calibrate_clock,
        twin_lone_calls). A call after an idle sandbox pays a cold start that back-to-back calls and the empty call
        do not (v69 on an H100: its host launch 42 us warm against 284 after 100 ms asleep,
        results/h100/v69_sacc/call6), which refused honest kernels at seed and medium; so did an untimed call
        made before the new inputs were written and staged (session 42, H100: honest lone calls 400-900 us over an
        empty call of 500-1,300, against a room of 76-290, results/h100/v79). The untimed call runs on slot 1's
        old inputs while slot 0 holds the new ones sealed, their seed kept for the timed request, so it gives a
        cheat nothing; with one slot, it runs on slot 0 before the new inputs reach the arena."""
        sandbox, cpu = self.sandbox, self.device.type != "cuda"

        def warm(slot: int) -> None:   # unseal=None: what is staged sealed stays sealed
            sandbox.ask("burst", slots=[slot], copy_out=cpu, method=method, unseal=None)

        if layout.slots > 1:
            seeds = self.stage_fresh(shape, layout, "single", index, 1)
            warm(1)
        else:
            seeds = self.stage_fresh(shape, layout, "single", index, 1, before_write=lambda: warm(0))
        exchange = sandbox.ask("burst", slots=[0], copy_out=cpu, method=method)
        if cpu:
            self.check_fetched(shape, layout, seeds, [0], [layout.arena_claim()], "D103", "single", [0],
                               burst=exchange)
        else:
            fetched = sandbox.ask("fetch", layout.output_bytes, positions=[0], out_slots=[0])
            self.check_fetched(shape, layout, seeds, [0], fetched.reply.data["outputs"], "D103", "single",
                               burst=exchange)
        return exchange.seconds

    def lone_calls(self, shape, layout: Layout, method: str, rounds: int, first: int, allowed_us: float,
                   twin: bool) -> dict:
        """`rounds` lone calls (input seeds from `first` on), judged by the quickest less the harness's empty
        call; where that is over `allowed_us` and `twin`, `rounds` more beside a twin sandbox."""
        calibration = self.calibration[shape.name]
        singles = [self.lone_call(shape, layout, method, first + index) for index in range(rounds)]
        single_overhead_s = calibration["round_trip_s"] + calibration["per_call_s"]
        latency_us = max(0.0, (min(singles) - single_overhead_s) * 1e6)
        report = {}
        if twin and latency_us > allowed_us:
            # The empty call was calibrated before the candidate loaded, and a shared machine's speed moves
            # between then and now (an H200 host's vCPUs run the same code at two speeds, seconds apart): a
            # twin sandbox that never loads the candidate times the harness's empty call now, alternating
            # with the candidate's lone calls while the candidate is stopped. Its slowdown, at most 2x, scales
            # the empty call subtracted and the room allowed. Work left running after every call shows in
            # every lone call, retaken or not.
            report = self.twin_lone_calls(shape, layout, method, rounds,
                                          lambda i: singles.append(self.lone_call(shape, layout, method, first + rounds + i)))
            if "judge_twin_us" in report:
                slowdown = report["judge_slowdown"]
                latency_us = max(0.0, (min(singles) - slowdown * single_overhead_s) * 1e6)
                allowed_us *= slowdown
        # every lone call's wall time and the empty call subtracted: a reader (or the next look at a D108 verdict)
        # sees the spread of lone calls, not only the quickest
        return report | {"latency_us": latency_us, "allowed_us": allowed_us, "singles": singles,
                         "judge_lone_us": [round(single * 1e6, 1) for single in singles],
                         "judge_lone_overhead_us": round(single_overhead_s * 1e6, 3)}

    def twin_lone_calls(self, shape, layout: Layout, method: str, rounds: int, candidate_call) -> dict:
        """The harness's empty call alone, timed now in a twin sandbox (see alternate_with_twin), alternating with
        `candidate_call(i)` (a lone call of the candidate) for i in range(rounds). Returns the twin's time and the
        slowdown since calibration (1-2x), or why there is none."""
        calibration = self.calibration[shape.name]
        calibrated_s = calibration["round_trip_s"] + calibration["per_call_s"]
        started = time.perf_counter()
        try:
            empty = self.alternate_with_twin(shape, layout, method, 1, rounds, candidate_call)
        except TwinFailed as exc:
            return {"judge_twin_error": str(exc)}
        twin_s = min(exchange.seconds for exchange in empty)
        slowdown = min(2.0, max(1.0, twin_s / calibrated_s)) if calibrated_s > 0 else 1.0
        return {"judge_twin_us": round(twin_s * 1e6, 3), "judge_calibrated_us": round(calibrated_s * 1e6, 3),
                "judge_slowdown": round(slowdown, 4), "judge_twin_s": round(time.perf_counter() - started, 3)}

    def alternate_with_twin(self, shape, layout: Layout, method: str, calls: int, rounds: int,
                            candidate_turn) -> list[Exchange]:
        """The harness's empty call, `calls` back to back, timed now in a twin sandbox that never loads the
        candidate, on the cores the candidate's sandbox may use, alternating with `candidate_turn(i)` for i in
        range(rounds). The candidate's sandbox is stopped (SIGSTOP) while the twin is timed, so it cannot slow
        it to buy itself room. Returns the twin's timed exchanges; raises TwinFailed where the twin could not
        start or be timed, and whatever `candidate_turn` raised as it was (the candidate's failure is its own)."""
        sandbox, cpu = self.sandbox, self.device.type != "cuda"
        private_tmp, confinement = confine.prepare_sandbox(None, [])
        twin = None
        try:
            cores = os.sched_getaffinity(sandbox.process.pid) if hasattr(os, "sched_getaffinity") else None
            twin, fd = self.spawn("twin", None, confinement,
                                  confine.sandbox_env(private_tmp, dict(self.job.sandbox_env)), private_tmp, cores)
            arena, _ = self.attach_arena(twin, fd, layout_end(layout), pin=False)
            twin.ask("load", kind="trivial")
            twin.ask("layout", **layout.message(float(self.settings.get("spin_us", 40.0))))
            twin_bytes = self.torch.frombuffer(arena, dtype=self.torch.uint8)
            for slot in range(calls):
                self.write_inputs(layout, slot, self.draw(shape, None, 1 + slot), twin_bytes)
            twin.ask("stage", slots=list(range(calls)))
            slots = list(range(calls))
            for _ in range(3):   # as calibration did before its timed calls
                twin.ask("burst", slots=slots, copy_out=cpu, method=method)
            empty: list[Exchange] = []
            for index in range(rounds):
                stop_and_wait(sandbox.process.pid)
                try:
                    if calls == 1:   # as warm as the candidate's lone calls (lone_call)
                        twin.ask("burst", slots=slots, copy_out=cpu, method=method)
                    empty.append(twin.ask("burst", slots=slots, copy_out=cpu, method=method,
                                          unseal=unseal_as_timed(layout, slots)))
                finally:
                    os.killpg(sandbox.process.pid, signal.SIGCONT)
                try:
                    candidate_turn(index)
                except Exception as exc:   # the candidate's failure is its own, never the twin's
                    raise CandidateCallFailed() from exc
            return empty
        except CandidateCallFailed as wrapper:
            raise wrapper.__cause__ from None
        except (OSError, SandboxFailed, SandboxDied, ProtocolError) as exc:
            raise TwinFailed(f"{type(exc).__name__}: {exc}"[:200]) from None
        finally:
            if twin is not None:
                twin.end()
            confine.release_sandbox(private_tmp, [])

    def bursts_beside_twin(self, shape, layout: Layout, method: str, calls: int, rounds: int, first: int
                           ) -> TwinBursts:
        """`rounds` more bursts of `calls` calls of the candidate (input seeds from burst `first` on), each
        after a twin's empty burst of as many calls; raises TwinFailed as alternate_with_twin does."""
        walls: list[float] = []
        cpu_s: list[float] = []

        def candidate_burst(index: int) -> None:   # its fetch is checked (D103); D109 keeps the first look's
            exchange, _ = self.checked_burst(shape, layout, method, calls, first + index)
            walls.append(exchange.seconds)
            cpu_s.append(exchange.cpu_s)

        empty = self.alternate_with_twin(shape, layout, method, calls, rounds, candidate_burst)
        return TwinBursts(calls, tuple(walls), tuple(cpu_s), tuple(exchange.seconds for exchange in empty),
                          tuple(exchange.cpu_s for exchange in empty))

    # --- one run --------------------------------------------------------------------------------------------
    def outcome(self, shape: str, status: str, stage: str, reason: str = "", **extra) -> None:
        self.emit(ShapeOutcome(shape=shape, status=status, stage=stage, reason=reason,
                               confinement=self.confinement, **extra).to_json())

    def run(self) -> None:
        job = self.job
        baseline = job.baseline
        shapes = [self.problem.shapes[name] for name in job.shapes]
        check_shapes = [] if baseline else list(getattr(self.problem, "check_shapes", {}).values())
        method = "graph" if baseline == "graph" else self.settings["method"]
        if self.device.type != "cuda" and baseline in ("graph", "compile"):
            for shape in shapes:
                self.outcome(shape.name, "skipped", "setup", "CUDA-only baseline on a CPU run")
            return
        self.begin()
        allowed_compile = set(job.compile_shapes)
        for shape, slots in self.planned_shapes():
            self.layouts[shape.name] = self.layout_for(shape, slots)
        with setup_phase("sandbox_arena"):
            self.open_arena(max(layout_end(layout) for layout in self.layouts.values()))
            self.sandbox.ask("load", kind="trivial")
        with setup_phase("calibration"):
            for shape in shapes:
                self.calibration[shape.name] = self.calibrate(shape, self.layouts[shape.name])
        started = time.perf_counter()
        if baseline:
            load = self.sandbox.ask("load", kind="reference", path=str(self.problem.reference_path),
                                    init_inputs=list(self.problem.init_inputs), init_seed=INIT_SEED,
                                    baseline=baseline).reply.data
        else:
            try:
                load = self.sandbox.ask("load", kind="candidate", path=self.candidate_path, sha256=job.candidate_sha256,
                                        init_inputs=list(self.problem.init_inputs), init_seed=INIT_SEED).reply.data
            except SandboxFailed as exc:
                for shape in shapes:
                    self.outcome(shape.name, exc.status if exc.status in ("load_error", "compile_error") else "load_error",
                                 "load", str(exc))
                return
        load_s = time.perf_counter() - started
        SETUP["load"] = load_s
        self.sandbox.watch_processes = True
        # CPU burnt before the candidate loaded was the harness's own (first touches of the arena while
        # calibrating the larger shapes read 0.6-0.7 s on an H200 host): only what follows is the candidate's
        self.sandbox.idle_cpu_s, self.sandbox.idle_by = 0.0, {}
        if load["call_path"]:
            for shape in shapes:
                self.outcome(shape.name, "integrity", "load", f"D113: {load['call_path']}", check="D113", load_s=load_s)
            return
        failure = None
        for shape in check_shapes:   # correctness only, never timed: no specialising for the timed shapes
            try:
                with setup_phase("check_shapes"):
                    self.verify(shape, self.layouts[shape.name], False)
            except (Wrong, Integrity, SandboxFailed) as exc:
                status = {Wrong: "wrong", Integrity: "integrity"}.get(type(exc), getattr(exc, "status", "runtime_error"))
                failure = (status, f"check shape {shape.name}: {exc}", getattr(exc, "check", ""))
                break
        held: list[tuple] = []   # ok shapes whose lone calls take a second look after the others
        for index, shape in enumerate(shapes):
            if failure is not None:
                self.outcome(shape.name, failure[0], "verify", failure[1], check=failure[2], load_s=load_s)
                continue
            if baseline == "compile" and shape.name not in allowed_compile:
                self.outcome(shape.name, "skipped", "setup",
                             f"torch.compile baseline runs only at shapes {sorted(allowed_compile)} "
                             "(baselines.compile_shapes): it unrolls the reference's Python loop over T")
                continue
            record = {"stage": "verify"}
            self.costs = {"calibration": self.calibration[shape.name]["seconds"]}
            try:
                with self.cost("verification"):
                    record.update(self.verify(shape, self.layouts[shape.name], job.check_reference))
                record["stage"] = "time"
                record.update(self.time(shape, self.layouts[shape.name], method, bool(baseline)))
                record["stage"] = "done"
                status, reason, check = "ok", "", ""
            except Integrity as exc:
                status, reason, check = "integrity", str(exc), exc.check
                if exc.evidence:
                    record["timing"] = exc.evidence
            except ProtocolError as exc:
                status, reason, check = "integrity", f"D112: {exc}", "D112"
            except Wrong as exc:
                status, reason, check = "wrong", str(exc), ""
            except SandboxFailed as exc:
                status, reason, check = exc.status, str(exc), ""
            stage = record.pop("stage")
            near_constant = bool(record.pop("near_constant", False))
            record.pop("worst_case", None)
            lost = status == "runtime_error" and cuda_context_lost(reason)
            if status == "ok" and shape.name in self.second_looks:   # emitted once its second look is done
                held.append((shape, stage, load_s, near_constant, record))
                continue
            self.second_looks.pop(shape.name, None)
            self.outcome(shape.name, status, stage, reason, check=check, load_s=load_s, near_constant=near_constant,
                         context_lost=lost, **record)
            if lost:   # a CUDA error poisons the sandbox's context: the other shapes cannot run in it
                for rest in shapes[index + 1:]:
                    self.outcome(rest.name, "runtime_error", "setup",
                                 f"not run: the CUDA context was lost at shape {shape.name}")
                self.settle(held, look_again=False)
                return
        self.settle(held, look_again=True)

    def settle(self, held: list[tuple], look_again: bool) -> None:
        """Emit the shapes held for a second look: taken now, or, where the sandbox can no longer run
        (`look_again` false), the first look's verdict."""
        for shape, stage, load_s, near_constant, record in held:
            if not look_again:
                status, reason, check = "integrity", self.second_looks.pop(shape.name).reason, "D108"
            else:
                try:
                    status, reason, check = self.second_look(shape, record)
                except Integrity as exc:   # e.g. a lone call's output wrong (D103)
                    status, reason, check = "integrity", str(exc), exc.check
                except ProtocolError as exc:
                    status, reason, check = "integrity", f"D112: {exc}", "D112"
                except (Wrong, SandboxFailed) as exc:
                    status, reason, check = getattr(exc, "status", "wrong"), str(exc), ""
            self.outcome(shape.name, status, stage, reason, check=check, load_s=load_s, near_constant=near_constant,
                         **record)


def _enough(samples: list[float], timed_s: float, wall_s: float, settings: dict) -> bool:
    """The stopping rule, on the judge's clock: enough samples, or the budget spent."""
    n = len(samples)
    if n >= settings["max_iters"] or (n > 0 and wall_s > 8 * settings["budget_s"]):
        return True
    if n < settings["min_iters"]:
        return False
    if timed_s > settings["budget_s"] or wall_s > 4 * settings["budget_s"]:
        return True
    mean = statistics.fmean(samples)
    return mean > 0 and statistics.stdev(samples) / mean / math.sqrt(n) < settings["target_rse"]


class _Alarm(Exception):
    pass


def warm_compile(job: EvaluateJob, emit) -> None:
    """Fill torch.compile's on-disk caches for the reference (trusted code, in this process): the timed
    sandbox comes later and finds them warm."""
    import torch

    from harness.problem import import_reference, load_problem
    from harness.verify import make_inputs

    problem = load_problem(job.problem_path)
    device = torch.device(job.device)
    reference = import_reference(problem).Model(*problem.init_inputs).to(device).eval()

    def alarm(signum, frame):
        raise _Alarm()

    for name in job.shapes:
        started = time.perf_counter()
        if name not in job.compile_shapes:
            emit(ShapeOutcome(shape=name, status="skipped", stage="warm").to_json())
            continue
        compiled = torch.compile(reference)
        signal.signal(signal.SIGALRM, alarm)
        signal.alarm(int(job.compile_time_limit_s))
        status = "ok"
        try:
            with torch.no_grad():
                compiled(*make_inputs(problem, problem.shapes[name], None, 0, device))
            torch.cuda.synchronize()
        except _Alarm:
            status = "skipped"
        finally:
            signal.alarm(0)
        emit(ShapeOutcome(shape=name, status=status, stage="warm", compile_s=time.perf_counter() - started).to_json())


# --- process plumbing --------------------------------------------------------------------------------------

def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes; None where there is no such file."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def wait_for_the_gpu() -> None:
    """Block until the runner closes stdin (spawn.spawn_worker's gate): its go-ahead to use the GPU."""
    while sys.stdin.read(65536):
        pass


def main() -> int:
    global STARTED
    STARTED = time.monotonic() - process_age_s()
    SETUP["process_start"] = time.monotonic() - STARTED
    job = EvaluateJob.from_json(json.loads(sys.stdin.readline()))
    die_with_runner(job.runner_pid)
    emit = Emitter(job.results_path)
    if job.warm_only:
        wait_for_the_gpu()
        if job.device == "cuda":
            import torch
            torch.cuda.set_device(0)
        warm_compile(job, emit)
    else:
        judge = None
        try:
            # Host work first: the sandbox's start, then the judge's imports and the problem while the sandbox does
            # its own imports (two processes, two cores). A runner that starts this judge while another is timing
            # on the GPU holds stdin open until that one is done.
            judge = Judge(job, emit, load=False)
            sandboxed = not (job.device != "cuda" and job.baseline in ("graph", "compile"))
            if sandboxed:
                with setup_phase("sandbox_start"):
                    judge.start_sandbox(wait=False)
            with setup_phase("judge_init"):
                judge.load()
            if sandboxed:
                with setup_phase("sandbox_ready"):
                    judge.sandbox_ready()
                if job.device == "cuda" and judge.rules.get("arena_ahead", "auto") == "auto":
                    with setup_phase("arena_ahead"):
                        judge.map_arena_ahead()
            with setup_phase("waiting_for_gpu"):
                wait_for_the_gpu()
            if job.lane_cores:
                with setup_phase("lane_cores"):
                    judge.move_to_lane(job.lane_cores)
            if job.device == "cuda":
                with setup_phase("cuda_init"):
                    judge.torch.cuda.set_device(0)   # CUDA_VISIBLE_DEVICES already pins one GPU
            judge.run()
        except SandboxDied as exc:
            traceback.print_exc()
            for name in job.shapes:
                emit(ShapeOutcome(shape=name, status="crashed", stage="evaluate", reason=str(exc),
                                  confinement=judge.confinement if judge else {}).to_json())
        except Integrity as exc:
            for name in job.shapes:
                emit(ShapeOutcome(shape=name, status="integrity", stage="setup", reason=str(exc), check=exc.check,
                                  confinement=judge.confinement if judge else {}).to_json())
        except ProtocolError as exc:
            for name in job.shapes:
                emit(ShapeOutcome(shape=name, status="integrity", stage="setup", reason=f"D112: {exc}", check="D112",
                                  confinement=judge.confinement if judge else {}).to_json())
        except Exception as exc:
            traceback.print_exc()
            for name in job.shapes:
                emit(ShapeOutcome(shape=name, status="runtime_error", stage="setup",
                                  reason=f"harness setup: {type(exc).__name__}: {str(exc)[:200]}").to_json())
        finally:
            if judge is not None:
                judge.stop_sandbox()
    emit.handle.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
