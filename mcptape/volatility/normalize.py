"""Normalization: volatile values -> placeholders, and a canonical order for racing notifications.

Owns what makes a fresh tape comparable with its golden and a golden byte-identical across
runs of an unchanged server. It runs on events after redaction (redact/) and before diff/
compares them or ci.py writes a golden. Pure functions over plain data; no I/O.

Values. Every string in a message (`msg`, the `params` echo, stderr and garbage text) goes
through, in this order:
  1. the user's `normalize:` path rules (a JSON path subset: `$..key`, `$.a.b`, `$.a[0]`,
     `$.a[*].b`, `$..a.b`, `['quoted key']`), evaluated with the JSON-RPC message as `$`
     (`$.result.structuredContent.datetime`); the `params` echo of a response is evaluated
     as `{"params": ...}` so the same rule covers a request and the echo of it;
  2. the built-in path rules `$..progressToken` -> `<PROGRESS_TOKEN>`, `$..requestState` ->
     `<REQUEST_STATE>` (2026-07-28 input-required state, sealed afresh by the server each run)
     and `$..taskId` -> `<TASK_ID>` (a task's id is the server's pick, its call is what it is),
     `$..pollInterval` and `$..pollIntervalMs` -> `<POLL_INTERVAL>` (how often to poll is timing);
  3. the user's regex rules (each match replaced by the literal placeholder);
  4. the built-in string rules: the session's known paths (config directory, repository
     checkout, $HOME, extra directories such as a server's sandbox) -> `<CONFIG_DIR>`,
     `<REPO>`, `<HOME>`, `<DIR>`; any other `/tmp/<name>` -> `<TMP>`; the clock's dates ->
     `<TIMESTAMP>` (ISO-8601 date-times, JavaScript `Date.toString()`
     `Mon Jan 01 2025 00:00:00 GMT+0000 (Coordinated Universal Time)`, RFC 1123 / HTTP dates,
     and integers of epoch milliseconds under a time-named key such as `createdAt`); 12-hour clock
     readings `11:45:51 PM` -> `<TIME>`; UUIDs -> `<UUID>`, `<UUID#2>`... (UuidNumbers); the memory
     address of a Python repr (`<tzoffset object at 0x7f...>`) -> `<ADDRESS>`; and a weekday
     (`day_of_week`, `dayOfWeek`, `weekday`) beside a date that became `<TIMESTAMP>` -> `<DAY>`;
  5. on server stderr lines only (they are logs, and log prefixes carry the clock): slash dates
     `11/29/26` -> `<DATE>` and clock times `13:53:24` -> `<TIME>`.
The clock's dates. A date is volatile when it is the clock's: within CLOCK_WINDOW_S (two days,
which covers every timezone offset) of the moment the Normalizer judges it (`now`) or of a moment
it is told the tapes were written (`recorded`: `mcptape diff` passes the files' mtimes). What a run
stamps (the time server's `datetime`, a fresh checkout's file times, "created at") is that; a
date the project pins (a fixture repository's commit dates, set through GIT_AUTHOR_DATE, a
file's mtime set on purpose) is far from it and stays visible, so a changed pinned date is
drift. A date that cannot be read is taken as the clock's, as before this rule. A golden keeps
the placeholders it was written with, so checking it days later compares placeholders with
placeholders; only a golden value near neither moment (a date in the near future) could flip.
A string that holds a JSON object or array (a tool's JSON text copy of its structured result)
is parsed (jsonrpc.loads, within the nesting levels the string itself leaves: deeper embedded
JSON stays text), normalized the same way — descendant rules (`$..key`) and string rules apply
inside, absolute rules do not, because their `$` is the message — and, if anything changed,
re-serialized deterministically (indent 2 if the original had line breaks, else compact).
An event whose message changed loses its `raw` field (the exact wire bytes held the volatile
value; the normalized message is the truth for comparison), except a message holding deep
markers (jsonrpc.py: "Depth"): those go through the string rules as text, and its `raw` is
rebuilt from the normalized message, since the message alone no longer says its wire form.

Order. The protocol does not fix when a server's timer-driven traffic lands relative to the
steps: server-everything's `roots/list` fires on a ~350 ms timer, log messages and
`*/list_changed` notifications race responses. So in a fresh tape these "floating" events —
server notifications `notifications/message`, `notifications/*/list_changed`,
`notifications/resources/updated`, `notifications/tasks/status`, and server requests `roots/list`
and `ping` together with
mcptape's answer to each — are taken out of whatever step they landed in, lose their `step`,
and are placed after the last step, sorted by (method, content without ids); a notification
that arrived while a client request was unanswered keeps that request's id (`"during"`), so a
drift in it is still the drift of the call that caused it (diff/attribution.py). Everything else
keeps its arrival order, which a single server stream fixes (progress notifications stay
before their response, a sampling request stays inside the tool call that caused it).
Server request ids are then renumbered 0, 1, 2, ... in that canonical order (a timer's
request and a tool's request may swap ids between runs), on the request and on our answer;
so are the ids of the task polls the scripted client kept (`mcptape-poll-N`: it keeps only a
poll whose status changed, and how many polls a task took is timing), 1, 2, ... in tape order.
A `rec` tape's polls that repeat the task state before them are left out the same way
(`_collapse_polls`), so two recordings of one task compare by its status path.
stderr lines come from their own pipe, so they go after the floating block, then notes, then
the process exit. Their content and number are still compared; only their position is not.
"""

