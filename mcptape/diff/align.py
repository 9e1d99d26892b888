"""Pair the calls of two tapes so that one inserted call is one finding, not a cascade.

Three passes, each linear or bounded:
1. the common prefix and suffix of identical calls (method + canonical params) pair up
   position by position — an unchanged session of 100k events never reaches pass 2;
2. in the middle, identical calls pair as multisets, earliest first: clients run tool calls
   in parallel, so reordered identical calls are not drift;
3. what is left pairs by identity (method + tool/prompt/resource name) with difflib's
   SequenceMatcher (autojunk off: repeated calls are the norm, not junk), so a call whose
   arguments changed is compared with its old self. Above a size where SequenceMatcher could
   turn quadratic, identities pair greedily in order instead.
Whatever is still unpaired was added (fresh only) or removed (golden only).

Knows nothing about what a call means beyond its keys (calls.py builds them).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from mcptape.diff.calls import Call

# SequenceMatcher is fine on a few thousand leftovers; beyond, greedy pairing keeps it linear.
SEQUENCE_MATCHER_LIMIT = 2000


@dataclass
class Step:
    """One row of the alignment: a pair, an added call (golden None) or a removed call (fresh None)."""

    golden: Call | None
    fresh: Call | None


def align(golden: Sequence[Call], fresh: Sequence[Call]) -> list[Step]:
    """The alignment in fresh-tape order; removed calls sit just before their golden successor's partner."""
    pair_of_golden: dict[int, int] = {}  # golden seq -> fresh seq
    n, m = len(golden), len(fresh)

    lo = 0
    while lo < n and lo < m and golden[lo].same_request(fresh[lo]):
        pair_of_golden[lo] = lo
        lo += 1
    hi_g, hi_f = n, m
    while hi_g > lo and hi_f > lo and golden[hi_g - 1].same_request(fresh[hi_f - 1]):
        hi_g -= 1
        hi_f -= 1
        pair_of_golden[hi_g] = hi_f

    mid_g = list(range(lo, hi_g))
    mid_f = list(range(lo, hi_f))
    if mid_g and mid_f:
        # Pass 2: identical calls as multisets, earliest unpaired first.
        by_key: dict[str, deque[int]] = defaultdict(deque)
        for gi in mid_g:
            by_key[golden[gi].key].append(gi)
        rest_f: list[int] = []
        for fi in mid_f:
            queue = by_key.get(fresh[fi].key)
            if queue:
                pair_of_golden[queue.popleft()] = fi
            else:
                rest_f.append(fi)
        rest_g = [gi for gi in mid_g if gi not in pair_of_golden]
        # Pass 3: same identity, other arguments.
        if rest_g and rest_f:
            _pair_by_ident(golden, fresh, rest_g, rest_f, pair_of_golden)

    return _ordered(golden, fresh, pair_of_golden)


def _pair_by_ident(
    golden: Sequence[Call], fresh: Sequence[Call], rest_g: list[int], rest_f: list[int], pairs: dict[int, int]
) -> None:
    if len(rest_g) <= SEQUENCE_MATCHER_LIMIT and len(rest_f) <= SEQUENCE_MATCHER_LIMIT:
        a = [golden[i].ident for i in rest_g]
        b = [fresh[i].ident for i in rest_f]
        matcher = SequenceMatcher(None, a, b, autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                pairs[rest_g[block.a + k]] = rest_f[block.b + k]
        return
    by_ident: dict[str, deque[int]] = defaultdict(deque)
    for gi in rest_g:
        by_ident[golden[gi].ident].append(gi)
    for fi in rest_f:
        queue = by_ident.get(fresh[fi].ident)
        if queue:
            pairs[queue.popleft()] = fi


def _ordered(golden: Sequence[Call], fresh: Sequence[Call], pair_of_golden: dict[int, int]) -> list[Step]:
    fresh_pair: dict[int, int] = {f: g for g, f in pair_of_golden.items()}
    # Removed golden calls wait before the fresh partner of the next paired golden call.
    removed_before: dict[int | None, list[int]] = defaultdict(list)
    pending: list[int] = []
    for gi in range(len(golden)):
        if gi in pair_of_golden:
            if pending:
                removed_before[pair_of_golden[gi]].extend(pending)
                pending = []
        else:
            pending.append(gi)
    steps: list[Step] = []
    for fi, call in enumerate(fresh):
        for gi in removed_before.get(fi, ()):
            steps.append(Step(golden[gi], None))
        gi_paired = fresh_pair.get(fi)
        steps.append(Step(golden[gi_paired] if gi_paired is not None else None, call))
    for gi in pending:
        steps.append(Step(golden[gi], None))
    return steps
