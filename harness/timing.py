"""Timing: a callable in, per-call samples and a `TimingResult` out. Used inside the sandbox (which
times calls on inputs the judge staged, one fresh set per call) and by the GPU tools in tools/.

Methods (configs/default.yaml, `timing.method`):
- events: a CUDA event pair around each call on the current stream, with a short spin kernel
  enqueued ahead of the start event so host launch latency stays out of device time, and the L2
  flushed between calls outside the timed region. A call whose launches alone outlast any spin
  (host-bound, like the eager reference's Python loop) is timed by the host clock instead;
- graph: the sandbox captures one call in a CUDA graph on static buffers and times each replay by
  events, after copying that call's fresh inputs into them (`capture_graph`; the tools also time
  graphs of many calls, `time_cuda_graph`);
- host: wall clock around each call closed by a device-wide synchronize.
On CPU every method is the monotonic clock. The judge computes the statistics (`summarize`).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import torch


class CaptureError(RuntimeError):
    """The callable cannot be captured in a CUDA graph, or its graph does no work."""


@dataclass(frozen=True)
class TimingResult:
    method: str
    median_us: float
    iqr_us: float
    min_us: float
    mean_us: float
    rse: float                  # relative standard error of the mean
    n: int
    host_median_us: float       # wall clock per call, synchronized
    samples_us: list[float] = field(repr=False)
    overhead_us: float = 0.0    # events: the median empty event pair, subtracted from every sample
    spin_us: float = 0.0        # events: the spin ahead of each call (lengthened while launches outran it)
    discarded: int = 0          # events: calls left out because their launch outran the spin
    host_bound: bool = False    # events: queued slower than any spin covers, so timed by the host clock

    def to_json(self) -> dict:
        data = asdict(self)
        data["samples_us"] = [round(s, 3) for s in self.samples_us]
        return data


def summarize(method: str, samples_us: Sequence[float], host_median_us: float,
              events: EventSamples | None = None, subtract_overhead: bool = True) -> TimingResult:
    ordered = sorted(samples_us)
    n = len(ordered)
    quartiles = statistics.quantiles(ordered, n=4) if n >= 2 else [ordered[0]] * 3
    mean = statistics.fmean(ordered)
    rse = statistics.stdev(ordered) / mean / math.sqrt(n) if n >= 2 and mean > 0 else float("inf")
    return TimingResult(method, statistics.median(ordered), quartiles[2] - quartiles[0], ordered[0], mean,
                        rse, n, host_median_us, list(samples_us),
                        events.overhead_us if events and subtract_overhead else 0.0,
                        events.spin_us if events else 0.0, events.discarded if events else 0,
                        events.host_bound if events else False)


def _enough(samples: list[float], started: float, settings: dict) -> bool:
    n = len(samples)
    if n >= settings["max_iters"]:
        return True
    if n < settings["min_iters"]:
        return time.perf_counter() - started > 4 * settings["budget_s"]
    if time.perf_counter() - started > settings["budget_s"]:
        return True
    mean = statistics.fmean(samples)
    return mean > 0 and statistics.stdev(samples) / mean / math.sqrt(n) < settings["target_rse"]


Prepare = Callable[[int], None]


def no_prepare(i: int) -> None:
    pass


_no_prepare = no_prepare


def warm_up(call: Callable[[int], object], settings: dict, synchronize: Callable[[], None],
            prepare: Prepare = _no_prepare) -> None:
    """Calls until both `warmup_iters` calls and `warmup_ms` have passed (caches, clocks, lazy loading)."""
    started, count = time.perf_counter(), 0
    while count < settings["warmup_iters"] or (time.perf_counter() - started) * 1e3 < settings["warmup_ms"]:
        prepare(count)
        call(count)
        synchronize()
        count += 1
        if time.perf_counter() - started > settings["budget_s"]:
            break


def time_host(call: Callable[[int], object], iters: int, synchronize: Callable[[], None],
              budget_s: float = math.inf, prepare: Prepare = _no_prepare,
              waits: list[float] | None = None, floor: tuple[Callable[[], object], list[float]] | None = None
              ) -> list[float]:
    """Wall clock per call, closed by `synchronize`. `waits`, when given, collects how long each synchronize
    waited after the call had returned (the device work still queued). `floor`, a trivial launch and a list,
    collects that launch's own wall clock right after each call: what a busy CPU costs at that moment."""
    samples: list[float] = []
    started = time.perf_counter()
    for i in range(iters):
        if samples and time.perf_counter() - started > budget_s:
            break
        prepare(i)
        synchronize()
        start = time.perf_counter_ns()
        call(i)
        returned = time.perf_counter_ns()
        synchronize()
        end = time.perf_counter_ns()
        samples.append((end - start) / 1e3)
        if waits is not None:
            waits.append((end - returned) / 1e3)
        if floor is not None:
            trivial, floors = floor
            start = time.perf_counter_ns()
            trivial()
            synchronize()
            floors.append((time.perf_counter_ns() - start) / 1e3)
    return samples


