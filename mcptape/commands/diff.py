"""`mcptape diff A B [-c mcptape.yml] [--raw] [--json[=FILE]] [--html=FILE] [--conformance]`: read two tapes,
diff them, print the verdict, exit 0/1/2 (3: unreadable tape or config; 4: a secret in the page).

Reading and printing only: the pair of tapes is tape/reader.py's `read_pair`, the comparison
diff/compare.py's, the rendering report/terminal.py's. diff is not a wire command, so its report
goes to stdout; `--json=FILE` writes the verdict as JSON too (`--json` alone: on stdout, instead of
the report). rich is imported only to print the terminal report (`--json` alone does without it).

Both tapes are compared as `mcptape ci` compares a fresh tape with its golden: through
volatility/normalize.py's built-in rules (values, then the canonical order of racing notifications, on
both sides, since a `rec` tape keeps them where they landed), and with `-c` also through that
config's `normalize:` rules and `drift:` settings. `--raw` compares the bytes' meaning as recorded.
`--html=FILE` writes the verdict and both tapes as one page (report/html.py's render_pair, the
tapes as they were compared), checked by the outlet (the config's secrets with `-c`) first.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcptape.commands.grammar import STDOUT, Output, check_outputs
from mcptape.commands.output import check_html, print_report, write_output, write_page
from mcptape.diff.compare import diff_tapes
from mcptape.diff.protocol import without_refused_probe
from mcptape.errors import EXIT_SECRET
from mcptape.logsafe import ci_log_block, escape_controls, safe_log, utf8
from mcptape.tape.atomic import write_atomic
from mcptape.tape.events import recording_notes
from mcptape.tape.format import Tape
from mcptape.tape.lineage import is_fork_of
from mcptape.tape.reader import read_pair
from mcptape.tape.seal import require as require_sealed
from mcptape.verdict.model import DiffResult, Verdict
from mcptape.volatility.normalize import Normalizer, canonical_order, session_paths

if TYPE_CHECKING:
    from mcptape.config.load import LoadedConfig
    from mcptape.config.models import DriftSettings


@dataclass(frozen=True)
class Options:
    golden: str
    fresh: str
    json: str | None  # --json=FILE; STDOUT for stdout (--json alone)
    conformance: bool
    exiting: bool  # the process ends right after (the console script): see run
    raw: bool = False  # no normalization at all
    config: str | None = None  # mcptape.yml whose normalize/drift rules apply
    allow_edited: bool = False  # read tapes that do not match their seal (tape/seal.py), and say so
    html: str | None = None  # --html=FILE: the verdict and both tapes as one page

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(golden=args.a, fresh=args.b, json=args.json, conformance=args.conformance, exiting=args.exiting,
                   raw=args.raw, config=args.config, allow_edited=args.allow_edited, html=args.html)


def run(options: Options) -> int:
    check_html(options.html)
    check_outputs([Output("--json", options.json), Output("--html", options.html)],
                  reads=[options.golden, options.fresh, options.config])
    # Parsing builds millions of acyclic objects; full GC passes over them only cost time. An
    # in-process caller (a test, the Python API) gets its collector back as it was.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(options)
    finally:
        if collecting:
            gc.enable()


def _run(options: Options) -> int:
    compared = _compare(options)
    verdict = compared.verdict
    if verdict.fork is not None:
        if options.html is not None:  # the page says what the terminal said: this pair is a fork, not drift
            note = "the fresh tape (B) is a fork of the golden one (A), or A of B: a fork is not drift"
            if _write_page(options, Verdict(DiffResult(verdict="same"), [note]), compared):
                return EXIT_SECRET
        return _show_fork(verdict, options)
    if options.json is not None:
        text = json.dumps(verdict.to_dict(), ensure_ascii=False, indent=2) + "\n"
        if options.json == STDOUT:  # one JSON document, inert in a CI log (write_output)
            write_output(options.json, utf8(text), what="JSON verdict")
        else:
            write_atomic(options.json, utf8(text), what="JSON verdict")
    if options.html is not None and _write_page(options, verdict, compared):
        return EXIT_SECRET
    if options.json != STDOUT:
        from mcptape.report.terminal import note_lines, render_diff  # rich, for this report only

        def render(console: Any) -> None:
            render_diff(verdict.result, console)
            note_lines(verdict.notes, console)

        print_report(render)
    if options.exiting:
        # The process ends here. Both tapes and the diff are millions of small objects; freeing
        # them one by one was 0.2 s of a 1.8 s diff of two 100k-event tapes. The OS takes the
        # memory back at once, so the output is flushed and the process leaves without it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(verdict.exit_code)
    return verdict.exit_code


def compare(options: Options) -> Verdict:
    """The verdict of `options.golden` against `options.fresh`, as `run` prints it and the library's
    `mcptape.diff` returns it: nothing printed, nothing written, every failure an McptapeError."""
    return _compare(options).verdict


@dataclass
class _Compared:
    """A verdict and what `--html` shows beside it: both tapes as compared, and the config read."""

    verdict: Verdict
    golden: Tape
    fresh: Tape
    loaded: LoadedConfig | None


def _compare(options: Options) -> _Compared:
    drift: DriftSettings | None = None
    normalizer: Normalizer | None = None
    loaded: LoadedConfig | None = None
    if options.config is not None:
        from mcptape.config.load import load_config  # pydantic: only a diff that reads a config pays for it

        loaded = load_config(options.config)  # ConfigError -> exit 3 in cli.py
        drift = loaded.config.drift
        if not options.raw:
            normalizer = Normalizer(loaded.config.normalize, paths=session_paths(config_dir=loaded.base_dir),
                                    recorded=_written_at(options))
    elif not options.raw:
        normalizer = Normalizer(recorded=_written_at(options))
    sealed_notes = [note for path in (options.golden, options.fresh)
                    if (note := require_sealed(path, allow_edited=options.allow_edited)) is not None]
    golden, fresh = read_pair(options.golden, options.fresh)  # TapeError -> exit 3 in cli.py
    lineage = is_fork_of(golden, fresh) or is_fork_of(fresh, golden)
    if lineage is not None:
        return _Compared(Verdict(DiffResult("same", a=options.golden, b=options.fresh), fork=lineage), golden, fresh, loaded)
    # A refused discover probe leaves first: the canonical order would move its HTTP note away from it.
    golden, fresh = without_refused_probe(golden), without_refused_probe(fresh)
    as_sent = fresh
    if normalizer is not None:
        memo: dict[int, dict[str, Any]] = {}  # read_pair shares the objects of identical lines: once each
        golden = _normalized(golden, normalizer, memo, _lines(normalizer, options.golden))
        fresh = _normalized(fresh, normalizer, memo, _lines(normalizer, options.fresh))
    if options.conformance:
        from mcptape.conformance.gate import diff_checked

        result = diff_checked(golden, fresh, drift, as_sent=_in_order_of(as_sent, fresh))
    else:
        result = diff_tapes(golden, fresh, drift)
    # A limit mcptape hit while recording either tape (a message nested too deep) shaped how it
    # was compared: said with the verdict, never left to the tapes alone.
    notes = [*sealed_notes, *(f"{side} tape: {line}" for side, tape in (("golden", golden), ("fresh", fresh))
                              for line in recording_notes(tape.events))]
    return _Compared(Verdict(result, notes), golden, fresh, loaded)


def _write_page(options: Options, verdict: Verdict, compared: _Compared) -> int:
    """`--html=FILE`: the pair's page, checked by the outlet (the config's secrets with -c): 0, or EXIT_SECRET."""
    from mcptape.publish.outlet import Outlet  # the redactor, for --html only
    from mcptape.report.html import render_pair  # jinja2 and rich, for --html only

    assert options.html is not None
    page = render_pair(verdict.result, compared.golden, compared.fresh, golden_path=options.golden,
                       fresh_path=options.fresh, notes=verdict.notes)
    return write_page(options.html, page, Outlet.for_config(compared.loaded), "diff")


def _show_fork(verdict: Verdict, options: Options) -> int:
    """A fork against its parent (either order) is that fork, not drift: said in one line, exit 0
    (tape/lineage.py)."""
    lineage = verdict.fork or {}
    line = (f"fork at call {lineage['at']} ({lineage.get('call')}): {lineage.get('change')}; "
            f"later exchanges {lineage.get('later')} (parent {lineage.get('parent')})")
    if options.json is not None:
        text = json.dumps(verdict.to_dict(), ensure_ascii=False, indent=2) + "\n"
        if options.json == STDOUT:
            sys.stdout.write(ci_log_block(escape_controls(text, json=True)))
            return 0
        write_atomic(options.json, text.encode("utf-8"), what="JSON verdict")
    print(safe_log(line))
    return 0


def _written_at(options: Options) -> tuple[float, ...]:
    """When the two tape files were last written: a rec tape's clock dates are near that moment,
    however long ago it was recorded (a golden's dates are placeholders already)."""
    moments = []
    for path in (options.golden, options.fresh):
        with contextlib.suppress(OSError):  # read_pair says what is wrong with the file
            moments.append(os.stat(path).st_mtime)
    return tuple(moments)


def _lines(normalizer: Normalizer, path: str) -> set[int] | None:
    """The lines of a tape file normalizing could change (None: all), read again for it."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None  # read_pair has read it a moment ago; if it cannot now, every event is walked
    return normalizer.lines_it_may_change(data)


def _normalized(tape: Tape, normalizer: Normalizer, memo: dict[int, dict[str, Any]], lines: set[int] | None) -> Tape:
    """The tape as ci compares it: values normalized, racing notifications in canonical order,
    each event keeping its line in the file (for the report's `fresh:LINE`). An event whose line
    no rule could change is not walked (most of a tape: normalizing was 60% of a 100k-event diff)."""
    events = list(tape.events)
    walk = range(len(events)) if lines is None else [i for i in range(len(events)) if tape.line_of(i) in lines]
    for i in walk:
        event = events[i]
        done = memo.get(id(event))
        if done is None:
            done = memo[id(event)] = normalizer.event(event)
        events[i] = done
    positions: list[int] = []
    ordered = canonical_order(events, positions, copy=False)  # shared objects stay shared (diff's shortcut)
    return Tape(header=tape.header, events=ordered, footer=tape.footer, path=tape.path,
                event_lines=[tape.line_of(i) for i in positions])


def _in_order_of(raw: Tape, normalized: Tape) -> Tape:
    """The recorded fresh tape, not normalized (the conformance check reads what was sent), in
    the normalized tape's order (the engine places its findings by position)."""
    if raw is normalized:
        return raw
    positions: list[int] = []
    ordered = canonical_order(raw.events, positions)
    return Tape(header=raw.header, events=ordered, footer=raw.footer, path=raw.path,
                event_lines=[raw.line_of(i) for i in positions])
