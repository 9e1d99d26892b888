"""The options of `mcptape.replay` and what they are in play's own vocabulary.

Owns PlayOptions and ForkSpec (the keyword arguments a replay takes, typed for a user's checker
and checked again at run time for an untyped caller), and their one mapping onto commands/play.py's
Options and `mcptape play`'s command line (the stdio child runs that command), and the fork a
replay plays, written by commands/fork.py's own code. What each option does is play's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Required, TypedDict

from mcptape.api.modes import RecordMode
from mcptape.commands import fork as fork_command
from mcptape.commands import play as play_command
from mcptape.errors import ConfigError
from mcptape.tape.format import TAPE_SUFFIX

Transport = Literal["stdio", "http", "memory"]


class ForkSpec(TypedDict, total=False):
    """The answer to replace, as `mcptape fork` takes it: the call `at` (the N-th client request,
    as `mcptape show` counts), and one of `result` (a JSON value), `error` ("CODE[:message]") or
    `drop`; `cut` leaves out what came after it. The tape itself is never changed.

    >>> import asyncio
    >>> async def add(endpoint: mcptape.Endpoint) -> str:
    ...     async with endpoint.client_session() as session:
    ...         await session.initialize()
    ...         try:
    ...             await session.call_tool("add", {"a": 2, "b": 3})
    ...         except Exception as e:  # the SDK raises an error answer
    ...             return str(e)
    ...         return "answered"
    >>> quota: mcptape.ForkSpec = {"at": 3, "error": "-32000:quota exceeded"}  # call 3: add (mcptape show)
    >>> with mcptape.replay("tapes/arithmetic.tape.jsonl", transport="memory", fork=quota) as endpoint:
    ...     asyncio.run(add(endpoint))
    'quota exceeded'
    """

    at: Required[int]
    result: Any
    error: str
    drop: bool
    cut: bool


class PlayOptions(TypedDict, total=False):
    """What a replay can be asked, each as `mcptape play`'s option of the same name.

    The live server (`server`: its command as a list of words, or `url`) is for `fallback`,
    `live_tools` and the record modes that record; a replay never goes live unless asked.
    `pace` is "recorded" or "xN"; `faults` are play's `--fault` rules (with `fault_seed`);
    `fork` plays a fork of the tape (ForkSpec) made in a scratch directory, never the tape itself.
    With record mode none and none of fallback and live_tools, the live server is not used.

    >>> options: mcptape.PlayOptions = {"faults": ["tool=add,error=-32000:quota exceeded"]}
    >>> with mcptape.replay("tapes/arithmetic.tape.jsonl", **options) as endpoint:
    ...     endpoint.args[-1]
    '--fault=tool=add,error=-32000:quota exceeded'
    """

    server: Sequence[str]
    url: str
    fallback: bool
    live_tools: Sequence[str]
    pace: str
    faults: Sequence[str]
    fault_seed: int
    fork: ForkSpec
    lenient: bool
    ignore_args: Sequence[str]
    match_on: Literal["params", "name"]
    allow_reuse: bool
    keep_placeholders: bool
    allow_edited: bool


PLAY_OPTIONS = frozenset(PlayOptions.__annotations__)
LAB_OPTIONS = ("pace", "faults", "live_tools", "fork", "lenient", "ignore_args", "allow_reuse", "keep_placeholders")


def record_mode_of(value: RecordMode | str) -> RecordMode:
    try:
        return RecordMode(value)
    except ValueError:
        raise ConfigError(f"record_mode {value!r}: expected one of {', '.join(m.value for m in RecordMode)}") from None


def check_options(options: PlayOptions) -> None:
    """Options a type checker would refuse, refused at run time too (an untyped caller's typo)."""
    unknown = sorted(set(options) - PLAY_OPTIONS)
    if unknown:
        raise ConfigError(f"replay(): unknown option(s) {', '.join(unknown)}; it takes "
                          f"{', '.join(sorted(PLAY_OPTIONS))}, transport, record_mode and allow_record_in_ci")
    match_on = options.get("match_on", "params")
    if match_on not in ("params", "name"):
        raise ConfigError(f"match_on {match_on!r}: expected 'params' or 'name'")
    for key in ("live_tools", "faults", "ignore_args"):
        words(options.get(key, ()), key)


def words(value: Any, what: str) -> list[str]:
    """A list of words given as one (a str is a sequence too: ["p", "y", ...] would be a surprise)."""
    if isinstance(value, str | bytes) or not all(isinstance(word, str) for word in value):
        raise ConfigError(f"{what}={value!r}: give a list of strings, e.g. {what}=[...]")
    return list(value)


def live_server(options: PlayOptions) -> tuple[list[str] | None, str | None]:
    server = words(options["server"], "server") if options.get("server") else None
    url = options.get("url") or None
    if server and url:
        raise ConfigError("give the live server's command (server=[...]) or its URL (url=...), not both")
    return server, url


def transport_of(asked: Transport | None, url: str | None) -> Transport:
    if asked is None:
        return "http" if url else "stdio"
    if asked not in ("stdio", "http", "memory"):
        raise ConfigError(f"transport {asked!r}: expected 'stdio', 'http' or 'memory'")
    return asked


def play_options(tape: Path, options: PlayOptions, *, fallback: bool, server: list[str] | None,
                  url: str | None) -> play_command.Options:
    """Play's own options (commands/play.py) for these: the one place the two vocabularies meet."""
    return play_command.Options(
        tape=str(tape.resolve()), lenient=bool(options.get("lenient")), listen=None,
        ignore=tuple(options.get("ignore_args", ())), match_on=options.get("match_on", "params"),
        allow_reuse=bool(options.get("allow_reuse")),
        # The live server reaches play only where it is asked for: a replay never goes live unless asked.
        fallback=fallback and server is not None,
        server=tuple(server or ()) if (fallback or options.get("live_tools")) else (),
        fallback_url=url if (fallback or options.get("live_tools")) else None,
        pace=options.get("pace"), faults=tuple(options.get("faults", ())), fault_seed=options.get("fault_seed"),
        live_tools=tuple(options.get("live_tools", ())), keep_placeholders=bool(options.get("keep_placeholders")),
        allow_edited=bool(options.get("allow_edited")),
    )


def play_argv(play: play_command.Options) -> list[str]:
    """`mcptape play` arguments for `play` (its command line, the stable interface of docs/design.md)."""
    argv = ["play", play.tape]
    if play.lenient:
        argv.append("--lenient")
    argv += [f"--ignore-arg={path}" for path in play.ignore]
    if play.match_on != "params":
        argv.append(f"--match-on={play.match_on}")
    if play.allow_reuse:
        argv.append("--allow-reuse")
    if play.pace is not None:
        argv.append(f"--pace={play.pace}")
    argv += [f"--fault={rule}" for rule in play.faults]
    if play.fault_seed:
        argv.append(f"--fault-seed={play.fault_seed}")
    if play.live_tools:
        argv.append(f"--live-tools={','.join(play.live_tools)}")
    if play.keep_placeholders:
        argv.append("--keep-placeholders")
    if play.allow_edited:
        argv.append("--allow-edited")
    if play.fallback_url is not None:
        argv.append(f"--fallback-url={play.fallback_url}")
    if play.fallback:
        argv.append("--fallback")
    if play.server:
        argv += ["--", *play.server]
    return argv


def forked(tape: Path, spec: ForkSpec, where: Path) -> Path:
    """The fork `spec` asks for, written into `where` by `mcptape fork`'s own code; the tape is never changed."""
    if not isinstance(spec, dict) or not isinstance(spec.get("at"), int):
        raise ConfigError(f"fork={spec!r}: give a dict such as {{'at': 3, 'error': '-32000:quota'}} "
                          "(or 'result': {...}, 'drop': True; 'cut': True)")
    out = where / f"fork{TAPE_SUFFIX}"
    result = json.dumps(spec["result"]) if "result" in spec else None
    fork_command.write_fork(fork_command.Options(tape=str(tape), at=spec["at"], out=str(out), result=result,
                                                 error=spec.get("error"), drop=bool(spec.get("drop")),
                                                 cut=bool(spec.get("cut"))))
    return out
