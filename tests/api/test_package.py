"""The door of the library: mcptape/__init__.py. `import mcptape` stays as cheap as it was (nothing
but the standard library: each public name loads its module when first asked for), every name of
`__all__` is there, and the three names shared with subpackages (replay, record, diff) are the
functions, in whatever order the subpackages and the names are first used."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import mcptape
from tests.conftest import ROOT, user_env


def fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env=user_env())
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_mcptape_loads_nothing_but_the_standard_library() -> None:
    code = ("import sys; before = set(sys.modules); import mcptape; "
            "new = sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names); "
            "print(new); mcptape.RecordMode; print(sorted(m for m in sys.modules if m.startswith('mcptape')))")
    loaded, asked = fresh(code).splitlines()
    assert loaded == "['mcptape', 'mcptape.version']"  # the door and the one-line version fact
    assert asked == "['mcptape', 'mcptape.api', 'mcptape.api.modes', 'mcptape.version']"  # the control: a name loads its module


def test_the_shared_names_are_the_functions_whichever_comes_first() -> None:
    tape = "fixtures/example/tapes/arithmetic.tape.jsonl"
    subpackage_first = fresh(
        "import mcptape.diff.compare as engine, mcptape.replay.engine, mcptape.record.stdio, mcptape; "
        f"print(mcptape.diff({tape!r}, {tape!r}).verdict, engine.__name__, mcptape.replay.engine.__name__, "
        "callable(mcptape.record))")
    assert subpackage_first == "same mcptape.diff.compare mcptape.replay.engine True"
    function_first = fresh(
        f"import mcptape; v = mcptape.diff({tape!r}, {tape!r}).verdict; import mcptape.diff.compare as engine; "
        "from mcptape.replay import engine as replaying; print(v, engine.__name__, replaying.__name__, mcptape.diff)")
    assert function_first == "same mcptape.diff.compare mcptape.replay.engine <function mcptape.diff>"


def test_every_public_name_is_there_and_signed_as_its_function() -> None:
    for name in mcptape.__all__:
        assert getattr(mcptape, name) is not None and name in dir(mcptape)
    from mcptape.api import judging, serving

    assert inspect.signature(mcptape.diff) == inspect.signature(judging.diff)
    assert inspect.signature(mcptape.replay) == inspect.signature(serving.replay)
    assert mcptape.record.__doc__ == serving.record.__doc__
    with pytest.raises(AttributeError, match="no attribute 'play'"):
        mcptape.play  # noqa: B018 - the command is not a name of the library
