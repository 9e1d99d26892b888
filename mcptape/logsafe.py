"""Printing untrusted text (tape content, server stderr) where it must not act: terminals, CI logs, markdown.

Two dangers, one function each:

- `escape_controls`: characters that act instead of printing. ESC and the C0/C1 controls start
  terminal sequences (`\\x1b[2J` clears the screen, `\\x1b]0;...\\x07` sets the window title,
  `\\x1b]52;c;...\\x07` writes the clipboard, `\\x9b` is an 8-bit CSI); bidi overrides and
  isolates reorder what a reader sees (a tool `add\\u202e` reads as another name); zero-width
  characters hide inside names that look alike. They are shown as escapes (`\\x1b[2J`,
  `\\u202e`), visible and inert. Tabs and newlines stay (callers that need one line replace
  newlines themselves). Every renderer of tape or server text calls it before its own styling:
  the terminal reports (report/terminal.py), markdown (report/markdown.py), rec's stderr relay,
  play's log, error messages (cli.py).
- `ci_log_block`: GitHub Actions reads any log line that starts with `::` (or the older `##[`)
  as a workflow command, so a tool result saying `::add-mask::` or `::error file=...` would
  otherwise be obeyed by the runner. Inside GitHub Actions such text is framed with
  `::stop-commands::` and a random token that the text cannot know (the runner then ignores
  both forms until the token); elsewhere it is printed as it is.
"""

from __future__ import annotations

import re

import mcptape.environment as environment

# C0 controls but tab and newline, DEL, C1 controls; the bidi embeddings, overrides, isolates and
# marks; zero-width spaces, joiners, the word joiner and invisible operators, the BOM; and lone
# surrogates (a server's `"\\ud800"`): no UTF-8 text can hold one, so a report, a log or a
# terminal that received one raw would fail to be written at all.
_ACTING = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff]"
)


def _python_escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def escape_controls(text: str, *, json: bool = False) -> str:
    """`text` with every character that could act (module docstring) shown as an escape.

    `json=True` is for JSON text: such characters can only sit inside its strings, where the
    `\\uXXXX` escape keeps the document valid and the same value.
    """
    if _ACTING.search(text) is None:  # the usual case: one C-speed scan, no copy
        return text
    return _ACTING.sub(_json_escape if json else _python_escape, text)


def _could_act(text: str) -> bool:
    return "::" in text or "##[" in text


def ci_log_block(text: str) -> str:
    """`text` made inert for the runner's command parser when running in GitHub Actions."""
    if not environment.on_github_actions() or not _could_act(text):
        return text
    import secrets  # only in a GitHub job: keeps `mcptape --version` light

    token = secrets.token_hex(16)
    body = text if text.endswith("\n") else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


def inert_json(text: str) -> str:
    """JSON text that no terminal or CI log can take for anything but data, and the same value.

    `--json -`: stdout must stay one JSON document, so it cannot be framed (ci_log_block).
    Instead every character that could act is written as its `\\uXXXX` escape, and in a GitHub
    job so is the second character of `::` and of `##[` (the runner's two command prefixes),
    which in JSON can only sit inside strings: no line of it starts a workflow command, however
    the runner trims it.
    """
    text = escape_controls(text, json=True)
    if environment.on_github_actions() and ("::" in text or "##[" in text):
        text = text.replace("::", ":\\u003a").replace("##[", "#\\u0023[")
    return text


def utf8(text: str) -> bytes:
    """`text` as UTF-8 for a report, a view or a log, a lone surrogate in it written `\\ud800`.

    A server may answer `"\\ud800"` (valid JSON, no UTF-8 form); the tape keeps it as that JSON
    escape (jsonrpc.dumps), and every document about the tape writes it this way instead of
    failing to be written: inside a JSON string `\\ud800` is that same value, elsewhere it is the
    visible escape escape_controls shows.
    """
    return text.encode("utf-8", "backslashreplace")


def safe_log(text: str) -> str:
    """Untrusted plain text (no styling of ours) for a terminal or CI log: escaped, then framed."""
    return ci_log_block(escape_controls(text))
