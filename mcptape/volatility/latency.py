"""Latency of two live sides compared: per call a median, a p95 and a spread, and a regression
only where the difference is beyond the base's own noise. Pure: samples in, plain data out.

The samples are the seconds one step took in each of N interleaved runs of the base and the
head (ci/baseline.py takes them). Timing samples are skewed and heavy-tailed (a scheduler hiccup
makes one call 30x slower), so nothing here assumes a normal distribution:

- the test is Mann-Whitney U, one-sided (is head slower than base?): it compares ranks, so one
  outlier counts as one rank, not as its size; exact below 20 samples a side without ties, the
  normal approximation (tie-corrected, with continuity correction) above;
- the effect is the Hodges-Lehmann shift (the median of every head-minus-base difference), the
  estimate that goes with the rank test and that an outlier does not move;
- a regression needs all four: p < ALPHA; a shift of at least MIN_SHIFT_S and MIN_RATIO of the
  base's median (a significant 0.2 ms on a 40 ms call is not worth a finding); a shift larger
  than the base's own interquartile range (its noise between its own runs); and the head's lower
  quartile above the base's upper one, i.e. most head runs slower than most base runs (stalls of
  a loaded machine that happened to hit half the head runs move the rank test, not that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

ALPHA = 0.01
MIN_SHIFT_S = 0.002
MIN_RATIO = 0.10
MIN_RUNS = 5  # with 5 runs a side the smallest possible p is 1/252 < ALPHA
EXACT_LIMIT = 20


def quantile(samples: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (numpy's default)."""
    xs = sorted(samples)
    if not xs:
        raise ValueError("no samples")
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(samples: Sequence[float]) -> float:
    return quantile(samples, 0.5)


def iqr(samples: Sequence[float]) -> float:
    return quantile(samples, 0.75) - quantile(samples, 0.25)


@lru_cache(maxsize=256)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) orderings give each U (0..n*m) of the first sample: the exact null."""
    if n == 0 or m == 0:
        return (1,)
    # The largest value is from the first sample (it beats all m) or from the second (beats none).
    a = _u_counts(n - 1, m)
    b = _u_counts(n, m - 1)
    out = [0] * (n * m + 1)
    for u, c in enumerate(a):
        out[u + m] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney_greater(head: Sequence[float], base: Sequence[float]) -> float:
    """One-sided p-value of "head tends to be larger than base" (Mann-Whitney U)."""
    n, m = len(head), len(base)
    if n == 0 or m == 0:
        return 1.0
    pooled = sorted([(x, 0) for x in head] + [(x, 1) for x in base])
    ranks = [0.0] * len(pooled)
    ties: list[int] = []
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    rank_sum = sum(r for r, (_, side) in zip(ranks, pooled, strict=True) if side == 0)
    u = rank_sum - n * (n + 1) / 2
    if not ties and n <= EXACT_LIMIT and m <= EXACT_LIMIT:
        counts = _u_counts(n, m)
        return sum(counts[math.ceil(u):]) / math.comb(n + m, n)
    total = n + m
    sigma2 = n * m / 12 * ((total + 1) - sum(t**3 - t for t in ties) / (total * (total - 1)))
    if sigma2 <= 0:
        return 1.0
    z = (u - n * m / 2 - 0.5) / math.sqrt(sigma2)
    return 0.5 * math.erfc(z / math.sqrt(2))


def hodges_lehmann(head: Sequence[float], base: Sequence[float]) -> float:
    """The median of all head - base differences: the shift the rank test is about."""
    return median([h - b for h in head for b in base])


@dataclass(frozen=True)
class Side:
    median: float
    p95: float
    iqr: float
    runs: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Side:
        return cls(median(samples), quantile(samples, 0.95), iqr(samples), len(samples))


@dataclass(frozen=True)
class Comparison:
    """One call's latency, base against head."""

    base: Side
    head: Side
    shift: float  # Hodges-Lehmann, seconds; > 0 is slower in head
    p: float
    regression: bool

    def line(self) -> str:
        b, h = self.base, self.head
        verdict = "REGRESSION" if self.regression else "within noise" if self.shift > 0 else "no slower"
        return (f"base {_ms(b.median)} (p95 {_ms(b.p95)}, IQR {_ms(b.iqr)}) → head {_ms(h.median)} "
                f"(p95 {_ms(h.p95)}, IQR {_ms(h.iqr)}): {'+' if self.shift >= 0 else '−'}{_ms(abs(self.shift))}, "
                f"p={self.p:.2g}, {b.runs}+{h.runs} runs: {verdict}")


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms >= 1 else f"{ms:.2f} ms"


def compare(base: Sequence[float], head: Sequence[float]) -> Comparison:
    """Base and head samples of one call (seconds) -> medians, p95s, spreads and the verdict."""
    b, h = Side.of(base), Side.of(head)
    shift = hodges_lehmann(head, base)
    p = mann_whitney_greater(head, base)
    big_enough = shift >= max(MIN_SHIFT_S, MIN_RATIO * b.median) and shift > b.iqr
    # Most head runs slower than most base runs: stalls that hit a few head runs more than the
    # base's (a loaded machine) move the rank test and the shift, not the lower quartile.
    most = quantile(head, 0.25) > quantile(base, 0.75)
    return Comparison(b, h, shift, p, regression=p < ALPHA and big_enough and most)
