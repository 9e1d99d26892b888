"""What play serves in place of a golden's normalization placeholders: a fixed, valid value of each kind.

A golden tape holds `<TIMESTAMP>`, `<UUID>`, `<DAY>`, ... where the server said something volatile
(volatility/normalize.py). Served as they are, they break a client that parses the value (a date, a UUID).
So play sends, in every message it replays, a fixed value of the placeholder's kind instead, the
same every run, all of them one consistent moment: Wednesday 2025-01-01 00:00:00 UTC.

Only the kinds a client parses are replaced (the table below); path placeholders (`<HOME>`,
`<TMP>`, ...), `<PROGRESS_TOKEN>` (play sends the live token), `<REQUEST_STATE>` (opaque) and
redaction placeholders (`<REDACTED:...>`: a secret is never invented) go out as recorded. The
replacement is textual, inside the recorded wire text: every value here is free of quotes and
backslashes, so it is valid anywhere a placeholder can stand in a JSON string.
"""

from __future__ import annotations

import re

SERVED_VALUES: dict[str, str] = {
    "<TIMESTAMP>": "2025-01-01T00:00:00Z",
    "<UUID>": "00000000-0000-4000-8000-000000000000",
    "<DAY>": "Wednesday",
    "<DATE>": "01/01/25",
    "<TIME>": "12:00:00 AM",
    "<ADDRESS>": "0x7f0000000000",
}
_ANY: re.Pattern[str] | None = None  # compiled at the first line that may need it (`mcptape --version` does not)


def serve_values(line: str) -> str:
    """`line` (a wire message) with each placeholder of SERVED_VALUES as its fixed value."""
    global _ANY
    if "<" not in line:  # the usual answer: no placeholder can be in it
        return line
    if _ANY is None:
        _ANY = re.compile("|".join(re.escape(p) for p in SERVED_VALUES))
    return _ANY.sub(lambda m: SERVED_VALUES[m.group(0)], line)


def help_text() -> str:
    """The one-line list `play --help` gives."""
    return ", ".join(f"{k} as {v}" for k, v in SERVED_VALUES.items())
