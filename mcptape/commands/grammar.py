"""The command line's grammar: how the words a user types become options, one rule per idea, for every command.

cli.py declares each command's flags (argparse, in argument groups); this module owns what argparse
cannot say by itself, the same way for every command:

- **Reports** (`ReportOption`: --json, --junit, --sarif, --summary): `--json` alone writes the report
  to stdout, `--json=FILE` writes it to FILE. The word after a bare `--json` is never taken as its
  file: `mcptape ls --json tapes/*.jsonl` lists the tapes (it once wrote the list over the first).
  `-` as FILE is stdout too, for every file a command writes.
- **A value may start with a dash** (`fork --error -32603:boom`, every JSON-RPC error code is
  negative): an option that takes a value takes the next word unless that word is one of the
  command's own options (`read_words`).
- **A renamed or removed spelling keeps working one release**, with a line on stderr saying the new
  one (`Deprecated` for a flag, and `--json FILE`, the separate-word form of a report's file).
- **An output never lands on an input** (`check_outputs`): not on a file the command reads, not on a
  tape or a config (an existing one, or a name that looks like one: `*.tape.jsonl`, `*.yml`), not
  on a directory, never two outputs on one file or on stdout; an artifact a command makes (`-o`:
  a tape, a config) is never written over an existing file. Refused before anything runs, exit 3,
  with the fix.

Knows nothing of what a command does with its options (commands/), nor how a file is written
(the outlet). Imported by cli.py on every run, so it imports only the standard library and facts.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.errors import UsageError

STDOUT = "-"  # a file that is stdout: `--json` alone, `--json=-`, `--junit=-`
TAPE_SUFFIX = ".tape.jsonl"  # tape/format.py's, said here without importing the tape package
CONFIG_SUFFIXES = (".yml", ".yaml")  # a config's name: no output mcptape writes is YAML but `init`'s
TAPE_HEADER = b'{"mcptape":"tape"'  # how every tape starts (tape/format.py's make_header)


# -- declaring flags ------------------------------------------------------------------------------


class ReportOption(argparse.Action):
    """A report a command can write: `--FORMAT` alone to stdout, `--FORMAT=FILE` to FILE.

    Declared with `parser.add_argument("--html", action=ReportOption, help=...)`; read_words makes
    a bare `--FORMAT` mean stdout before argparse sees it, so the parser itself always gets a value.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, file_only: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("metavar", "FILE")
        super().__init__(option_strings, dest, **kwargs)
        self.file_only = file_only  # no stdout form (an HTML page): `--html` alone is refused, with the fix

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values == "":
            raise argparse.ArgumentError(self, f"{option_string}=: give a file after `=`, or nothing for stdout")
        setattr(namespace, self.dest, values)


def deprecated_spelling(old: str, new: str) -> str:
    """The line a deprecated spelling gets on stderr (it still works this release)."""
    return f"warning: `{old}` is deprecated and goes in the next release: write `{new}`"


class Deprecated(argparse.Action):
    """A spelling kept one release after its rename: it does what `instead` does (same dest), is
    hidden from --help, and leaves a line for stderr in `namespace.deprecated` (cli.main says it).

    `cli.py`: `add_argument("--safe", action=Deprecated, instead="--no-probe", dest="no_probe", nargs=0, const=True)`.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, instead: str, report: bool = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.instead = instead
        self.joined = "=" if report else " "  # a report's file is written `--json=FILE`

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        said = f"{option_string} {values}" if self.nargs != 0 else str(option_string)
        new = f"{self.instead}{self.joined}{values}" if self.nargs != 0 else self.instead
        notes = list(vars(namespace).get("deprecated", ()))
        notes.append(deprecated_spelling(said, new))
        namespace.deprecated = tuple(notes)


# -- reading the words ----------------------------------------------------------------------------


@dataclass
class Words:
    """A command's words as argparse will read them, and the lines stderr gets about them."""

    words: list[str]
    notes: list[str]


