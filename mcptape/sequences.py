"""Comparing two sequences (strings, lists of lines or events) with C-speed slice compares.

Knows nothing about what the elements are: tape reading (tape/reader.py) finds the lines two
tapes share with these, diff (diff/calls.py, diff/values.py) the events and characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the common prefix of two strings or lists: a binary search over C-speed slice
    compares, so a 20 MB result or a 100k-event tape costs milliseconds, not a Python loop."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: Sequence[Any], b: Sequence[Any], limit: int) -> int:
    """Length (at most `limit`) of the common suffix of two lists, like common_prefix."""
    return equal_back(a, b, len(a), len(b), min(limit, len(a), len(b)))


def equal_back(a: Sequence[Any], b: Sequence[Any], i: int, j: int, limit: int) -> int:
    """How many elements before a[i] and b[j] are equal (at most `limit`), galloping: C-speed
    slice compares whose total length is about twice the answer."""
    lo, hi = 0, 1
    while True:
        hi = min(hi, limit)
        if a[i - hi:i - lo] != b[j - hi:j - lo]:
            break
        lo = hi
        if lo == limit:
            return lo
        hi *= 2
    hi -= 1  # a[i - lo:i] == b[j - lo:j], and the element at hi differs
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i - mid:i - lo] == b[j - mid:j - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo

