"""jsonvalue.json_equal: JSON Schema's instance equality, the one notion diff and replay share."""

from __future__ import annotations

from typing import Any

import pytest

from mcptape.jsonvalue import json_equal


@pytest.mark.parametrize(("a", "b"), [(1, 1.0), (0, -0.0), ({"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": 1}),
                                      (None, None), ("x", "x"), ([], [])])
def test_the_same_json_value(a: Any, b: Any) -> None:
    assert json_equal(a, b) and json_equal(b, a)


@pytest.mark.parametrize(("a", "b"), [(True, 1), (False, 0), (False, 0.0), ([True], [1]), ({"a": False}, {"a": 0}),
                                      (None, 0), ("1", 1), ([1, 2], [2, 1]), ({"a": 1}, {"a": 1, "b": None}), (1, 2)])
def test_different_json_values(a: Any, b: Any) -> None:
    assert not json_equal(a, b) and not json_equal(b, a)


def test_a_text_rule_decides_unequal_strings_anywhere_inside() -> None:
    def upper(a: str, b: str) -> bool:
        return a.upper() == b.upper()

    assert json_equal({"k": ["aB"]}, {"k": ["Ab"]}, upper) and not json_equal({"k": ["aB"]}, {"k": ["Ab"]})
    assert not json_equal({"k": ["aB", True]}, {"k": ["Ab", 1]}, upper)
