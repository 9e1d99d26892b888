"""Server text as init writes it into comments and progress lines: one line, shortened, escaped.

A tool name or description may hold control, bidi or zero-width characters, and YAML or a terminal
could act on them: every character that is not printable is written as its `\\u` escape.
"""

from __future__ import annotations

from typing import Any


def one_line(text: Any, limit: int = 90) -> str:
    """Server text for a comment: one line, shortened, every character YAML or a terminal could act on
    escaped (a tool name or description may hold control, bidi or zero-width characters)."""
    words = " ".join(str(text or "").split())
    words = words if len(words) <= limit else words[: limit - 3].rstrip() + "..."
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in words)