from __future__ import annotations

import bisect
import email.utils
import itertools
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcptape.jsonpath import parse_json_path
from mcptape.jsonrpc import DEEP_KEY, MAX_DEPTH, canonical, expand_deep, id_key, is_deep, loads_depth
from mcptape.placeholders import PATH_END, PATH_START, UuidNumbers

FLOATING_NOTIFICATIONS = frozenset({
    "notifications/message",
    "notifications/tools/list_changed",
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
    "notifications/roots/list_changed",
    "notifications/resources/updated",
    # a task's status pushes race the client's polls of it (2025-11-25 tasks, the 2026 extension)
    "notifications/tasks/status",
    "notifications/tasks",
})
FLOATING_SERVER_REQUESTS = frozenset({"roots/list", "ping"})

_TIMESTAMP = re.compile(
    r"(?<![\w])\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\w])"
)
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# JavaScript's Date.toString(): `Mon Jan 01 2025 00:00:00 GMT+0000 (Coordinated Universal Time)`.
_JS_DATE = re.compile(
    rf"(?<![\w]){_WEEKDAY} {_MONTH} \d{{2}} \d{{4}} \d{{2}}:\d{{2}}:\d{{2}} GMT[+-]\d{{4}}(?: \([^()]*\))?"
)
# RFC 1123 / HTTP dates: `Wed, 02 Dec 2026 00:57:14 GMT`.
_RFC1123 = re.compile(rf"(?<![\w]){_WEEKDAY}, \d{{1,2}} {_MONTH} \d{{4}} \d{{2}}:\d{{2}}:\d{{2}} (?:GMT|UTC|[+-]\d{{4}})(?![\w])")
# A 12-hour clock reading with seconds (`11:45:51 PM`): a rendering of the clock, whatever the day.
_CLOCK_12H = re.compile(r"(?<![\w:])\d{1,2}:\d{2}:\d{2}\s?[AP]M(?![\w])")
# A Python repr's memory address, new in every process: `<tzoffset object at 0x7f3a...>`.
_ADDRESS = re.compile(r"(?<= object at )0x[0-9a-fA-F]+(?=>)")
# Keys whose integer value, in epoch milliseconds, is a time (`createdAt`, `timestamp`, `expires_ms`).
_TIME_KEY = re.compile(r"(?i)(?:time|date|stamp|created|updated|modified|accessed|expires?)|(?:_at|At|_ms|Ms)$")
_DAY_KEYS = frozenset({"day_of_week", "dayOfWeek", "weekday"})
_DAY_NAMES = frozenset({"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"})
# How near the moment of normalization a date must be to be the clock's (module docstring).
CLOCK_WINDOW_S = 2 * 86400
_UUID = re.compile(r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])")
_TMP_DIR = re.compile(r"(?<![\w.-])(?:/private)?/tmp/[^/\s\"'<>`\\]+")
# Log prefixes on stderr: `[11/29/26 13:53:24]` (rich, the Python SDK's servers), `13:53:24,123`.
_LOG_DATE = re.compile(r"(?<![\w/])\d{1,4}/\d{1,2}/\d{1,4}(?![\w/])")
_LOG_TIME = re.compile(r"(?<![\w:])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\w:])")
# What each built-in rule needs to find in a tape's bytes (JSON text) before it can change a
# line (Normalizer.lines_it_may_change), looked for in the bytes as classes: every hex digit as h,
# `:` `/` `-` as `~`, `[` as `{`, and the lead bytes of UTF-8's other whitespace (str.lstrip strips
# NEL, NBSP, U+1680, U+2000-U+3000) as a space. A clock's `12:34`, a log's `11/29`, a UUID's
# hex-hex are `h~h` (inside strings only: JSON's own colons follow a quote); epoch milliseconds are
# 13 h; `/tmp/`; the deep-JSON marker; a string opening with `{` or `[` (embedded JSON), maybe after
# whitespace; any backslash (an escape could hide any of these). A Python address's `0x` is looked
# for in the bytes themselves (as classes it would be every "text"). Each with bytes.find over the
# whole tape: a regex per line cost more than the normalizing it spares.
_AS_CLASSES = bytes.maketrans(b"0123456789abcdefABCDEF:/-[\xc2\xe1\xe2\xe3", b"hhhhhhhhhhhhhhhhhhhhhh~~~{    ")
_TRIGGERS = (b"h~h", b"h" * 13, b"/tmp/", DEEP_KEY.encode("utf-8"), b'"{', b'" ', b"\\")
_ADDRESS_TRIGGER = b"0x"


