"""What play serves in place of a golden's normalization placeholders: a fixed, valid value of each kind.

A golden tape holds `<TIMESTAMP>`, `<UUID>`, `<DAY>`, ... where the server said something volatile
(volatility/normalize.py). Served as they are, they break a client that parses the value (a date, a UUID).
So play sends, in every message it replays, a fixed value of the placeholder's kind instead, the
same every run, all of them one consistent moment: Wednesday 2025-01-01 00:00:00 UTC. Ids keep
their meaning: a tape's distinct UUIDs are `<UUID>`, `<UUID#2>`, ... (normalize.py), and each is
served as its own valid UUID (`...-8000-000000000000`, `...-8000-000000000001`, ...), so two
ids that differed when recorded differ when played, and one id said twice is one id.

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
_UUID_BASE = SERVED_VALUES["<UUID>"][:-12]  # the n-th distinct UUID ends in n - 1, as 12 hex digits


def _served(m: re.Match[str]) -> str:
    number = m.group(1)
    return SERVED_VALUES[m.group(0)] if number is None else f"{_UUID_BASE}{int(number) - 1:012x}"


def serve_values(line: str) -> str:
    """`line` (a wire message) with each placeholder of SERVED_VALUES as its fixed value, each
    numbered `<UUID#n>` as the n-th UUID."""
    global _ANY
    if "<" not in line:  # the usual answer: no placeholder can be in it
        return line
    if _ANY is None:
        _ANY = re.compile("|".join(re.escape(p) for p in SERVED_VALUES) + r"|<UUID#([1-9][0-9]{0,8})>")
    return _ANY.sub(_served, line)


def help_text() -> str:
    """The one-line list `play --help` gives."""
    return ", ".join(f"{k} as {v}" for k, v in SERVED_VALUES.items()) + f" (<UUID#2> as {_UUID_BASE}000000000001, ...)"
