"""`mcptape fork TAPE --at CALL (--result @FILE|JSON | --error CODE[:message] | --drop) [--cut] -o NEW`.

Writes a fork of a tape: the answer to call CALL (the N-th client request, as `show` counts)
replaced by the given result or JSON-RPC error, or dropped; later exchanges kept unless `--cut`.
The header records the parent and the change (tape/lineage.py), so `ls` shows it as a fork and
`diff PARENT NEW` reads "fork at call N". The fork is scrubbed, verified and written atomically
like every tape mcptape writes (the new answer is the user's text; a path under $HOME is `<HOME>`).
Exit codes: 0 written; 3 a tape that cannot be read, a call that is not on it, a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.commands.grammar import Output, check_outputs
from mcptape.commands.output import say
from mcptape.errors import EXIT_OK, ConfigError
from mcptape.redact.redactor import make_redactor
from mcptape.tape.atomic import write_atomic
from mcptape.tape.lineage import fork_tape
from mcptape.tape.reader import read_tape


@dataclass(frozen=True)
class Options:
    tape: str
    at: int
    out: str
    result: str | None = None
    error: str | None = None
    drop: bool = False
    cut: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(tape=args.tape, at=args.at, out=args.out, result=args.result, error=args.error,
                   drop=bool(args.drop), cut=bool(args.cut))


def parse_error(text: str) -> tuple[int, str]:
    """`CODE[:message]` -> (code, message)."""
    code, _, message = text.partition(":")
    try:
        return int(code), message or "error injected by mcptape fork"
    except ValueError:
        raise ConfigError(f"--error {text!r}: give CODE[:message], CODE an integer such as -32000") from None


def parse_result(text: str) -> Any:
    """`@FILE` (a JSON file) or inline JSON: the `result` member of the new answer."""
    source = f"--result {text}"
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"{path}: cannot read the result: {e.strerror or e}") from e
        source = str(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{source}: not JSON ({e.msg} at line {e.lineno})",
                          hint='e.g. {"content":[{"type":"text","text":"..."}],"isError":false}') from e


def _parent_name(parent: str, out: str) -> str:
    """The parent as the fork's header names it: relative to the fork's directory (a tape holds no
    absolute path, and the pair can move together), else its file name."""
    try:
        return Path(os.path.relpath(Path(parent).resolve(), Path(out).resolve().parent)).as_posix()
    except ValueError:  # another drive (Windows): no relative path exists
        return Path(parent).name


def run(options: Options) -> int:
    fork = write_fork(options)
    say(f"mcptape fork: {options.out}: {fork['call']} (call {fork['at']}): {fork['change']}; "
        f"later exchanges {fork['later']}")
    return EXIT_OK


def write_fork(options: Options) -> dict[str, Any]:
    """Write the fork `options` ask for (nothing said): what its header records of it (tape/lineage.py).
    Never over an existing file, nor over what it reads (commands/grammar.py)."""
    result_file = options.result[1:] if options.result is not None and options.result.startswith("@") else None
    check_outputs([Output("--out", options.out, artifact=True)], reads=[options.tape, result_file])
    parent = read_tape(options.tape)  # TapeError -> exit 3 in cli.py
    header, events, footer = fork_tape(
        parent, options.at,
        result=parse_result(options.result) if options.result is not None else None,
        error=parse_error(options.error) if options.error is not None else None,
        drop=options.drop, cut=options.cut,
        parent_name=_parent_name(options.tape, options.out),
    )
    # Scrubbed and verified like every tape mcptape writes: the new answer is the user's text.
    data = make_redactor().redact_tape(header, events, where=f"forked tape {options.out}", **footer)
    write_atomic(options.out, data, what="forked tape")
    fork: dict[str, Any] = header["fork"]
    return fork