def _first_per_line(data: bytes, needle: bytes) -> Iterable[int]:
    """Where `needle` first stands in each line that holds it (one is enough to walk the line)."""
    at = data.find(needle)
    while at >= 0:
        yield at
        end = data.find(b"\n", at)
        if end < 0:
            return
        at = data.find(needle, end + 1)



# -- JSON paths ---------------------------------------------------------------------------------

# A path is a list of (descendant?, selector); a selector is ("key", name) | ("index", n) | ("any",).
Selector = tuple[Any, ...]
Segment = tuple[bool, Selector]



def parse_path(path: str) -> list[Segment]:
    """`$..a.b[0]` -> segments, with jsonpath.py's parser (one syntax, validated where it is written).

    Raises ValueError saying what the supported subset is.
    """
    segs: list[Segment] = []
    for kind, arg in parse_json_path(path):
        if kind == "deep":
            segs.append((True, ("key", arg)))
        elif kind == "any":
            segs.append((False, ("any",)))
        else:
            segs.append((False, (kind, arg)))
    return segs


def _selects(sel: Selector, key: Any) -> bool:
    if sel[0] == "any":
        return True
    if sel[0] == "key":
        return isinstance(key, str) and key == sel[1]
    return isinstance(key, int) and key == sel[1]


# mcptape records at most MAX_DEPTH levels per message (deeper parts are deep markers, text); a
# tape edited by hand may hold more. Rules stop there: past it nothing mcptape wrote can sit, and
# walking a 900-level nest by recursion would exhaust the stack.
RULE_DEPTH = MAX_DEPTH + 4


def sorted_items(value: Any) -> Any:
    """A value in canonical order (`order: sorted` rules): a list's items sorted by their JSON; in a text,
    the comma-separated items of each line that has them (a Go map or a Python set printed into a
    description), else its lines, else its space-separated words. Trailing punctuation stays at the end."""
    if isinstance(value, list):
        return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    if not isinstance(value, str):
        return value
    lines = value.split("\n")
    if any("," in line for line in lines):
        return "\n".join(_sorted_line(line) for line in lines)
    if len(lines) > 1:
        return "\n".join(sorted(lines))
    return _sorted_line(value, " ")


def _sorted_line(line: str, sep: str = ",") -> str:
    """One line's items sorted; what precedes the list up to a ": " ("Allowed commands: ") stays in front.
    Idempotent (a golden is normalized again before it is compared): the head and the set of items
    come out the same from the sorted line."""
    body = line.rstrip(".;:!?) ")
    tail = line[len(body):]
    if sep not in body:
        return line
    head, colon, rest = body.partition(": ")
    if not colon or sep in head:
        head, rest = "", body
    else:
        head += colon
    items = rest.split(sep)
    if sep == "," and all(item.startswith(" ") for item in items[1:]):
        return head + ", ".join(sorted(item.strip(" ") for item in items)) + tail
    return head + sep.join(sorted(items)) + tail


def _sorted_match(match: re.Match[str]) -> str:
    return str(sorted_items(match.group(0)))


def apply_path(node: Any, segs: Sequence[Segment], placeholder: Any, i: int = 0, depth: int = 0) -> Any:
    """`node` with every value the path selects replaced by `placeholder` (a new object; input untouched);
    a callable placeholder maps the value instead (`order: sorted`)."""
    if i == len(segs):
        return placeholder(node) if callable(placeholder) else placeholder
    if depth > RULE_DEPTH:
        return node
    descend, sel = segs[i]
    items: Iterable[tuple[Any, Any]]
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
        if sel[0] == "index" and sel[1] < 0 and not descend:
            sel = ("index", len(node) + sel[1])
    else:
        return node
    out: list[tuple[Any, Any]] = []
    changed = False
    for key, value in items:
        new = value
        if _selects(sel, key):
            new = apply_path(new, segs, placeholder, i + 1, depth + 1)
        if descend:
            new = apply_path(new, segs, placeholder, i, depth + 1)
        changed = changed or new is not value
        out.append((key, new))
    if not changed:
        return node  # nothing selected: the very object (diff's identity shortcut relies on it)
    if isinstance(node, dict):
        return dict(out)
    return [v for _, v in out]


