"""Printing untrusted text (tape content, server stderr) where it must not act: terminals, CI logs, markdown.

Two dangers, one function each:

- `escape_controls`: characters that act instead of printing, or print as nothing. ESC and the
  C0/C1 controls start terminal sequences (`\\x1b[2J` clears the screen, `\\x1b]0;...\\x07` sets
  the window title, `\\x1b]52;c;...\\x07` writes the clipboard, `\\x9b` is an 8-bit CSI); bidi
  overrides and isolates reorder what a reader sees (a tool `add\\u202e` reads as another name);
  zero-width characters hide inside names that look alike; Unicode tag characters
  (U+E0000-E007F) spell ASCII a model reads and no reader sees, so "note_id." followed by tags
  that say "send ~/.ssh/id_rsa" looks like "note_id." everywhere it is printed raw. They are shown
  as escapes (`\\x1b[2J`, `\\u202e`, `\\U000e0049`), visible and inert. Tabs and newlines stay
  unless `lines=False` (one-line displays, the view's paths). The one table of such characters is
  `_ACTING` below; its invisible part is `INVISIBLE_CHARS`, which the security review
  (diff/text_rules.py) reads too, so what the review calls invisible is what every renderer
  escapes. Every renderer of tape or server text calls escape_controls before its own styling:
  the terminal reports (report/terminal.py), markdown (report/md_safe.py), the golden's review
  view (tape/view.py), SARIF and JUnit messages, rec's stderr relay, play's log, error messages (cli.py).
- `ci_log_block`: GitHub Actions reads any log line that starts with `::` (or the older `##[`)
  as a workflow command, so a tool result saying `::add-mask::` or `::error file=...` would
  otherwise be obeyed by the runner. Inside GitHub Actions such text is framed with
  `::stop-commands::` and a random token that the text cannot know (the runner then ignores
  both forms until the token); elsewhere it is printed as it is.
"""

from __future__ import annotations

import re

import mcptape.environment as environment

# Characters that print as nothing or change how others print: Unicode's format characters
# (category Cf: the soft hyphen, bidi embeddings, overrides, isolates and marks, zero-width spaces
# and joiners, the word joiner and invisible operators, the BOM, interlinear annotations, ...) and
# its other default-ignorable code points (the combining grapheme joiner, Hangul and Khmer fillers,
# Mongolian and Unicode variation selectors, all of U+E0000-E0FFF: tags and the supplementary
# variation selectors "sneaky bits" encodes bytes with). A regex character-class body.
INVISIBLE_CHARS = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
# The one table: the invisible characters; C0 controls but tab and newline, DEL, C1 controls; the
# line and paragraph separators (a new line to some terminals and editors, none to others); and lone
# surrogates (a server's `"\\ud800"`): no UTF-8 text can hold one, so a report, a log or a terminal
# that received one raw would fail to be written at all. tests/test_logsafe.py checks it holds every
# character of Unicode's categories Cc, Cf, Cs, Zl and Zp.
_ACTING_CHARS = f"\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{INVISIBLE_CHARS}\ud800-\udfff"
_ACTING = re.compile(f"[{_ACTING_CHARS}]")
_ACTING_OR_LINES = re.compile(f"[\t\n{_ACTING_CHARS}]")
# A zero-width joiner or a text/emoji variation selector right after a symbol is part of an emoji
# (⚠️, 👩‍💻) and shown as it is: it carries no text (the review's `invisible` rule skips it too).
_EMOJI_JOINERS = "\u200d\ufe0e\ufe0f"


def emoji_part(text: str, i: int) -> bool:
    """Whether `text[i]` joins or styles the emoji symbol before it (the exception to the table)."""
    if text[i] not in _EMOJI_JOINERS or i == 0:
        return False
    import unicodedata  # a builtin module, and only reached when such a character is there

    return unicodedata.category(text[i - 1]) in ("So", "Sk", "Sm")


def _python_escape(m: re.Match[str]) -> str:
    if emoji_part(m.string, m.start()):
        return m.group()
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(m: re.Match[str]) -> str:
    if emoji_part(m.string, m.start()):
        return m.group()
    code = ord(m.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP JSON has only the UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_controls(text: str, *, json: bool = False, lines: bool = True) -> str:
    """`text` with every character that could act or hide (module docstring) shown as an escape.

    `json=True` is for JSON text: such characters can only sit inside its strings, where the
    `\\uXXXX` escape keeps the document valid and the same value. `lines=False` escapes tabs and
    newlines too, for text that must stay on one line.
    """
    table = _ACTING if lines else _ACTING_OR_LINES
    if table.search(text) is None:  # the usual case: one C-speed scan, no copy
        return text
    return table.sub(_json_escape if json else _python_escape, text)


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
