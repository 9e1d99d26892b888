"""Every public name of mcptape has a docstring with an example, and every example runs (doctest)
where a user's code runs: a project directory (the bundled example: mcptape.yml, its golden tapes,
its calc server). The examples are the API reference's (docs/api.md), so what it shows is true."""

from __future__ import annotations

import doctest
import inspect
from pathlib import Path
from typing import Any

import pytest

import mcptape

PUBLIC = [name for name in mcptape.__all__ if name != "__version__"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def documented(name: str) -> Any:
    """The object a public name stands for (the function behind mcptape.replay, record and diff)."""
    value = getattr(mcptape, name)
    return getattr(value, "__wrapped__", value)


def run_examples(value: Any, name: str) -> tuple[int, int, str]:
    """(examples run, failed, what doctest said) for `value`'s docstring and its own methods'."""
    said: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    finder = doctest.DocTestFinder(recurse=inspect.isclass(value))
    for test in finder.find(value, name, globs={"mcptape": mcptape}):
        runner.run(test, out=said.append)
    return runner.tries, runner.failures, "".join(said)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_has_an_example_and_it_runs(name: str, example: Path) -> None:
    value = documented(name)
    doc = inspect.getdoc(value) or ""
    assert ">>>" in doc, f"mcptape.{name} has no example in its docstring"
    tries, failures, said = run_examples(value, name)
    assert tries > 0 and failures == 0, said


def test_a_wrong_example_fails(example: Path) -> None:
    """The control: the runner reads what an example prints, so a wrong one is caught."""

    def wrong() -> None:
        """>>> mcptape.diff("tapes/arithmetic.tape.jsonl", "tapes/surface.tape.jsonl").verdict
        'same'
        """

    tries, failures, said = run_examples(wrong, "wrong")
    assert (tries, failures) == (1, 1) and "'structural'" in said
