"""The judge's checks on what it measured itself (judge.EVIDENCE_CHECKS), without processes or a GPU: each
passes honest evidence (the figures of real runs) and fails the evidence a cheat leaves."""
import dataclasses

import pytest

from harness import judge
from harness.config import load_config

RULES = load_config().get("judge")

# v16_lean_frags at medium on an H200 (results/h200/checks/corpus_records.jsonl): claimed 117.8 us, judge 105.5
HONEST_GPU = judge.Evidence(device="cuda", claimed_us=117.8, judge_us=105.5, latency_us=120.0, cpu_us=30.0, cores=16, calls=93,
                            fetch_s=0.004, calibrated_fetch_s=0.004, idle_cpu_s=0.05, busy_cpu_s=20.0,
                            extra_processes={})
# the launch-bound seed shape: the judge's clock measures the host's launch rate, not the device
HONEST_GPU_SEED = dataclasses.replace(HONEST_GPU, claimed_us=4.9, judge_us=13.1, latency_us=20.0)
# cudaMallocAsync scratch at seed: a call alone maps pool memory that back-to-back calls reuse (H200, before the
# sandbox kept the pool's memory: claimed 195.3 us, 406.8 us alone)
HONEST_GPU_ALLOCATING = dataclasses.replace(HONEST_GPU, claimed_us=195.3, judge_us=198.0, latency_us=406.8)
# a single-threaded CPU candidate: CPU time per call about its claim
HONEST_CPU = judge.Evidence(device="cpu", claimed_us=880.0, judge_us=1700.0, latency_us=900.0, cpu_us=900.0, cores=2, calls=180,
                            fetch_s=None, calibrated_fetch_s=0.0, idle_cpu_s=0.03, busy_cpu_s=3.0,
                            extra_processes={})
# OpenMP on every core: CPU time per call is the claim times the cores
HONEST_OPENMP = dataclasses.replace(HONEST_CPU, claimed_us=450.0, cpu_us=880.0, latency_us=460.0, parallelism=1.95)

CHEATS = {
    # three quarters of the work on a side stream: the judge's clock sees all of it (the corpus run: 6277 vs 628)
    "side stream": (dataclasses.replace(HONEST_GPU, claimed_us=628.0, judge_us=6277.0, latency_us=6300.0), "D108"),
    "elapsed_time patched to a third": (dataclasses.replace(HONEST_GPU, claimed_us=39.0), "D108"),
    "work after return on a CPU thread": (dataclasses.replace(HONEST_CPU, claimed_us=5.0), "D108"),
    # three quarters of each call's work on side streams that overlap across calls: throughput matches the
    # claim, one call alone does not (tests/adversarial/judge/cuda_side_stream_pool at seed on an H200: a
    # claim of 83.3 us, 339.1 us alone). A lone call is allowed 2.5x its claim plus margins, so work hidden
    # within that is not caught (README)
    "pipelined across calls": (dataclasses.replace(HONEST_GPU, claimed_us=83.3, judge_us=90.0, latency_us=339.1),
                               "D108"),
    "precomputed while inputs were staged": (dataclasses.replace(HONEST_CPU, claimed_us=20.0, cpu_us=25.0,
                                                                  latency_us=30.0, idle_cpu_s=2.0), "D110"),
    "output finished after the reply": (dataclasses.replace(HONEST_GPU, fetch_s=0.030), "D109"),
    "answers precomputed between requests": (dataclasses.replace(HONEST_CPU, idle_cpu_s=1.5), "D110"),
    "a daemon beside the sandbox": (dataclasses.replace(HONEST_CPU, extra_processes={4242: 0.0}), "D114"),
    # single-threaded timed calls, three times their claim of CPU once the deferred work runs, on 16 cores: the
    # allowance is the cores the timed calls kept busy (at least two), not the 16 it may use
    "work deferred out of single-threaded calls": (dataclasses.replace(HONEST_CPU, cores=16, claimed_us=300.0,
                                                                       cpu_us=900.0, latency_us=600.0), "D108"),
}


@pytest.mark.parametrize("evidence", [HONEST_GPU, HONEST_GPU_SEED, HONEST_GPU_ALLOCATING, HONEST_CPU, HONEST_OPENMP],
                         ids=["gpu medium", "gpu seed", "gpu allocating", "cpu", "cpu openmp"])
def test_honest_evidence_passes_every_check(evidence):
    for check_id, check in judge.EVIDENCE_CHECKS.items():
        assert check(evidence, RULES) == "", check_id
    judge.run_checks(evidence, RULES)


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_evidence_fails_its_check(name):
    evidence, check_id = CHEATS[name]
    with pytest.raises(judge.Integrity) as caught:
        judge.run_checks(evidence, RULES)
    assert caught.value.check == check_id


def test_every_check_is_registered_with_a_rationale():
    assert set(judge.EVIDENCE_CHECKS) == {"D108", "D109", "D110", "D114"}
    for check_id, check in judge.EVIDENCE_CHECKS.items():
        assert check.__doc__ and check_id in judge.CHECKS


def test_a_slowdown_measured_by_the_twin_sandbox_widens_the_lone_call_room_at_most_twofold():
    """The H200 seed runs that flagged honest v13/v16 (results/h200/checks/seed_repeats): one call alone 83.8 us
    beyond the empty call calibrated seconds earlier, against 72.7 allowed. A machine measured 1.5x slower now
    passes it; the room never grows past what a 2x slowdown gives."""
    flagged = dataclasses.replace(HONEST_GPU_SEED, claimed_us=5.1, judge_us=4.5, latency_us=83.8)
    assert judge.clock_accounts_for_claim(flagged, RULES).startswith("one call alone")
    assert judge.clock_accounts_for_claim(dataclasses.replace(flagged, slowdown=1.5), RULES) == ""
    far = dataclasses.replace(flagged, latency_us=2.01 * judge.lone_allowance(False, 5.1, 4.5, 16, RULES))
    assert judge.clock_accounts_for_claim(dataclasses.replace(far, slowdown=2.0), RULES).startswith("one call alone")


