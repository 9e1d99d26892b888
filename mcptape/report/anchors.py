"""The ids of the HTML report's sections: `report.html#session-NAME`, what the comment and the summary name.

One spelling for the page (report/html.py puts the ids on it) and for the documents that point
into it (report/markdown.py), so a link written in one is an id in the other.
"""

from __future__ import annotations

import re


def anchor(*parts: str) -> str:
    """An element id from names: `session-arith`, `session-arith-drift-2`. A name of the characters
    a session name may have (config/models.py: letters, digits, `_.-`) stays as it is, so
    `report.html#session-NAME` is the link to write; any other character becomes `~` and its code
    point and `~` (a URL fragment keeps it as it is), so no two names share an id."""
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]", lambda m: f"~{ord(m.group()):x}~", p) for p in parts)


def session_anchor(name: str) -> str:
    return anchor("session", name)


__all__ = ["anchor", "session_anchor"]
