"""Server text as init writes it into comments and progress lines: one line, shortened, escaped.

A tool name or description may hold control, bidi, zero-width or tag characters, and YAML or a
terminal could act on them, or a reader miss them: logsafe.escape_controls (the one table every
renderer escapes), then every other character that is not printable as its `\\u` escape.
"""

from __future__ import annotations

from typing import Any

from mcptape.logsafe import escape_controls


def one_line(text: Any, limit: int = 90) -> str:
    """Server text for a comment: one line, shortened, every character YAML or a terminal could act on
    escaped (a tool name or description may hold control, bidi or zero-width characters)."""
    words = " ".join(str(text or "").split())
    words = words if len(words) <= limit else words[: limit - 3].rstrip() + "..."
    words = escape_controls(words, lines=False)
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in words)