# v68a_apair at the large shape on an H200 (results/h200/v68_pipe/call2): claimed 519.3 us; its quickest burst of 3
# calls read 2274.8 us, less an empty burst calibrated at 264.0 us where the other evaluations of that run
# calibrated 510-705: the judge's clock read 670.3 us per call against 669.2 allowed
V68A_LARGE = dataclasses.replace(HONEST_GPU, claimed_us=519.328, judge_us=670.269, latency_us=982.931, calls=9)
V68A_CALIBRATED_S = 264.0e-6
V68A_WALLS_S = (2274.8e-6, 2330.0e-6, 2401.0e-6)


def beside(walls_s: tuple, twin_walls_s: tuple, calls: int = 3):
    return judge.TwinBursts(calls, walls_s, (0.0,) * len(walls_s), twin_walls_s, (0.0,) * len(twin_walls_s))


def test_an_honest_burst_failed_by_a_lucky_calibration_passes_beside_the_twin():
    """The twin times the empty burst of 3 calls now, as the other evaluations calibrated it (640-700 us): the
    same bursts then read 582 us per call (twice calibration is the most subtracted), inside the 669 allowed."""
    assert judge.clock_accounts_for_claim(V68A_LARGE, RULES).startswith("the judge's clock measured 670.3 us")
    assert judge.bursts_failed(V68A_LARGE, RULES)
    again = judge.beside_twin(V68A_LARGE, beside(V68A_WALLS_S, (655e-6, 640e-6, 700e-6)), V68A_CALIBRATED_S, 0.0)
    assert again.judge_us == pytest.approx((2274.8 - 2 * 264.0) / 3, abs=0.01)
    assert not judge.bursts_failed(again, RULES)
    judge.run_checks(again, RULES)


def test_work_the_claim_leaves_out_fails_beside_the_twin_however_slow_it_reads():
    """A third of the work claimed (1,560 us a call, 519 claimed): a twin slowed to any length (work left on the
    GPU while the candidate was stopped) buys at most one calibrated empty burst over the burst's calls."""
    walls_s = (3 * 1560e-6 + 660e-6,) * 3
    first = dataclasses.replace(V68A_LARGE, judge_us=judge.per_call_us(walls_s[0], V68A_CALIBRATED_S, 3))
    assert judge.bursts_failed(first, RULES)
    for twin_s in (660e-6, 0.05, 10.0):
        again = judge.beside_twin(first, beside(walls_s, (twin_s,) * 3), V68A_CALIBRATED_S, 0.0)
        assert again.judge_us >= first.judge_us - V68A_CALIBRATED_S / 3 * 1e6 - 1e-6
        with pytest.raises(judge.Integrity) as caught:
            judge.run_checks(again, RULES)
        assert caught.value.check == "D108" and "per call beyond the harness's own empty call" in str(caught.value)


def test_the_twin_subtracts_no_more_than_it_measured():
    """A twin quicker than calibration: the bursts read slower than the first look, never quicker."""
    again = judge.beside_twin(V68A_LARGE, beside(V68A_WALLS_S, (200e-6, 250e-6, 230e-6)), V68A_CALIBRATED_S, 0.0)
    assert again.judge_us == pytest.approx((2274.8 - 200.0) / 3, abs=0.01) and again.judge_us > V68A_LARGE.judge_us


def test_on_the_cpu_the_twin_corrects_the_empty_calls_cpu_time_within_twice_calibration():
    """CPU time per call, quickest against quickest: the twin's empty call's, at most twice the calibrated one."""
    cheat = dataclasses.replace(HONEST_CPU, claimed_us=5.0, cpu_us=900.0)
    bursts = judge.TwinBursts(64, (0.1,) * 3, (64 * 930e-6,) * 3, (0.01,) * 3, (64 * 60e-6,) * 3)
    assert judge.beside_twin(cheat, bursts, 0.01, 40e-6).cpu_us == pytest.approx(870.0)   # 60 us subtracted
    assert judge.beside_twin(cheat, bursts, 0.01, 20e-6).cpu_us == pytest.approx(890.0)   # at most 2 x 20
    assert judge.bursts_failed(judge.beside_twin(cheat, bursts, 0.01, 40e-6), RULES)


def test_on_the_cpu_one_burst_a_load_spike_hit_does_not_refuse_an_honest_claim():
    """A 2-core CI machine beside memory-bound load: one burst of three read +50% of the empty call's CPU time
    (the seal's unsealing, ~1.1 ms a call; bursts of 1.34, 1.36 and 1.93 ms a call, the empty one 1.14), which as
    a mean put an honest claim over its room. Every burst holds all of its calls' work, so the quickest cannot read
    less than the work: a cheat's claim still fails."""
    honest = dataclasses.replace(HONEST_CPU, claimed_us=140.0, cpu_us=0.0)
    spiked = (64 * 1.30e-3, 64 * 1.31e-3, 64 * 2.0e-3)
    bursts = judge.TwinBursts(64, (0.1,) * 3, spiked, (0.08,) * 3, (64 * 1.13e-3, 64 * 1.12e-3, 64 * 1.14e-3))
    again = judge.beside_twin(honest, bursts, 0.08, 1.13e-3)
    assert again.cpu_us == pytest.approx(180.0) and not judge.bursts_failed(again, RULES)
    cheat = dataclasses.replace(honest, claimed_us=40.0)
    assert judge.bursts_failed(judge.beside_twin(cheat, bursts, 0.08, 1.13e-3), RULES)
