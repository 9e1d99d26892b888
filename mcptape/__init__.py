"""mcptape: record, replay and diff Model Context Protocol sessions; gate MCP servers in CI.

The public API is the names below (`__all__`); semver covers them, their signatures and the
fields of the models they return, and nothing else of the package (README, "The Python API").
`docs/api.md` is their reference, generated from these docstrings.

    replay(tape, **options)    serve a tape while a block runs; an Endpoint says how to connect
    connect(tape, **options)   the official SDK's ClientSession on a tape, in this process
    record(tape, command|url)  record a client's session as `mcptape rec` does
    diff(a, b, config=None)    the Verdict of `mcptape diff`
    run(config, ...)           the RunReport of `mcptape ci`
    RecordMode                 none | once | new_episodes | all, shared with the pytest plugin

Importing the package is cheap on purpose: `mcptape --version` and `mcptape play` must start
fast, so nothing is imported here but the standard library; each public name loads its module
the first time it is asked for (PEP 562), and heavy modules (rich, ghapi, jsonschema, pydantic)
are imported where they are used. Three public names are also subpackages' names (mcptape/replay/,
record/, diff/): the name is the function, which keeps the subpackage's attributes reachable
(`_Shared`), so `import mcptape.diff.compare as engine` works as it always did.
"""

from __future__ import annotations

import importlib
import sys
import types

from mcptape.version import __version__

# typing.TYPE_CHECKING without importing typing (4 ms, more than the rest of `import mcptape`):
# type checkers read any name TYPE_CHECKING so.
TYPE_CHECKING = False


# Each public name and the module that holds it, imported when the name is first asked for.
_PUBLIC = {
    **dict.fromkeys(("replay", "record", "connect"), "mcptape.api.serving"),
    **dict.fromkeys(("Endpoint", "PlayReport"), "mcptape.api.endpoint"),
    **dict.fromkeys(("PlayOptions", "ForkSpec"), "mcptape.api.options"),
    "RecordMode": "mcptape.api.modes",
    **dict.fromkeys(("diff", "run"), "mcptape.api.judging"),
    **dict.fromkeys(("Verdict", "RunReport"), "mcptape.verdict.model"),
    **dict.fromkeys(("McptapeError", "ConfigError", "TapeError", "ServerError", "ServerTimeout", "ReplayError",
                     "ReplayMiss", "SecretLeak", "WriteError", "McptapeWarning"), "mcptape.errors"),
}
__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:
    from typing import Any

    from mcptape.api.endpoint import Endpoint as Endpoint
    from mcptape.api.endpoint import PlayReport as PlayReport
    from mcptape.api.judging import diff as diff
    from mcptape.api.judging import run as run
    from mcptape.api.modes import RecordMode as RecordMode
    from mcptape.api.options import ForkSpec as ForkSpec
    from mcptape.api.options import PlayOptions as PlayOptions
    from mcptape.api.serving import connect as connect
    from mcptape.api.serving import record as record
    from mcptape.api.serving import replay as replay
    from mcptape.errors import ConfigError as ConfigError
    from mcptape.errors import McptapeError as McptapeError
    from mcptape.errors import McptapeWarning as McptapeWarning
    from mcptape.errors import ReplayError as ReplayError
    from mcptape.errors import ReplayMiss as ReplayMiss
    from mcptape.errors import SecretLeak as SecretLeak
    from mcptape.errors import ServerError as ServerError
    from mcptape.errors import ServerTimeout as ServerTimeout
    from mcptape.errors import TapeError as TapeError
    from mcptape.errors import WriteError as WriteError
    from mcptape.verdict.model import RunReport as RunReport
    from mcptape.verdict.model import Verdict as Verdict


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mcptape' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: the next lookup finds it without coming here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Shared:
    """`mcptape.replay`, `mcptape.record` and `mcptape.diff`: the library's function, called as one
    (its module loaded at the first call), whose other attributes are the subpackage's of the same
    name (`mcptape.replay.engine` is mcptape/replay/engine.py, as before the library existed)."""

    def __init__(self, name: str) -> None:
        self.__name__ = self.__qualname__ = name
        self.__module__ = "mcptape"
        self._module = _PUBLIC[name]

    @property
    def __wrapped__(self) -> Any:  # inspect.signature and help() follow it to the function
        return getattr(importlib.import_module(self._module), self.__name__)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return str(self.__wrapped__.__doc__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(f"mcptape.{self.__name__}"), name)

    def __repr__(self) -> str:
        return f"<function mcptape.{self.__name__}>"


class _Package(types.ModuleType):
    """The package's module type: the import system binds a subpackage to its parent's attribute
    of the same name when it loads it; for the three shared names the function keeps the name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and isinstance(self.__dict__.get(name), _Shared):
            return  # mcptape/replay/ (record/, diff/) loaded: sys.modules holds it, _Shared reaches it
        super().__setattr__(name, value)


if not TYPE_CHECKING:
    replay, record, diff = _Shared("replay"), _Shared("record"), _Shared("diff")
sys.modules[__name__].__class__ = _Package
