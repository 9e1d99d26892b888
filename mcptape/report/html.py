"""HTML pages: a run's report (`ci --html`, `merge --html`), one tape (`show --html`), a pair (`diff --html`).

Owns how the pages look and what makes them safe; what they show is html_views.py's, where they
are written (through the outlet, which verifies them) is the commands'. Each page is one
self-contained file: its style and script inline, no font, image or script from anywhere else,
so it opens from an artifact, offline, as it was written.

Safe with a hostile server. Every page is a Jinja2 template with autoescaping, and every value a
template prints passes `_finalize`: text goes through `_visible`, the one door of untrusted text
onto a page, which HTML-escapes it and shows every character the escaper for untrusted text
(`_escapes`, the only caller of logsafe's) would escape — controls, bidi overrides and isolates,
zero-width characters, lone surrogates — as that escape, boxed and named, never as the
character. Only our own markup is `Markup`. No server text is ever put in an attribute: filters
use indices and our own vocabulary (`_token`), anchors are built by report/anchors.py. The page
carries a Content-Security-Policy that allows its one inline style and its one inline script by
their SHA-256 hashes and nothing else (no other script, no inline handler, no `javascript:`
URL, no network: `default-src 'none'`), so even markup that got through would do nothing.
Hashes rather than a nonce: the page is a file, written once, and the same run gives the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from markupsafe import escape as _escape

from mcptape.logsafe import escape_controls
from mcptape.report import surface_notes
from mcptape.report.anchors import anchor
from mcptape.report.html_views import (
    VALUE_CHARS,
    RunView,
    SessionTapes,
    TapeView,
    plain_label,
    run_view,
    tape_view,
)
from mcptape.report.markdown import VERDICT_LABEL, Context, accept_commands
from mcptape.tape.format import Tape
from mcptape.tape.timing import event_times
from mcptape.verdict.model import DiffResult, RunReport, SessionResult
from mcptape.version import __version__

TEMPLATES = Path(__file__).parent / "templates"

# Anything but printable ASCII and the newline: only such runs can hold a character to show.
_MAYBE_HIDDEN = re.compile(r"[^\x20-\x7e\n]+")
_TOKEN = re.compile(r"[a-z0-9_-]{1,40}")


def _escapes(text: str) -> str:
    """The one call of the escaper for untrusted text (logsafe.escape_controls): `text` with every
    character that could act or hide shown as its escape. Only `_visible` asks it."""
    return escape_controls(text)


def _name(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}".strip() if name else f"U+{ord(char):04X} (a control character)"


def _element_text(text: str) -> str:
    """HTML-escaped for an element's content, where quotes are text: `&`, `<` and `>` only."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _visible(text: str, *, in_attribute: bool = True) -> Markup:
    """Untrusted text for a page: HTML-escaped, each hidden character shown as its escape in a box
    that names it (`<span class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>`).

    Which characters are hidden is the escaper's to say (`_escapes`), asked once per run of
    non-ASCII text and, where it changed something, once per character of that run, so a
    server's literal `\\u202e` stays text and only a real U+202E is boxed. Quotes are escaped
    too, as if the text could land in an attribute (none does: this is the second fence), but for
    a message's body (the `content` filter: element content only), where they are most of a
    10 000-message page's escapes.
    """
    escape = _escape if in_attribute else _element_text
    out: list[str] = []
    at = 0
    for m in _MAYBE_HIDDEN.finditer(text):
        run = m.group()
        if _escapes(run) == run:
            continue
        out.append(escape(text[at:m.start()]))
        for char in run:
            shown = _escapes(char)
            if shown == char:
                out.append(escape(char))
            else:
                out.append(f'<span class="hidden-char" title="{_escape(_name(char))}">{_escape(shown)}</span>')
        at = m.end()
    if not out:
        return Markup(escape(text))
    out.append(escape(text[at:]))
    return Markup("".join(out))