def time_cpu(call: Callable[[int], object], settings: dict, prepare: Prepare = _no_prepare) -> TimingResult:
    warm_up(call, settings, lambda: None, prepare)
    samples: list[float] = []
    started = time.perf_counter()
    while not _enough(samples, started, settings):
        prepare(len(samples))
        start = time.perf_counter_ns()
        call(len(samples))
        samples.append((time.perf_counter_ns() - start) / 1e3)
    return summarize("host", samples, statistics.median(samples))


def _spin_cycles(spin_us: float) -> int:
    rate_khz = 0
    try:
        rate_khz = torch.cuda.clock_rate() * 1000  # MHz -> kHz, needs pynvml
    except Exception:  # pynvml missing: assume a 2 GHz boost clock
        rate_khz = 2_000_000
    return int(spin_us * rate_khz / 1000)


def sm_clock_mhz(gpu: int | None) -> tuple[int, int]:
    """Current and maximum SM clock from nvidia-smi (0, 0 when it cannot be read)."""
    import subprocess

    command = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm", "--format=csv,noheader,nounits"]
    if gpu is not None:
        command += ["-i", str(gpu)]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
        current, maximum = (int(x) for x in out[0].split(","))
        return current, maximum
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return 0, 0


MADV_POPULATE_WRITE = 23   # Linux 5.14+: fault every page of a mapping in, writable, without touching each


def populate_pages(arena) -> bool:
    """Fault the arena's pages into this mapping (allocating any the memfd lacks). False where the kernel has no
    MADV_POPULATE_WRITE: page-locking then faults them in itself, only later."""
    try:
        arena.madvise(MADV_POPULATE_WRITE)
    except (OSError, ValueError):
        return False
    return True


