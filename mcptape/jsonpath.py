"""The JSON path subset mcptape.yml's rules use (`$..key`, `$.a.b`, `$.a[0]`, `$.a[*].b`, `$["k.d"]`).

One grammar for the config (which validates a rule's path where it is written) and volatility/normalize.py
(which applies it). Pure, no dependencies.
"""

from __future__ import annotations

import re
from typing import Literal

SUPPORTED_PATHS = '$..key, $.a.b, $.a[0], $.a[*].b, $..a.b, $["key.with.dots"]'
_PATH_TOKEN = re.compile(
    r"""\.\.(?P<deep>[\w$@-]+)|\.(?P<key>[\w$@-]+)|\.(?P<dotstar>\*)"""
    r"""|\[(?:(?P<index>-?\d+)|(?P<star>\*)|'(?P<sq>[^']*)'|"(?P<dq>[^"]*)")\]"""
)

# The same grammar as _PATH_TOKEN, for editors (the schema's `pattern`).
PATH_SCHEMA_PATTERN = r"""^\$(\.\.[\w$@-]+|\.[\w$@-]+|\.\*|\[(-?\d+|\*|'[^']*'|"[^"]*")\])+$"""

PathSegment = tuple[Literal["key", "deep", "index", "any"], str | int | None]


def parse_json_path(path: str) -> list[PathSegment]:
    """Parse the JSON path subset normalize rules use into segments.

    ("key", name) one child; ("deep", name) that key at any depth below; ("index", n) one list
    item; ("any", None) every child. Raises ValueError saying what is supported.
    """
    if not path.startswith("$"):
        raise ValueError(f'JSON path "{path}" must start with "$"; supported: {SUPPORTED_PATHS}')
    pos, segments = 1, []
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if not m:
            raise ValueError(
                f'invalid JSON path "{path}": unexpected "{path[pos:]}" at position {pos}; supported: {SUPPORTED_PATHS}'
            )
        if m["deep"] is not None:
            segments.append(("deep", m["deep"]))
        elif m["key"] is not None:
            segments.append(("key", m["key"]))
        elif m["index"] is not None:
            segments.append(("index", int(m["index"])))
        elif m["dotstar"] is not None or m["star"] is not None:
            segments.append(("any", None))
        else:
            segments.append(("key", m["sq"] if m["sq"] is not None else m["dq"]))
        pos = m.end()
    if not segments:
        raise ValueError(f'JSON path "{path}" selects the whole message; name a key, e.g. $..timestamp')
    return segments  # type: ignore[return-value]