def _finalize(value: Any) -> Any:
    """What a template prints: our Markup as it is, None as nothing, text through `_visible`."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return _visible(value)
    return value


def _token(value: Any) -> str:
    """A value of our own vocabulary (a verdict, a direction, a kind) for a class or data attribute;
    anything else, which only a hand-edited tape holds, is `other`."""
    text = str(value)
    return text if _TOKEN.fullmatch(text) else "other"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}".replace(",", "\u202f")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "…"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=repr)


def _clip(text: str, limit: int = VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, finalize=_finalize,
                             undefined=jinja2.StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    env.filters.update(content=lambda text: _visible(text, in_attribute=False), token=_token, ms=_ms, one_line=_one_line, text=_text, clip=_clip, group=surface_notes.group_number,
                       tool_label=surface_notes.tool_label, json_key=lambda k: json.dumps(k, ensure_ascii=False))
    env.globals.update(anchor=anchor, version=__version__,
                       direction_names={"c2s": "client → server", "s2c": "server → client"},
                       direction_arrows={"c2s": "→", "s2c": "←"})
    return env


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


@cache
def _assets() -> tuple[str, str, str]:
    """The page's inline style and script, and the policy that admits exactly those two."""
    style = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    script = (TEMPLATES / "report.js").read_text(encoding="utf-8")
    csp = ("default-src 'none'; " f"style-src {_hash(style)}; script-src {_hash(script)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    return style, script, csp


def _page(template: str, title: str, **values: Any) -> str:
    style, script, csp = _assets()
    # The style and script are ours, and must reach the page byte for byte (their hashes admit them).
    return _environment().get_template(template).render(title=title, style=Markup(style), script=Markup(script),
                                                        csp=csp, **values)


VERDICT_FILTERS = [(v, plain_label(VERDICT_LABEL[v])) for v in ("structural", "output", "error", "secret", "updated", "same")]


def render_run(report: RunReport, tapes: Mapping[str, SessionTapes] | None = None, *,
               context: Context | None = None, tape_views: list[TapeView] | None = None) -> str:
    """A run's report as one HTML page: the verdict and its headline first, the first drifted call
    side by side, the security review, every session (`#session-NAME`), the tool surface before
    and after, context cost and coverage, each session's timeline, how to accept."""
    ctx = context or Context()
    drifted = any(s.verdict in ("output", "structural") for s in report.sessions)
    accept = accept_commands(report, ctx) if drifted and not report.compared else None
    view: RunView = run_view(report, tapes or {}, accept)
    present = {s.result.verdict for s in view.sessions}
    return _page("run.html.j2", f"mcptape: {view.headline} · {ctx.config_shown(report)}", view=view,
                 config=ctx.config_shown(report), commit=ctx.commit, commit_url=ctx.commit_url, run_url=ctx.run_url,
                 verdicts=[(v, label) for v, label in VERDICT_FILTERS if v in present], tape_views=tape_views or [])


def render_tape(tape: Tape, *, path: str) -> str:
    """One tape as a page: every message, filterable by direction, kind, method and tool, with its
    wire time and latency where the tape is timed, server requests under the call they came in,
    and each task's status path."""
    tv = tape_view(tape, id="tape")
    return _page("tape.html.j2", f"mcptape: {tape.name}", tv=tv, path=path)


def render_pair(result: DiffResult, golden: Tape, fresh: Tape, *, golden_path: str, fresh_path: str,
                notes: list[str] | None = None) -> str:
    """`diff --html A B`: the run page's design for one pair (verdict, first drift side by side,
    surface, every drift), then both tapes in the tape viewer."""
    name = fresh.name
    verdict = result.verdict
    session = SessionResult(name=name, verdict=verdict, diff=result, golden=golden_path, fresh=fresh_path,
                            notes=list(notes or []))
    report = RunReport(config=f"{golden_path} vs {fresh_path}", sessions=[session])
    tapes = {name: SessionTapes(golden=golden, fresh=fresh, fresh_times=event_times(fresh))}
    views = [tape_view(golden, id="a", title=f"golden (A): {golden_path}"), tape_view(fresh, id="b", title=f"fresh (B): {fresh_path}")]
    return _page("run.html.j2", f"mcptape diff: {plain_label(VERDICT_LABEL.get(verdict, verdict))}", view=run_view(report, tapes),
                 config=report.config, commit=None, commit_url=None, run_url=None,
                 verdicts=[(verdict, plain_label(VERDICT_LABEL.get(verdict, verdict)))], tape_views=views)


__all__ = ["render_pair", "render_run", "render_tape"]
