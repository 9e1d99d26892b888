"""Safe markdown for untrusted text: what a server under test chooses can only ever read as text.

Everything that comes from a tape (tool names, arguments, results, error messages, before and
after values) is untrusted: a server under test, or a PR author controlling one, chooses it.
It is therefore only ever shown inside code — fenced blocks whose fence is longer than any
backtick run in the text, or code spans built the same way — where GitHub renders no HTML, no
markdown and no @mentions. Text outside code that is not ours (session names, paths) is
HTML-escaped and has its mentions broken with a zero-width joiner. `<!--` is defanged in all
untrusted text so no tape can plant a second `<!-- mcptape:... -->` marker in our comment.
Controls, bidi overrides and isolates and zero-width characters in untrusted text are shown
as escapes (logsafe.escape_controls, before our own zero-width marks go in), so a tool
`add\u202e` cannot read as another name and nothing invisible hides in one.
The primitives here are the only way report/markdown.py shows text that is not ours.
"""

from __future__ import annotations

import html
import re

from mcptape.logsafe import escape_controls

# The hidden first line of our comment (comment_marker makes it; a tape can never forge one: _defang).
MARKER_RE = re.compile(r"^<!-- mcptape:[A-Za-z0-9._/@+=-]{1,200} -->$")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_BACKTICKS = re.compile(r"`+")
_NEWLINES = re.compile(r"\r\n|\r|\n")


# --- safe text primitives ----------------------------------------------------------------------


def _defang(text: str) -> str:
    """Break HTML comment openers so untrusted text can never carry a (forged) marker."""
    return text.replace("<!--", "<\u200b!--")


def _longest_backtick_run(text: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)


def clip(text: str, max_chars: int, max_lines: int | None = None) -> str:
    """Shorten text to a budget, saying how much was left out (so a reader knows it is cut)."""
    lines = _NEWLINES.split(text)
    cut_lines = 0
    if max_lines is not None and len(lines) > max_lines:
        cut_lines = len(lines) - max_lines
        text = "\n".join(lines[:max_lines])
    else:
        text = "\n".join(lines)
    cut_chars = 0
    if len(text) > max_chars:
        cut_chars = len(text) - max_chars
        text = text[:max_chars]
    if cut_lines or cut_chars:
        more = []
        if cut_lines:
            more.append(f"{cut_lines} more lines")
        if cut_chars:
            more.append(f"{cut_chars} more characters")
        text += f"… ({', '.join(more)} not shown)"
    return text


def one_line(text: str, max_chars: int = 200) -> str:
    """A single display line: newlines and tabs become visible marks, controls escapes, long text is clipped."""
    text = escape_controls(_NEWLINES.sub("⏎", text).replace("\t", " "))
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def code_span(text: str, *, table: bool = False, max_chars: int = 200) -> str:
    """Untrusted text as inline code: nothing inside renders as HTML, markdown or a mention."""
    s = _defang(one_line(text, max_chars))
    if table:
        # GFM splits table cells on `|` before it parses code spans; `\|` is the documented escape.
        s = s.replace("|", "\\|")
    ticks = "`" * (_longest_backtick_run(s) + 1)
    # A space on both sides is stripped again by the parser, and lets s start or end with a backtick.
    return f"{ticks} {s} {ticks}"


def fenced(text: str, info: str = "") -> str:
    """Untrusted text as a fenced code block whose fence no backtick run inside can close."""
    body = _defang(escape_controls(_NEWLINES.sub("\n", text)))
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    if not body.endswith("\n"):
        body += "\n"
    return f"{fence}{info}\n{body}{fence}"


def html_text(value: str) -> str:
    """Not-ours text inside our HTML (a <summary>): escaped, mentions broken, one line.

    Inside an HTML block GitHub renders no markdown, so escaping HTML is all the text needs;
    mentions are still linked in HTML text, hence the zero-width joiner after `@`.
    """
    escaped = html.escape(one_line(_defang(value), 300), quote=True)
    return _MENTION.sub("@\u200d", escaped)


def comment_marker(key: str) -> str:
    """The hidden first line that identifies the one mcptape comment of a config on a PR."""
    safe = re.sub(r"[^A-Za-z0-9._/@+=-]", "-", key)[:200] or "default"
    return f"<!-- mcptape:{safe} -->"


__all__ = ["MARKER_RE", "clip", "code_span", "comment_marker", "fenced", "html_text", "one_line"]
