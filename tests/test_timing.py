"""Timing helpers that run without a GPU: statistics, stopping rule, L2 flush callables."""
import itertools

import pytest
import torch

from harness import timing


@pytest.mark.parametrize("mode", ["read", "write"])
def test_flush_runs_and_leaves_the_buffer_as_it_was(mode):
    buffer = torch.zeros(4096)
    flush = timing.flush_with(buffer, mode)
    flush()
    flush()
    assert torch.count_nonzero(buffer) == 0


def test_summary_statistics():
    result = timing.summarize("events", [4.0, 1.0, 3.0, 2.0, 5.0], host_median_us=9.0)
    assert (result.median_us, result.min_us, result.n) == (3.0, 1.0, 5)
    assert result.iqr_us == pytest.approx(3.0)
    assert 0 < result.rse < 1


def test_stops_once_the_standard_error_is_small():
    settings = {"max_iters": 1000, "min_iters": 5, "budget_s": 60.0, "target_rse": 0.005}
    import time
    started = time.perf_counter()
    assert not timing._enough([1.0, 2.0, 3.0], started, settings)          # under min_iters
    assert not timing._enough([1.0, 2.0, 1.0, 2.0, 1.0, 2.0], started, settings)   # spread too wide
    assert timing._enough([1.0] * 10, started, settings)                    # no spread at all
    assert timing._enough([1.0, 2.0] * 500, started, settings)              # max_iters


def test_event_overhead_is_the_median_empty_pair_and_never_drives_a_sample_below_zero():
    events = timing.EventSamples(raw_us=[5.0, 6.0, 2.0], empty_us=[3.0, 2.5, 9.0])
    assert events.overhead_us == 3.0
    assert events.device_us(True) == [2.0, 3.0, 0.0]
    assert events.device_us(False) == [5.0, 6.0, 2.0]


def test_spin_check_drops_calls_that_outran_the_spin_and_lengthens_it():
    keep, spin = timing.spin_check([10.0, 50.0, 20.0], 40.0)
    assert keep == [True, False, True] and spin == 75.0
    assert timing.spin_check([10.0, 20.0], 40.0) == ([True, True], 40.0)


def test_spin_check_drops_the_spin_for_host_bound_calls():
    # the eager reference takes 8 ms (seed) to 300 ms (large) to queue: no spin covers it, and none should try
    keep, spin = timing.spin_check([8_000.0], 40.0)
    assert keep == [False] and spin == 0.0
    keep, spin = timing.spin_check([3_000.0], 40.0)   # coverable: the spin grows to cover it
    assert keep == [False] and spin == 4_500.0


def test_spin_check_takes_one_stall_for_a_stall_not_a_host_bound_call():
    # a 1 ms call held 8 ms once by a loaded CPU: the spin goes to its longest, the call is not host-bound
    keep, spin = timing.spin_check([8_000.0], 1_500.0, recent_us=[1_000.0, 1_100.0, 8_000.0])
    assert keep == [False] and spin == timing.MAX_SPIN_US
    keep, spin = timing.spin_check([8_000.0], 1_500.0, recent_us=[1_000.0, 8_000.0, 8_100.0])
    assert keep == [False] and spin == 0.0


class FakeClock:
    """The host clock as `timing` reads it. It moves only when a fake call or event says it took time, so these
    tests check the rules, not how a loaded CI machine schedules sleeps (one once held a 1 ms sleep past 3.3 ms)."""

    def __init__(self):
        self.now = 1_000.0

    def perf_counter(self) -> float:
        return self.now

    def perf_counter_ns(self) -> int:
        return round(self.now * 1e9)

    def take(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timing, "time", fake)
    return fake