def _literal(placeholder: str) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement that inserts `placeholder` as written (no backslash or group escapes)."""
    return lambda _match: placeholder


# -- the normalizer -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _PathRule:
    segs: list[Segment]
    placeholder: str | Callable[[Any], Any]
    descendant_only: bool


class Normalizer:
    """Applies the built-in and the config's rules; one per session (it knows the session's paths)."""

    def __init__(
        self,
        rules: Sequence[Any] = (),
        *,
        paths: Mapping[str, str] | None = None,
        now: float | None = None,
        recorded: Sequence[float] = (),
    ) -> None:
        """`rules`: config.NormalizeRule-like objects (path | pattern, replace).

        `paths`: absolute directory -> placeholder, e.g. {"/tmp/x/proj": "<CONFIG_DIR>"}.
        `now`: the moment dates are judged against (epoch seconds; default: the clock now).
        `recorded`: other moments the clock's dates may come from: when the tapes were written
        (`mcptape diff` of two rec tapes made last week judges their dates by then as well).
        """
        self.now = time.time() if now is None else now
        self._uuids = UuidNumbers()  # each distinct UUID its own placeholder: play serves them as distinct ids
        self.moments = (self.now, *recorded)
        self.path_rules: list[_PathRule] = []
        self.regex_rules: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = []
        for rule in rules:
            ordered = getattr(rule, "order", None) == "sorted"
            if getattr(rule, "path", None):
                segs = parse_path(rule.path)
                self.path_rules.append(_PathRule(segs, sorted_items if ordered else rule.replace, segs[0][0]))
            elif getattr(rule, "pattern", None):
                self.regex_rules.append((re.compile(rule.pattern), _sorted_match if ordered else rule.replace))
        self.path_rules.append(_PathRule([(True, ("key", "progressToken"))], "<PROGRESS_TOKEN>", True))
        # 2026-07-28 input-required rounds: the server seals its state afresh each run (the SDK with a
        # per-process key), and the client echoes it back, so request and result agree after this.
        self.path_rules.append(_PathRule([(True, ("key", "requestState"))], "<REQUEST_STATE>", True))
        # Tasks (2025-11-25): the server names each task afresh (server-everything: random hex); a
        # task's identity is the call that made it, not its id.
        self.path_rules.append(_PathRule([(True, ("key", "taskId"))], "<TASK_ID>", True))
        # A task's poll interval (2025-11-25 `pollInterval`, the 2026 extension's `pollIntervalMs`)
        # is timing, which goldens never hold; play serves a short one (replay/tasks.py).
        for key in ("pollInterval", "pollIntervalMs"):
            self.path_rules.append(_PathRule([(True, ("key", key))], POLL_INTERVAL, True))
        # `$..key` rules at the end of the list (the built-ins, and the user's just before them) are
        # applied in the string walk itself: one pass over each message instead of one per rule.
        # Taken from the end, so the order rules apply in stays: for one key the last rule wins.
        self.deep_keys: dict[str, str] = {}
        while self.path_rules and len(self.path_rules[-1].segs) == 1 and self.path_rules[-1].segs[0][0] \
                and self.path_rules[-1].segs[0][1][0] == "key" and isinstance(self.path_rules[-1].placeholder, str):
            folded = self.path_rules.pop()
            self.deep_keys.setdefault(folded.segs[0][1][1], str(folded.placeholder))
        known: dict[str, str] = {}
        for directory, placeholder in (paths or {}).items():
            for variant in {directory, os.path.realpath(directory)}:
                variant = variant.rstrip("/")
                if variant.count("/") >= 1 and len(variant) > 1:
                    known.setdefault(variant, placeholder)
        self.known_paths: list[tuple[re.Pattern[str], str]] = [
            (re.compile(PATH_START + re.escape(p) + PATH_END), ph)
            for p, ph in sorted(known.items(), key=lambda kv: -len(kv[0]))
        ]
        # A tape line no rule could change is not walked (lines_it_may_change): with the built-in
        # rules alone, and the `$..key` ones, whose keys join what a line must hold.
        self._byte_triggers: tuple[bytes, ...] | None = None
        if not self.path_rules and not self.regex_rules and not self.known_paths:
            keys = tuple(b'"' + key.encode("utf-8") + b'"' for key in self.deep_keys)
            self._byte_triggers = tuple({t.translate(_AS_CLASSES): None for t in _TRIGGERS + keys})

    def lines_it_may_change(self, data: bytes) -> set[int] | None:
        """The numbers (from 1) of the lines of a tape's bytes whose events normalizing could
        change, or None for all of them (the config's own rules or paths apply). Every other line
        holds nothing a rule needs to match (see _TRIGGERS), so `mcptape diff` does not walk
        its event: most of a big tape."""
        if self._byte_triggers is None:
            return None
        found: list[int] = []  # where a trigger stands, as offsets into the bytes
        classes = data.translate(_AS_CLASSES)  # one byte for one: offsets stay
        for needle in self._byte_triggers:
            found.extend(_first_per_line(classes, needle))
        found.extend(_first_per_line(data, _ADDRESS_TRIGGER))
        if not found:
            return set()
        starts = [0, *itertools.accumulate(len(line) + 1 for line in data.split(b"\n"))]
        return {bisect.bisect_right(starts, at) for at in found}

    # strings ----------------------------------------------------------------------------------

    def text(self, s: str) -> str:
        """A free-standing string (stderr line, garbage text) through the regex and built-in rules.

        The regex rules run again when a built-in rule changed the string: a rule written against a
        built-in placeholder (`(?<=<TMP>/tmp/)...`, as the trial and `--repeat` find them, in
        normalized runs) must hit a fresh recording as it hits the golden read back, whose
        placeholders are already there; otherwise the golden says `<TMP>/tmp/<ID>` and every run
        `<TMP>/tmp/tmpq1x.py`."""
        s = self._regex(s)
        given = s
        if "/" in s:
            for pattern, placeholder in self.known_paths:
                s = pattern.sub(_literal(placeholder), s)
            s = _TMP_DIR.sub("<TMP>", s)
        if "-" in s:
            s = _TIMESTAMP.sub(self._clock(_iso_seconds), s)
            s = _UUID.sub(self._uuids, s)
        if ":" in s:
            s = _JS_DATE.sub(self._clock(_js_seconds), s)
            s = _RFC1123.sub(self._clock(_rfc1123_seconds), s)
            s = _CLOCK_12H.sub("<TIME>", s)
        if " object at 0x" in s:
            s = _ADDRESS.sub("<ADDRESS>", s)
        return s if s == given or not self.regex_rules else self._regex(s)

    def _regex(self, s: str) -> str:
        for pattern, placeholder in self.regex_rules:
            s = pattern.sub(placeholder if callable(placeholder) else _literal(placeholder), s)
        return s

    def is_clock(self, seconds: float | None) -> bool:
        """Is this moment the clock's (within CLOCK_WINDOW_S of `now` or of a tape's writing)? An unreadable one is (None)."""
        return seconds is None or any(abs(seconds - moment) <= CLOCK_WINDOW_S for moment in self.moments)

    def _clock(self, seconds_of: Callable[[str], float | None]) -> Callable[[re.Match[str]], str]:
        """A re.sub replacement: `<TIMESTAMP>` for a date near `now`, the date itself otherwise."""
        return lambda m: "<TIMESTAMP>" if self.is_clock(seconds_of(m.group(0))) else m.group(0)

    def _string(self, s: str, level: int) -> str:
        if len(s) < 2:
            return s  # no rule matches a string this short
        stripped = s.lstrip()
        if stripped[:1] in ("{", "[") and len(stripped) > 1 and level < MAX_DEPTH:
            try:
                doc, cut = loads_depth(s, MAX_DEPTH - level)
            except ValueError:
                doc, cut = None, 0
            if isinstance(doc, (dict, list)) and not cut:
                new = self.value(doc, embedded=True, level=level)
                if new == doc:
                    return s
                if "\n" in s:
                    return json.dumps(new, ensure_ascii=False, indent=2)
                return json.dumps(new, ensure_ascii=False, separators=(",", ":"))
        return self.text(s)

    def _strings(self, node: Any, level: int) -> Any:
        # The hot loop of normalizing a big tape: exact JSON types, scalars skipped before a call.
        if level > RULE_DEPTH:
            return node  # a hand-edited tape's nest past what mcptape records (RULE_DEPTH)
        kind = type(node)
        if kind is str:
            return self._string(node, level)
        # Containers come back as the very objects when nothing in them changed: a big tape's
        # events stay shared between two tapes read together (diff's identity shortcut).
        if kind is dict:
            if len(node) == 1 and is_deep(node):
                text = self.text(node[DEEP_KEY])
                return node if text == node[DEEP_KEY] else {DEEP_KEY: text}
            out: dict[str, Any] | None = None  # a copy made at the first change: most nodes have none
            deep_keys = self.deep_keys
            for k, v in node.items():
                vt = type(v)
                if k in deep_keys:
                    new: Any = deep_keys[k]
                elif vt is str:  # most values: straight to the string rules, one call fewer
                    new = self._string(v, level + 1) if level < RULE_DEPTH else v
                elif vt is int:
                    new = "<TIMESTAMP>" if v >= 10**12 and self._epoch_ms(k, v) else v
                elif vt is dict or vt is list:
                    new = self._strings(v, level + 1)
                else:
                    new = v
                if new is not v and new != v:
                    if out is None:
                        out = dict(node)
                    out[k] = new
            return node if out is None else _day_of_normalized_date(node, out)
        if kind is list:
            items = [self._strings(v, level + 1) for v in node]
            return items if any(a is not b and a != b for a, b in zip(items, node, strict=True)) else node
        return node

    def _epoch_ms(self, key: str, value: Any) -> bool:
        """An integer of epoch milliseconds near `now` under a time-named key (`createdAt: 1764633600000`)."""
        return (isinstance(value, int) and not isinstance(value, bool) and 10**12 <= value < 10**14
                and _TIME_KEY.search(key) is not None and self.is_clock(value / 1000))

    def value(self, node: Any, *, embedded: bool = False, level: int = 0) -> Any:
        """A JSON value with path rules (all, or only descendant ones inside embedded JSON) then
        strings. `level`: how deep the value sits (in its message and the strings around it)."""
        for rule in self.path_rules:
            if embedded and not rule.descendant_only:
                continue
            node = apply_path(node, rule.segs, rule.placeholder)
        return self._strings(node, level)

    # events -----------------------------------------------------------------------------------

    def event(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """One event with its values normalized (order untouched); the event itself (no copy)
        when nothing in it changed, so callers must not mutate what they get back."""
        out = dict(event)
        changed = False
        if "msg" in out:
            out["msg"] = self.value(out["msg"])
            if out["msg"] is not event["msg"] and out["msg"] != event["msg"]:
                _message_changed(out)
                changed = True
        if "params" in out and out.get("kind") in ("response", "error"):
            out["params"] = self.value({"params": out["params"]})["params"]
            changed = changed or (out["params"] is not event["params"] and out["params"] != event["params"])
        for key in ("text", "detail"):
            if isinstance(out.get(key), str):
                out[key] = self.text(out[key])
        if out.get("kind") == "stderr" and isinstance(out.get("text"), str):
            out["text"] = _LOG_TIME.sub("<TIME>", _LOG_DATE.sub("<DATE>", out["text"]))
        changed = changed or any(out.get(k) != event.get(k) for k in ("text", "detail"))
        return out if changed or not isinstance(event, dict) else event

    def events(self, events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Values only, order kept: what is applied to a golden tape before it is compared."""
        return [self.event(e) for e in events]

    def fresh(self, events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """A fresh recording made comparable and golden-ready: values, then canonical order."""
        return canonical_order(self.events(events))


def _iso_seconds(text: str) -> float | None:
    try:
        when = datetime.fromisoformat(text.replace(",", "."))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _js_seconds(text: str) -> float | None:
    try:
        return datetime.strptime(text.split(" (")[0], "%a %b %d %Y %H:%M:%S GMT%z").timestamp()
    except ValueError:
        return None


def _rfc1123_seconds(text: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return None


def _day_of_normalized_date(before: Mapping[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """`after` with its weekday (`day_of_week: "Tuesday"`) as `<DAY>` when a sibling date became a
    placeholder: the day belongs to that date (mcp-server-time), and is as volatile as it."""
    day_keys = [k for k in _DAY_KEYS if isinstance(after.get(k), str) and after[k] in _DAY_NAMES]
    if not day_keys:
        return after
    normalized = any(isinstance(v, str) and "<TIMESTAMP>" in v and v != before.get(k) for k, v in after.items())
    if normalized:
        for k in day_keys:
            after[k] = "<DAY>"
    return after


# -- canonical order ----------------------------------------------------------------------------


def _may_move(event: Mapping[str, Any]) -> bool:
    """Could canonical_order move this event, or renumber it (a superset of what it moves)?"""
    kind = event.get("kind")
    return kind in _MOVABLE_KINDS or (kind in ("notification", "request") and event.get("dir") == "s2c")


_MOVABLE_KINDS = frozenset({"stderr", "exit", "note"})


def _is_floating_start(event: Mapping[str, Any]) -> bool:
    if event.get("dir") != "s2c":
        return False
    if event.get("kind") == "notification":
        return event.get("method") in FLOATING_NOTIFICATIONS
    if event.get("kind") == "request":
        return event.get("method") in FLOATING_SERVER_REQUESTS
    return False


def _content_key(event: Mapping[str, Any]) -> str:
    msg = event.get("msg")
    if isinstance(msg, dict):
        msg = {k: v for k, v in msg.items() if k not in ("id", "jsonrpc")}
    return canonical(msg)


def canonical_order(
    events: Sequence[Mapping[str, Any]], positions: list[int] | None = None, *, copy: bool = True
) -> list[dict[str, Any]]:
    """The order rule of the module docstring. Idempotent: a canonical tape maps to itself.

    `positions`, if given, is filled with where each event of the result was in `events`
    (what a reader of a reordered tape needs to keep its line numbers). With `copy=False` the
    events that stay as they are are the very objects given (only those the rule changes are
    new), so tapes read together keep sharing the objects of identical lines (diff's shortcut).
    """
    if not any(_may_move(event) for event in events):  # the usual tape: nothing moves, nothing renumbered
        if positions is not None:
            positions[:] = range(len(events))
        return _renumber_polls(_collapse_polls([dict(e) if copy or not isinstance(e, dict) else e for e in events],
                                               positions))
    Item = tuple[int, dict[str, Any]]
    main: list[Item] = []
    units: dict[str, list[Item]] = {}  # s2c request id key -> [request, our answer]
    floating: list[list[Item]] = []
    open_requests: dict[str, Any] = {}  # id key -> (id, task mark) of client requests unanswered, oldest first
    stderr: list[Item] = []
    notes: list[Item] = []
    exits: list[Item] = []
    for index, original in enumerate(events):
        event: dict[str, Any] = dict(original) if copy or not isinstance(original, dict) else original
        kind = event.get("kind")
        if kind == "stderr":
            stderr.append((index, event))
        elif kind == "exit":
            exits.append((index, event))
        elif kind == "note" and "step" not in event:
            notes.append((index, event))
        elif _is_floating_start(event):
            event = {k: v for k, v in event.items() if k != "step"}
            if kind == "notification" and open_requests and CAUSE_KEY not in event:
                event[CAUSE_KEY] = _cause(open_requests)
            unit = [(index, event)]
            floating.append(unit)
            if kind == "request":
                units[id_key(event.get("id"))] = unit
        elif (
            kind in ("response", "error")
            and event.get("dir") == "c2s"
            and id_key(event.get("id")) in units
        ):
            event = {k: v for k, v in event.items() if k != "step"}
            units.pop(id_key(event.get("id"))).append((index, event))
        else:
            main.append((index, event))
            _track_open(event, open_requests)
    floating.sort(key=lambda unit: (unit[0][1].get("kind", ""), unit[0][1].get("method", ""), _content_key(unit[0][1])))
    ordered = main + [item for unit in floating for item in unit] + stderr + notes + exits
    if positions is not None:
        positions[:] = [index for index, _ in ordered]
    return _renumber_polls(_collapse_polls(_renumber_server_requests([event for _, event in ordered]), positions))


# A floating notification that arrived while a client request was unanswered keeps that request's
# id here: the call that caused it (a log written by the tool's handler), which diff/ names when
# the notification drifts (diff/attribution.py), though the notification itself sits after the
# last step. One that arrived between calls (a timer's) has none: no call caused it.
# A call answered with a task stays unanswered until the client's next call (its task runs on);
# the client's polls (tasks/*) are never the cause: how often it polled is timing, and a status
# push landing in a poll or between two must name the same call, or goldens would differ run to run.
CAUSE_KEY = "during"
_TASK_MECHANICS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"})
_TASK_RUNNING = "task"  # an open_requests key's value's mark: answered with a task, still running


def _track_open(event: Mapping[str, Any], open_requests: dict[str, Any]) -> None:
    kind, direction = event.get("kind"), event.get("dir")
    if kind == "request" and direction == "c2s":
        if event.get("method") in _TASK_MECHANICS:
            return
        for key in [k for k, (_, state) in open_requests.items() if state == _TASK_RUNNING]:
            del open_requests[key]  # the client moved on: the task's call is over for attribution
        open_requests[id_key(event.get("id"))] = (event.get("id"), None)
    elif kind in ("response", "error") and direction == "s2c":
        key = id_key(event.get("id"))
        if key in open_requests and _answers_with_task(event):
            open_requests[key] = (open_requests[key][0], _TASK_RUNNING)
        else:
            open_requests.pop(key, None)


def _answers_with_task(event: Mapping[str, Any]) -> bool:
    """A CreateTaskResult (2025-11-25 `result.task`) or a 2026-07-28 `resultType: "task"` answer."""
    msg = event.get("msg")
    result = msg.get("result") if isinstance(msg, dict) else None
    return isinstance(result, dict) and (isinstance(result.get("task"), dict) or result.get("resultType") == "task")


def _cause(open_requests: dict[str, Any]) -> Any:
    """The id of the newest unanswered client request: the one a notification arriving now belongs to."""
    return next(reversed(open_requests.values()))[0]


POLL_PREFIX = "mcptape-poll-"  # live/client.py's ids of tasks/get polls
POLL_INTERVAL = "<POLL_INTERVAL>"  # a task's poll interval in a golden (timing)


def _collapse_polls(events: list[dict[str, Any]], positions: list[int] | None) -> list[dict[str, Any]]:
    """The tape without the task polls that repeat: a tasks/get whose answer has the task state
    (status, and the keys of the input it asks for) of the task answer before it leaves, request
    and answer. The scripted client records no such poll; a client behind `rec` polls as often
    as it likes, and that is timing. The state compared is the last task answer's, whichever
    task it was (after normalization every task id reads `<TASK_ID>`, and a tape must collapse
    the same way before and after it); `positions` loses the entries of what left."""
    if not any(event.get("method") == "tasks/get" for event in events):
        return events
    polls: set[str] = set()  # id keys of the polls sent
    repeats: set[str] = set()  # ... of those whose answer repeats the state before it
    last: tuple[Any, ...] | None = None
    for event in events:
        kind, direction = event.get("kind"), event.get("dir")
        if direction == "c2s" and kind == "request" and event.get("method") == "tasks/get":
            polls.add(id_key(event.get("id")))
        elif direction == "s2c" and kind == "response":
            msg = event.get("msg")
            state = _task_state(msg.get("result") if isinstance(msg, dict) else None)
            if state is None:
                continue
            if id_key(event.get("id")) in polls and state == last:
                repeats.add(id_key(event.get("id")))
            last = state
    if not repeats:
        return events
    kept = [i for i, event in enumerate(events)
            if not (event.get("kind") in ("request", "response") and id_key(event.get("id")) in repeats
                    and event.get("dir") == ("c2s" if event.get("kind") == "request" else "s2c"))]
    if positions is not None:
        positions[:] = [positions[i] for i in kept]
    return [events[i] for i in kept]


def _task_state(result: Any) -> tuple[Any, ...] | None:
    """A task answer's (status, input keys): a tasks/get result, a 2026 task handle
    (`resultType: "task"`), or a 2025-11-25 CreateTaskResult (`result.task`); None for anything else."""
    if not isinstance(result, dict):
        return None
    nested = result.get("task")
    task: dict[str, Any] = nested if isinstance(nested, dict) else result
    status = task.get("status")
    if not (isinstance(status, str) and isinstance(task.get("taskId"), str)):
        return None
    asked = task.get("inputRequests")
    return status, tuple(sorted(asked)) if isinstance(asked, dict) else None


def _renumber_polls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    mapping: dict[str, str] = {}
    for event in events:
        msg_id = event.get("id")
        if type(msg_id) is str and msg_id.startswith(POLL_PREFIX) and event.get("kind") == "request":
            mapping.setdefault(msg_id, f"{POLL_PREFIX}{len(mapping) + 1}")
    if all(k == v for k, v in mapping.items()):
        return events
    out = []
    for event in events:
        new_id = mapping.get(event["id"]) if type(event.get("id")) is str else None
        out.append(_with_id(event, new_id) if new_id is not None else event)
    return out


def _renumber_server_requests(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    mapping: dict[str, int] = {}
    for event in events:
        if event.get("kind") == "request" and event.get("dir") == "s2c":
            mapping.setdefault(id_key(event.get("id")), len(mapping))
    if all(json.loads(k) == v for k, v in mapping.items()):
        return events
    out = []
    for event in events:
        is_server_request = event.get("kind") == "request" and event.get("dir") == "s2c"
        is_our_answer = event.get("kind") in ("response", "error") and event.get("dir") == "c2s"
        key = id_key(event.get("id"))
        out.append(_with_id(event, mapping[key]) if (is_server_request or is_our_answer) and key in mapping else event)
    return out


def _with_id(event: dict[str, Any], new_id: Any) -> dict[str, Any]:
    """A copy of `event` whose message carries `new_id` (the event's id and its msg's)."""
    event = dict(event)
    event["id"] = new_id
    if isinstance(event.get("msg"), dict):
        event["msg"] = {**event["msg"], "id": new_id}
    _message_changed(event)
    return event


def _message_changed(event: dict[str, Any]) -> None:
    """`event`'s msg was rewritten: its recorded wire bytes no longer say it. Only a message with
    deep markers (which always came with `raw`) needs its wire form rebuilt; others drop `raw`."""
    wire = expand_deep(event.get("msg")) if "raw" in event else None
    if wire is None:
        event.pop("raw", None)
    else:
        event["raw"] = wire


# -- the paths a session should not leak into a golden ---------------------------------------


def session_paths(
    *,
    config_dir: Path,
    extra: Iterable[Path] = (),
    environ: Mapping[str, str] | None = None,
    find_repo: Callable[[Path], Path | None] | None = None,
) -> dict[str, str]:
    """Absolute directories -> placeholders for Normalizer(paths=...): config dir, repo, HOME, extras."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    home = env.get("HOME")
    if home and home.rstrip("/"):
        out[home] = "<HOME>"
    repo = (find_repo or _git_toplevel)(config_dir)
    if repo is not None:
        out[str(repo)] = "<REPO>"
    out[str(config_dir)] = "<CONFIG_DIR>"
    for directory in extra:
        out.setdefault(str(directory), "<DIR>")
    return out


def _git_toplevel(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
