"""The fuzz suite in `make test`: a small fixed campaign and every regression seed (campaign.py).

Seeded, so a failure here reproduces with `python -m tests.fuzz --seed SEED --cases 1 --target T`.
The budget is fixed in cases, not seconds (FIXED_CASES: about 30 s on an idle 2-core machine), so
the same runs happen on every machine; `make fuzz` runs a ten-minute campaign.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.campaign import CONTRACT, REGRESSIONS, TARGETS, campaign, judge

FIXED_SEED = 1000
FIXED_CASES = 9  # three per target


def _failures(counts: object) -> str:
    return "\n\n".join(f"{o.target} seed {o.seed}: {o.command}: {o.problem}" for o in counts.failures)  # type: ignore[attr-defined]


def test_a_small_fixed_campaign_keeps_the_property(tmp_path: Path) -> None:
    counts = campaign(tmp_path, seed=FIXED_SEED, cases=FIXED_CASES)
    assert counts.cases == FIXED_CASES and counts.runs >= FIXED_CASES * 3
    assert not counts.failures, _failures(counts)
    assert set(counts.codes) <= CONTRACT


@pytest.mark.parametrize(("target", "seed"), REGRESSIONS, ids=[f"{t}-{s}" for t, s in REGRESSIONS])
def test_every_case_that_once_failed_keeps_the_property(tmp_path: Path, target: str, seed: int) -> None:
    counts = campaign(tmp_path, seed=seed, cases=1, targets=(target,))
    assert not counts.failures, _failures(counts)


def test_the_property_catches_what_it_is_for() -> None:
    # judge() is the property: each way a run can break it is caught, and a clean run is not.
    assert judge(0, "ok", 50) is None and judge(3, "mcptape ci: invalid config", 50) is None
    assert judge(1, "Traceback (most recent call last):", 50) is not None
    assert judge(3, "mcptape: internal error in ci: KeyError", 50) is not None
    assert judge(130, "", 50) is not None and judge(-9, "", 50) is not None
    assert judge(0, "", 10_000) is not None
    assert set(TARGETS) == {"tape", "config", "server"}