@pytest.fixture
def fake_cuda(monkeypatch, clock):
    class FakeEvent:
        """A CUDA event stand-in: `record` reads the host clock (and takes a microsecond), so host-side
        queuing shows as elapsed time."""

        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = clock.now
            clock.take(1e-6)

        def elapsed_time(self, end):
            return (end.at - self.at) * 1e3

    monkeypatch.setattr(timing.torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(timing.torch.cuda, "_sleep", lambda cycles: None)
    monkeypatch.setattr(timing.torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(timing, "l2_flusher", lambda device, setting: None)
    return clock


SETTINGS = {"l2_flush": "off", "spin_us": 40, "max_iters": 200, "min_iters": 5, "budget_s": 0.3, "target_rse": 0.005}


def test_events_loop_keeps_quick_calls(fake_cuda):
    result = timing.time_cuda_events(lambda i: fake_cuda.take(5e-6), SETTINGS)
    assert len(result.raw_us) >= 5 and not result.host_bound
    assert result.discarded == 0 and result.spin_us == 40
    assert min(result.raw_us) == pytest.approx(6.0)     # the call and the end event's record


def test_events_loop_times_a_host_bound_call_instead_of_discarding_it_all(fake_cuda):
    # 150 ms to queue, longer than the longest spin: ten such calls would outlast 4 x budget_s by themselves
    result = timing.time_cuda_events(lambda i: fake_cuda.take(0.15), SETTINGS)
    assert result.spin_us == 0.0 and result.host_bound and result.discarded == 1
    assert len(result.raw_us) >= 5 and min(result.raw_us) == pytest.approx(150_000)


def test_a_host_bound_call_is_timed_by_the_host_clock_through_its_device_tail(fake_cuda, monkeypatch):
    # 10 ms to queue, then 3 ms of device work still running when the call returns: its caller waits 13 ms
    pending = []

    def call(i):
        fake_cuda.take(0.010)
        pending.append(0.003)

    def synchronize(*args):
        fake_cuda.take(sum(pending) + 20e-6)   # a synchronize costs 20 us by itself
        pending.clear()

    monkeypatch.setattr(timing.torch.cuda, "synchronize", synchronize)
    result = timing.time_cuda_events(call, SETTINGS)
    assert result.host_bound and len(result.raw_us) >= 5
    assert max(result.raw_us) == pytest.approx(13_020) and result.overhead_us == pytest.approx(20)
    assert max(result.device_us(True)) == pytest.approx(13_000)


def test_events_loop_times_every_sample_alike_once_a_call_proves_host_bound(fake_cuda):
    # quick calls first (a spin covers them), then calls that no spin covers: only the latter are kept
    calls = itertools.count()
    result = timing.time_cuda_events(lambda i: fake_cuda.take(0.0005 if next(calls) < 4 else 0.008), SETTINGS)
    assert result.host_bound and result.spin_us == 0.0
    assert len(result.raw_us) >= 5 and min(result.raw_us) >= 8_000


def test_events_loop_covers_a_slow_but_coverable_call_with_a_longer_spin(fake_cuda):
    result = timing.time_cuda_events(lambda i: fake_cuda.take(0.001), SETTINGS)
    assert 1_000 < result.spin_us <= timing.MAX_SPIN_US and not result.host_bound


def test_events_loop_survives_a_stray_stall_of_a_coverable_call(fake_cuda):
    # a 1 ms call held 8 ms once (a loaded CPU): before, that alone flipped it to host-bound
    calls = itertools.count()
    result = timing.time_cuda_events(lambda i: fake_cuda.take(0.008 if next(calls) == 3 else 0.001), SETTINGS)
    assert result.spin_us == timing.MAX_SPIN_US and not result.host_bound
    assert len(result.raw_us) >= 5 and max(result.raw_us) < 2_000


class FakeGraph:
    def __init__(self, replay_us: float):
        self.us = replay_us

    def replay(self) -> None:
        pass


def test_graph_with_flushes_is_timed_less_its_flushes_alone(monkeypatch):
    monkeypatch.setattr(timing.torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(timing, "replay_us", lambda graph: graph.us)
    settings = {"max_iters": 50, "min_iters": 5, "budget_s": 5.0, "target_rse": 0.0}
    calls = 20
    cold = timing.time_cuda_graph(FakeGraph(calls * (30.0 + 7.0)), calls, settings, FakeGraph(calls * 30.0))
    assert len(cold) == 50 and cold[0] == pytest.approx(7.0)
    warm = timing.time_cuda_graph(FakeGraph(calls * 6.0), calls, settings)
    assert warm[0] == pytest.approx(6.0)
