"""Statistics of timing samples that need no device: the leaderboard, `compare` and the CLI use them without
importing torch (a second or more per process), which only the judge, its sandbox and the builds need."""
from __future__ import annotations

import math
from typing import Sequence


def median_interval(samples_us: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free confidence interval of the median: the order statistics x(k) and x(n-k+1) whose
    binomial coverage is at least `confidence` (no resampling, so the same samples always give the same
    interval). None below 6 samples, where even the widest pair covers less than 95%."""
    ordered = sorted(samples_us)
    n = len(ordered)
    if n < 6:
        return None
    tail = (1.0 - confidence) / 2
    if n <= 1000:
        cumulative, k = 0.0, 0
        while True:   # the largest k with P(Binomial(n, 1/2) < k) <= tail
            next_mass = math.comb(n, k) / 2.0 ** n
            if cumulative + next_mass > tail:
                break
            cumulative += next_mass
            k += 1
    else:
        k = int(math.floor(n / 2 - 1.959964 * math.sqrt(n) / 2))
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]
