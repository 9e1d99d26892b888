"""Where a problem is in mcptape.yml and how it reads: locations, their lines, field names, values.

Shared by every part of config/ that writes a ConfigError paragraph (`file:line: field: ...`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

Loc = tuple[str | int, ...]


def suggest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    """`; did you mean "x"?` for a close match, else `;`: the list of valid values follows either way."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else ";"


def line_for(lines: Mapping[Loc, int], loc: Loc) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def describe(value: Any) -> str:
    """A value as an error message shows it: short, typed."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def field_name(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[\w-]+", part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "top level"


def one_line(text: str) -> str:
    return " ".join(text.split())


