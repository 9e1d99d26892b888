"""mcptape/volatility/latency.py: the rank test, the effect size, and that noise cannot make a regression."""

from __future__ import annotations

import math
import random

import pytest

from mcptape.volatility import latency


def test_exact_mann_whitney_matches_the_counting_definition() -> None:
    # Every head sample above every base sample: 1 of C(10, 5) orderings is as extreme.
    assert latency.mann_whitney_greater([2, 3, 4, 5, 6], [0, 0.1, 0.2, 0.3, 0.4]) == pytest.approx(1 / 252)
    # U = 3 of 9 pairs with n = m = 3: P(U >= 3) = 16/20 (the null distribution 1,1,2,3,3,3,3,2,1,1).
    assert latency.mann_whitney_greater([1, 2, 3], [1.5, 2.5, 3.5]) == pytest.approx(0.8)
    assert sum(latency._u_counts(4, 6)) == math.comb(10, 4)


def test_the_normal_approximation_agrees_with_the_exact_test_where_both_apply() -> None:
    rng = random.Random(7)
    head = [rng.gauss(1.2, 1) for _ in range(20)]
    base = [rng.gauss(1.0, 1) for _ in range(20)]
    exact = latency.mann_whitney_greater(head, base)
    tied = [round(x, 1) for x in head], [round(x, 1) for x in base]  # ties: the approximation
    assert latency.mann_whitney_greater(*tied) == pytest.approx(exact, abs=0.03)


def test_quantiles_interpolate_like_numpy() -> None:
    xs = [1.0, 2.0, 3.0, 4.0]
    assert latency.median(xs) == 2.5
    assert latency.quantile(xs, 0.95) == pytest.approx(3.85)
    assert latency.iqr(xs) == pytest.approx(1.5)


def _noisy(rng: random.Random, center: float, n: int) -> list[float]:
    """Call times as a loaded machine gives them: log-normal, and 1 call in 8 hit by a 5-30 ms stall."""
    return [center * rng.lognormvariate(0, 0.4) + (rng.uniform(0.005, 0.03) if rng.random() < 0.125 else 0.0)
            for _ in range(n)]


def test_noise_alone_never_makes_a_regression_and_50ms_always_does() -> None:
    rng = random.Random(20261202)
    false = sum(latency.compare(_noisy(rng, 0.0003, 10), _noisy(rng, 0.0003, 10)).regression for _ in range(2000))
    assert false == 0
    seen = [latency.compare(_noisy(rng, 0.0003, 10), [x + 0.050 for x in _noisy(rng, 0.0003, 10)]) for _ in range(500)]
    assert all(c.regression for c in seen)
    assert all(0.049 < c.shift < 0.060 for c in seen)  # the shift estimate: 50 ms, plus the odd stall


def test_a_small_but_significant_shift_is_not_a_regression() -> None:
    base = [0.0400 + i * 0.00001 for i in range(10)]
    head = [x + 0.0002 for x in base]  # every head call slower, by 0.2 ms of 40 ms
    c = latency.compare(base, head)
    assert c.p < latency.ALPHA and not c.regression
    assert latency.compare(base, [x + 0.010 for x in base]).regression  # 10 ms of 40 ms is


def test_faster_is_never_a_regression() -> None:
    c = latency.compare([0.05] * 5 + [0.051] * 5, [0.001] * 10)
    assert not c.regression and c.shift < 0 and "no slower" in c.line()