def pin_for_copies(buffer: torch.Tensor) -> str:
    """Page-lock a host buffer (the judge's and the sandbox's shared arena) for the GPU's copy engines: input sets
    and outputs cross it by DMA instead of through the driver's pageable bounce buffers, several times faster.
    Returns "" when pinned, else why not (the copies then stay pageable: slower, never wrong). Through the driver
    API: a failure there leaves no error behind for the runtime's next kernel launch check to report."""
    import ctypes

    if not buffer.numel() or not torch.cuda.is_available():
        return "nothing to pin"
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        torch.cuda.synchronize()   # the runtime's primary context, current on this thread
        register = driver.cuMemHostRegister_v2
        register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        code = register(buffer.data_ptr(), buffer.numel() * buffer.element_size(), 0)
    except (OSError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    return "" if code == 0 else f"cuMemHostRegister returned {code}"


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 * 2**20
    return torch.zeros(2 * l2 // 4, dtype=torch.float32, device=device)


def l2_flusher(device: torch.device, setting: str) -> Callable[[], object] | None:
    """Evict the L2 between calls. `read` streams a buffer of twice the L2 size through it and leaves clean
    lines; `write` zeroes it and leaves dirty lines, which the next call's misses must write back first."""
    return None if setting == "off" else flush_with(l2_flush_buffer(device), setting)


def flush_with(buffer: torch.Tensor, mode: str) -> Callable[[], object]:
    if mode == "write":
        return buffer.zero_
    sink = torch.empty((), dtype=buffer.dtype, device=buffer.device)
    return lambda: torch.sum(buffer, dim=0, out=sink)


@dataclass
class EventSamples:
    raw_us: list[float]      # event pair around each call
    empty_us: list[float]    # an empty event pair just before each call: the timer's own cost
    spin_us: float = 0.0     # the spin finally used
    discarded: int = 0       # calls left out: queued later than the spin covered, or before a call proved host-bound
    host_bound: bool = False  # no spin could cover the call's queuing: timed by the host clock (see `spin_check`)

    @property
    def overhead_us(self) -> float:
        return statistics.median(self.empty_us) if self.empty_us else 0.0

    def device_us(self, subtract_overhead: bool) -> list[float]:
        """Per-call device time; with `subtract_overhead`, less the median empty pair (never below 0)."""
        if not subtract_overhead:
            return list(self.raw_us)
        overhead = self.overhead_us
        return [max(0.0, sample - overhead) for sample in self.raw_us]


MAX_SPIN_US = 5000.0
HOST_BOUND_WINDOW = 5   # recent calls whose median queuing decides host-bound: one stray stall cannot


def spin_check(queued_us: list[float], spin_us: float,
               recent_us: list[float] | None = None) -> tuple[list[bool], float]:
    """Which calls of a batch to keep, and the spin for the next batch. A call whose queuing took longer
    than the spin may have left the GPU waiting between the start event and its first kernel: it is
    dropped and the spin lengthened. A call whose typical queuing (the median of `recent_us`, the last
    calls' queuing, this batch's by default) is longer than the longest spin could cover is host-bound by
    itself (the eager reference): from then on it is timed by the host clock (`host_clock_calls`), since
    its caller waits for all of its queuing. A spin covering only part of it took that part off: the
    eager reference's seed row read 3.5 ms against 8.4 ms of host time that way. A single stall past
    the longest spin (a loaded CPU) only raises the spin to that longest."""
    keep = [queued < spin_us for queued in queued_us]
    if all(keep):
        return keep, spin_us
    longer = 1.5 * max(queued_us)
    if longer <= MAX_SPIN_US:
        return keep, longer
    typical = statistics.median(recent_us or queued_us)
    return keep, 0.0 if 1.5 * typical > MAX_SPIN_US else MAX_SPIN_US


@dataclass
class SpinState:
    """What the events method has learnt about a call so far, carried from one batch of calls to the next."""
    spin_us: float = 40.0
    history: list[float] = field(default_factory=list)
    host_bound: bool = False


def time_cuda_events(call: Callable[[int], object], settings: dict, prepare: Prepare = _no_prepare,
                     calls: int | None = None, state: SpinState | None = None) -> EventSamples:
    """Per call: load inputs, flush the L2, spin, an empty event pair, then the event pair around the call.
    The spin holds the GPU until the host has queued the pairs and the call, so no host latency is timed
    (see `spin_check`). The empty pair measures what recording two events costs the GPU by itself (about
    3 us on an H200). Batches start at one call, so a slow call costs little while the spin adapts.
    With `calls`, exactly that many calls are made (each on inputs of its own, see the sandbox), and `state`
    carries the spin from one such request to the next."""
    flush = l2_flusher(torch.device("cuda"), settings["l2_flush"])
    state = state if state is not None else SpinState(float(settings["spin_us"]))
    result = EventSamples([], [], 0.0 if state.host_bound else state.spin_us, host_bound=state.host_bound)
    started = time.perf_counter()
    batch = 1
    queued_history = state.history
    made = 0
    while (made < calls) if calls is not None else not _enough(result.raw_us, started, settings):
        if calls is not None:
            batch = min(batch, calls - made)
        first, made = made, made + batch
        if result.host_bound:   # what a host-bound call costs is its caller's wait: the host clock's
            samples, empty = host_clock_calls(call, prepare, flush, first, batch)
            result.raw_us += samples
            result.empty_us += empty
            batch = min(100, batch * 2)
            continue
        cycles = _spin_cycles(result.spin_us)
        events = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(batch)]
        queued_us = []
        for index, (empty_start, empty_end, start, end) in enumerate(events):
            prepare(first + index)
            if flush is not None:
                flush()
            if cycles:
                torch.cuda._sleep(cycles)
            spin_queued = time.perf_counter()
            empty_start.record()
            empty_end.record()
            start.record()
            call(first + index)
            end.record()
            queued_us.append((time.perf_counter() - spin_queued) * 1e6)
        torch.cuda.synchronize()
        queued_history = (queued_history + queued_us)[-HOST_BOUND_WINDOW:]
        keep, next_spin = (spin_check(queued_us, result.spin_us, queued_history) if cycles
                           else ([True] * batch, result.spin_us))
        for (empty_start, empty_end, start, end), kept in zip(events, keep):
            if not kept:
                result.discarded += 1
                continue
            result.empty_us.append(empty_start.elapsed_time(empty_end) * 1e3)
            result.raw_us.append(start.elapsed_time(end) * 1e3)
        if cycles > 0 and next_spin == 0:
            # host-bound from here on: drop what a spin covered before, so every sample is timed the same way
            result.discarded += len(result.raw_us)
            result.raw_us.clear()
            result.empty_us.clear()
            result.host_bound = True
        result.spin_us = next_spin
        batch = min(100, batch * 2)
    state.spin_us, state.history, state.host_bound = result.spin_us, queued_history, result.host_bound
    if not result.raw_us and calls is None:
        raise RuntimeError(f"events: no call could be timed within {4 * settings['budget_s']:.1f} s "
                           f"({result.discarded} outran the spin)")
    return result


def host_clock_calls(call: Callable[[int], object], prepare: Prepare, flush: Callable[[], object] | None,
                     first: int, count: int) -> tuple[list[float], list[float]]:
    """Calls `first`.. timed by the host clock from a quiet device to the device-wide synchronize after the
    call: its launches, its queuing and its device tail, all of which its caller waits for. `empty` is one
    synchronize with nothing queued, the clock's own cost, subtracted like an empty event pair."""
    samples, empty = [], []
    for index in range(first, first + count):
        prepare(index)
        if flush is not None:
            flush()
        torch.cuda.synchronize()   # inputs staged and the L2 flushed before the clock starts
        before = time.perf_counter()
        torch.cuda.synchronize()
        start = time.perf_counter()
        call(index)
        torch.cuda.synchronize()
        end = time.perf_counter()
        empty.append((start - before) * 1e6)
        samples.append((end - start) * 1e6)
    return samples, empty


def capture_graph(call: Callable[[int], object], calls: int,
                  between: Callable[[], object] | None = None) -> tuple[torch.cuda.CUDAGraph, list]:
    """Capture `calls` calls (rotating input sets) in one graph, each after `between` (the L2 flush) when
    given; returns the graph and its outputs."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs recommends
        for i in range(2):
            call(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    outputs = []
    try:
        with torch.cuda.graph(graph):
            for i in range(calls):
                if between is not None:
                    between()
                outputs.append(call(i))
    except Exception as exc:
        torch.cuda.synchronize()
        raise CaptureError(f"cannot be captured in a CUDA graph: {str(exc).splitlines()[0][:160]}") from None
    return graph, outputs


def capture_flushes(flush: Callable[[], object], calls: int) -> torch.cuda.CUDAGraph:
    """The flushes of a graph captured with `between=flush`, alone: what to subtract from its replay."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            flush()
    return graph


def capture_timed_graph(call: Callable[[int], object], calls: int, device: torch.device, flush_mode: str
                        ) -> tuple[torch.cuda.CUDAGraph, list, torch.cuda.CUDAGraph | None]:
    """The graph method's capture: `calls` calls, each after an L2 flush unless `flush_mode` is off, and the
    flushes alone to subtract (None without flushes). Returns the graph, its outputs and the flushes."""
    flush = l2_flusher(device, flush_mode)
    graph, outputs = capture_graph(call, calls, between=flush)
    return graph, outputs, capture_flushes(flush, calls) if flush is not None else None


def replay_us(graph: torch.cuda.CUDAGraph) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3


def time_cuda_graph(graph: torch.cuda.CUDAGraph, calls: int, settings: dict,
                    flushes: torch.cuda.CUDAGraph | None = None) -> list[float]:
    """Per-call replay time. A graph that flushes the L2 before each call (so its calls meet a cold cache,
    as the events method's do) is timed less a replay of its flushes alone, alternating the two."""
    samples: list[float] = []
    started = time.perf_counter()
    graph.replay()
    torch.cuda.synchronize()
    while not _enough(samples, started, settings):
        flush_us = replay_us(flushes) if flushes is not None else 0.0
        samples.append(max(0.0, replay_us(graph) - flush_us) / calls)
    return samples