# Parses `words` with the command's parser without printing or exiting: the words it had no
# place for (argparse's extras), or None if they do not parse at all.
Trial = Callable[[list[str]], "list[str] | None"]


def _option_table(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return dict(parser._option_string_actions)  # argparse keeps no public table of a parser's options


def _resolve(table: dict[str, argparse.Action], word: str) -> str | None:
    """The option `word` names (exactly, or a long option's unique prefix as argparse allows), else None."""
    if word in table:
        return word
    if word.startswith("--") and len(word) > 2:
        matches = [o for o in table if o.startswith(word)]
        if len(matches) == 1:
            return matches[0]
    return None


def _is_option(table: dict[str, argparse.Action], word: str) -> bool:
    """Whether `word` is one of the command's options (`--x`, `--x=V`, `-j4`, `-uj4`): not a value."""
    if word == "--" or word in table:
        return True
    if word.startswith("--"):
        return _resolve(table, word.split("=", 1)[0]) is not None
    return len(word) >= 2 and word[0] == "-" and word[:2] in table


def _takes_a_value(action: argparse.Action) -> bool:
    return action.nargs is None or action.nargs == 1


def _stops(action: argparse.Action) -> bool:
    return action.nargs == argparse.REMAINDER


def read_words(parser: argparse.ArgumentParser, words: Sequence[str], trial: Trial,
               exists: Callable[[str], bool] = os.path.lexists) -> Words:
    """`words` (a command's, after its name) rewritten so argparse reads them as this module's grammar says.

    A bare report option becomes `--json=-` (stdout), or, for one more release, takes the next word
    as its file the old way (said on stderr) when that word cannot be an argument of the command:
    the command has no place for it, or no such path exists and it does not look like an input.
    A word starting with a dash after an option that takes a value is that value (`--error=-32603`)
    unless it is one of the command's options. Reading stops at `--` and at a command's trailing
    command line (rec, init: `argparse.REMAINDER`).
    """
    table = _option_table(parser)
    remainder = any(_stops(a) for a in parser._actions if not a.option_strings)
    out: list[str] = []
    notes: list[str] = []
    pending: list[tuple[int, str, str]] = []  # (index in out, option, next word): a bare report option's word
    i = 0
    positional_seen = False
    while i < len(words):
        word = words[i]
        if word == "--" or (remainder and positional_seen):
            out.extend(words[i:])
            break
        name = _resolve(table, word) if word.startswith("-") and "=" not in word else None
        action = table.get(name) if name is not None else None
        if action is None:
            if not word.startswith("-") or word == "-":
                positional_seen = True
            out.append(word)
            i += 1
            continue
        following = words[i + 1] if i + 1 < len(words) else None
        if isinstance(action, ReportOption):
            if following is not None and not (following.startswith("-") and following != "-"):
                pending.append((len(out), name or word, following))
            out.append(f"{name}={STDOUT}")
            i += 1
            continue
        if _takes_a_value(action) and following is not None and following.startswith("-") and following != "-" \
                and not _is_option(table, following):
            out.append(f"{name}={following}")  # `--error -32603:boom`: the value, not an unknown option
            i += 2
            continue
        out.append(word)
        if _takes_a_value(action) and following is not None:
            out.append(following)
            i += 2
            continue
        i += 1
    for at, option, word in reversed(pending):
        if _old_report_file(out, at, option, word, trial, exists):
            out[at] = f"{option}={word}"
            del out[at + 1]
            new = option if word == STDOUT else f"{option}={word}"
            notes.append(deprecated_spelling(f"{option} {word}", new)
                         + (" (a word after a bare report option is the command's own argument from then on)"
                            if word != STDOUT else ""))
    return Words(out, notes)


def _old_report_file(words: list[str], at: int, option: str, word: str, trial: Trial,
                     exists: Callable[[str], bool]) -> bool:
    """Whether `word` after a bare report option is its file the old way (`--json FILE`)."""
    if word == STDOUT:
        return True
    left = trial(words)
    if left is not None and word in left:
        return True  # the command has no place for it: ci, or diff's third word
    return not exists(word) and not looks_like_input(word)


# -- outputs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """One place a command was asked to write: the flag that asked, the path (or STDOUT), what it is.

    `artifact`: the command's product (`-o` of rec, fork, import), never written over an existing
    file; a report (`artifact=False`) may replace an earlier report, never a tape or a config.
    """

    flag: str
    path: str | None
    artifact: bool = False
    directory: bool = False  # --out-dir: a directory to write tapes into


def looks_like_input(path: str) -> bool:
    """A name only an input of mcptape has: a tape, a JSON-lines trace, a config."""
    name = Path(path).name.lower()
    return name.endswith((TAPE_SUFFIX, ".jsonl", *CONFIG_SUFFIXES))


def _is_tape(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(TAPE_HEADER)) == TAPE_HEADER
    except OSError:
        return False


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_outputs(outputs: Iterable[Output], reads: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """Refuse, before anything runs, an output that would land on an input (module docstring), or
    two outputs on one place. `reads`: the files the command reads (tapes, configs, reports)."""
    inputs = [Path(p) for p in reads if p is not None and str(p) != STDOUT]
    to_stdout: list[str] = []
    seen: dict[Path, str] = {}
    for out in outputs:
        if out.path is None:
            continue
        if out.path == STDOUT:
            if out.artifact or out.directory:
                raise UsageError(f"{out.flag} -: this output is a file, not stdout", hint=f"give {out.flag} a path")
            to_stdout.append(out.flag)
            continue
        _check_one(out, inputs)
        where = Path(out.path).resolve()
        if where in seen:
            raise UsageError(f"{seen[where]} and {out.flag} both write {out.path}",
                             hint="give each output its own file")
        seen[where] = out.flag
    if len(to_stdout) > 1:
        raise UsageError(f"{' and '.join(to_stdout)} would both write to stdout",
                         hint=f"give all but one a file: {to_stdout[1]}=FILE")


def _check_one(out: Output, inputs: Sequence[Path]) -> None:
    path = Path(out.path or "")
    spelled = f"{out.flag}={out.path}" if not out.artifact and not out.directory else f"{out.flag} {out.path}"
    for read in inputs:
        if _same(path, read):
            raise UsageError(f"{spelled}: {out.path} is what this command reads; it would be written over",
                             hint=_fix(out))
    if not out.directory and path.is_dir():
        raise UsageError(f"{spelled}: {out.path} is a directory", hint=f"{out.flag} names the file to write")
    blocker = path if out.directory else path.parent  # the first existing place on the way must be a directory
    while not blocker.exists() and blocker != blocker.parent:
        blocker = blocker.parent
    if blocker.exists() and not blocker.is_dir():
        raise UsageError(f"{spelled}: {blocker} is a file, not a directory",
                         hint=f"{out.flag} names a directory to keep the fresh tapes in" if out.directory
                         else f"{out.flag} names the file to write, in a directory")
    if out.directory:
        return
    if out.artifact:
        if path.exists():
            raise UsageError(f"{spelled}: {out.path} exists; mcptape never writes over it",
                             hint=f"remove it first, or give {out.flag} a new path")
        return
    if path.exists() and _is_tape(path) or path.name.lower().endswith(TAPE_SUFFIX):
        raise UsageError(f"{spelled}: {out.path} is a tape's name; a report never goes there", hint=_fix(out))
    if looks_like_input(str(path)):
        raise UsageError(f"{spelled}: {out.path} is a name only an input has (a tape, a trace, a config); "
                         "a report never goes there", hint=_fix(out))


def _fix(out: Output) -> str:
    if out.artifact or out.directory:
        return f"give {out.flag} a new path"
    return f"write it to another file ({out.flag}=FILE), or to stdout ({out.flag} alone)"
