"""Reading tapes: the one reader every command uses, whole, in pairs, or streamed.

    read_tape(path)     a Tape, every line parsed (show, ls, ci's goldens, merge ...)
    parse_tape_bytes    the same from bytes in hand (ci's fresh tapes, for the HTML report)
    read_pair(a, b)     two tapes, the fresh one sharing the golden's event objects (diff)
    TapeStream(path)    header, footer and up-front checks now, events as they are needed (play)
    stream_tape_events  header and footer, then events once in order, not kept (show of a huge tape)

An unreadable file, a line that does not parse, a header of another format version: a TapeError
(exit 3) naming the file and line, the same message from every form. A missing footer is not an
error (the tape was cut short: `Tape.complete`); lines after a footer are not part of the tape.

Event lines are parsed as one JSON array where they can be (`parse_lines`): the C scanner then
shares each key string across all events instead of allocating it per line, which reads a
100k-event tape in about three quarters of the time and memory.

Reading a pair (`read_pair`): a fresh tape is mostly the golden one line for line. Both files
are split into lines first; the fresh lines byte-identical to the golden's event lines at the
same place from the start (the common prefix) and from the end (the common suffix, the footer
aside: it counts the events) are the golden's parsed events, found by C-speed list compares.
So are the lines in between that equal the golden's at the same distance from the suffix (in
runs, stepping over changed lines: a call inserted early shifts everything after it), and then
any line equal to one of the golden event lines left over. Only the rest is parsed. So an
unchanged or slightly changed tape costs one parse, not two, and identical events are then the
same objects, which makes every later comparison of them an identity check. Anything unusual
about the fresh tape (cut short, a line that does not parse, no valid header) is left to
`parse_tape`, errors included.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from mcptape.errors import TapeError
from mcptape.jsonrpc import id_key
from mcptape.sequences import common_prefix, common_suffix, equal_back
from mcptape.tape.events import C2S, MESSAGE_KINDS, S2C, in_session
from mcptape.tape.format import READABLE_FORMATS, SESSIONS_FORMAT, Tape
from mcptape.tape.seal import is_seal_line, sealed_verbatim
from mcptape.version import __version__


def written_verbatim(data: bytes) -> bool:
    """The tape file `data` is exactly as our writer wrote it: its last line is a footer whose
    digest matches every byte before that line (seal.py; see module doc)."""
    return sealed_verbatim(data)


@dataclass
class TapeLines:
    """A tape file split into its non-blank lines, not parsed yet: what `parse_tape` reads, and
    what diff/command.py compares between two tapes before parsing only the lines that differ."""

    path: Path
    raws: list[bytes]
    numbers: Sequence[int]  # 1-based line number in the file of each line in `raws`
    cut_short: bool  # the last line has no newline: the recorder died while writing it


def read_lines(path: str | os.PathLike[str]) -> TapeLines:
    """A tape file's lines, for `parse_tape`; an unreadable file is a TapeError already."""
    p = Path(path)
    return _split(p, _read(p))


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as e:
        raise TapeError(f"{p}: cannot read tape: {e.strerror or e}") from e


def _split(p: Path, data: bytes) -> TapeLines:
    pieces = data.split(b"\n")
    cut_short = not data.endswith(b"\n")
    raws = [raw for raw in pieces if raw.strip()]
    if b'{"mcptape":"seal"' in data:  # a rec tape's seal lines (seal.py) are no events
        raws = [raw for raw in raws if not is_seal_line(raw)]
    numbers: Sequence[int]
    if raws == pieces[:len(raws)]:  # blank lines only at the end (the usual case): no list to build
        numbers = range(1, len(raws) + 1)
    else:
        numbers = [n for n, raw in enumerate(pieces, start=1) if raw.strip() and not is_seal_line(raw)]
    return TapeLines(p, raws, numbers, cut_short)


def read_tape(path: str | os.PathLike[str]) -> Tape:
    """Read a tape; a missing footer is allowed (cut short), an unknown format version is not."""
    return parse_tape(read_lines(path))


def parse_tape_bytes(data: bytes, path: str | os.PathLike[str]) -> Tape:
    """A tape from bytes in hand (ci's fresh tape, never written when no --out-dir keeps it), as
    read_tape reads it; `path` names it in errors."""
    p = Path(path)
    return parse_tape(_split(p, data))


def stream_tape_events(path: str | os.PathLike[str], batch: int = 4096) -> tuple[Tape, int, Iterator[tuple[int, dict[str, Any]]]]:
    """A tape for reading once, in order, in bounded memory (`show` of a 50 MB tape): the Tape with
    its header and footer but no events, how many events it holds, and (line, event) pairs parsed
    `batch` lines at a time and not kept. The same checks and errors as read_tape, met as read."""
    lines = read_lines(path)
    tape = Tape(header=_header(lines), events=[], path=lines.path)
    raws, numbers = _body(lines, lines.raws[1:], lines.numbers[1:])
    del lines
    end = len(raws)
    for k, raw in enumerate(raws):
        if raw.startswith(b'{"mcptape"') or (b'"mcptape"' in raw and not raw.startswith(b'{"kind"')):
            obj = _parse_line(raw)
            if obj is not None and obj.get("mcptape") == "end":
                tape.footer, end = obj, k
                break

    def events() -> Iterator[tuple[int, dict[str, Any]]]:
        for start in range(0, end, batch):
            chunk, nums = raws[start:min(start + batch, end)], numbers[start:min(start + batch, end)]
            parsed = parse_events(tape.path, chunk, nums)
            check_messages(tape.path, parsed, nums)
            yield from zip(nums, parsed, strict=True)

    return tape, end, events()


def parse_tape(lines: TapeLines) -> Tape:
    """The tape `read_tape` reads, from its lines.

    The event lines are parsed as one JSON array on purpose: the C scanner then shares each
    key string across all events instead of allocating it per line, which reads a 100k-event
    tape in about three quarters of the time and memory (`parse_events`).
    """
    tape = Tape(header=_header(lines), events=[], path=lines.path)
    body, numbers = _body(lines, lines.raws[1:], lines.numbers[1:])
    fill_events(tape, numbers, parse_events(lines.path, body, numbers))
    return tape


def _header(lines: TapeLines) -> dict[str, Any]:
    """The header line, checked: a tape mcptape reads (its format version), else a TapeError."""
    if not lines.raws:
        raise TapeError(f"{lines.path}: empty file, not a tape", hint="record one with `mcptape rec`")
    return _check_header(lines.path, lines.numbers[0], _parse_line(lines.raws[0]))


def _body(lines: TapeLines, raws: list[bytes], numbers: Sequence[int]) -> tuple[list[bytes], Sequence[int]]:
    """The event lines without a last line cut short while it was written (the recorder died)."""
    if lines.cut_short and raws and _parse_line(raws[-1]) is None:
        return raws[:-1], numbers[:-1]
    return raws, numbers


def parse_events(path: Path | None, raws: list[bytes], numbers: Sequence[int]) -> list[dict[str, Any]]:
    """Event lines parsed, as one JSON array where they can be (`parse_lines`); else line by line,
    and a line that is not a JSON object is a TapeError naming it."""
    parsed = parse_lines(raws)
    if parsed is not None:
        return parsed
    out = []
    for raw, number in zip(raws, numbers, strict=True):
        obj = _parse_line(raw)
        if obj is None:
            raise TapeError(f"{path}:{number}: line is not a JSON object mcptape can read (corrupt, or nested "
                            "deeper than JSON readers go)", hint="the tape is corrupt; re-record it")
        out.append(obj)
    return out


def footer_index(parsed: Sequence[dict[str, Any]]) -> int:
    """Where the first footer is among parsed lines; len(parsed) if there is none."""
    try:
        return [obj.get("mcptape") for obj in parsed].index("end")
    except ValueError:
        return len(parsed)


def fill_events(tape: Tape, numbers: Sequence[int], parsed: list[dict[str, Any]], end: int | None = None) -> None:
    """Put parsed event lines into `tape` with their line numbers, up to and including the footer.

    `end` is where the footer is (`footer_index`), for a caller that knows it more cheaply;
    the lines after a footer are not part of the tape.
    """
    if len(numbers) != len(parsed):
        raise ValueError(f"{len(numbers)} line numbers for {len(parsed)} parsed lines")
    if end is None:
        end = footer_index(parsed)
    if end < len(parsed):
        tape.footer = parsed[end]
    check_messages(tape.path, parsed[:end], numbers)
    tape.events.extend(parsed[:end])
    tape.event_lines.extend(numbers[:end])


# A `"msg":` key whose value is not an object, a `kind`, `method` or `dir` that is not a string:
# only lines holding one can carry an event no reader can key on (an edited or fuzzed tape); the
# others need no look.
_ODD_MSG = re.compile(rb'"msg"\s*:\s*[^\s{]|"(?:kind|method|dir)"\s*:\s*[^\s"]')


def check_messages(path: Path | None, events: Sequence[dict[str, Any]], numbers: Sequence[int]) -> None:
    """A TapeError naming the first event whose `kind`, `method` or `dir` is not a string or, for a
    message, whose `msg` is not a JSON object.

    Play would send such a `msg` ("notadict", 7) to the client as the server's answer, and every
    reader would trip over it later: the tape is unreadable, said once, here, with its line.
    """
    for ev, number in zip(events, numbers, strict=False):
        kind = ev.get("kind") if type(ev) is dict else None
        for key in ("kind", "method", "dir"):  # every reader keys on them (fuzz: tape seed 5054; a method
            value = ev.get(key) if type(ev) is dict else None  # that is an array: diff's pagination merge)
            if value is not None and not isinstance(value, str):
                raise TapeError(f"{path}:{number}: an event whose {key} is "
                                f"{_JSON_KIND.get(type(value).__name__, 'odd')}, not a name",
                                hint="the tape was edited or is corrupt; re-record it with `mcptape rec`")
        if isinstance(kind, str) and kind in MESSAGE_KINDS and not isinstance(ev.get("msg"), dict):
            shape = type(ev.get("msg")).__name__ if "msg" in ev else "missing"
            raise TapeError(
                f"{path}:{number}: a {ev.get('kind')} event whose msg is {_JSON_KIND.get(shape, shape)}, "
                "not a JSON-RPC message (an object)",
                hint="the tape was edited or is corrupt; re-record it with `mcptape rec`",
            )


_JSON_KIND = {"str": "a string", "int": "a number", "float": "a number", "list": "an array",
              "bool": "true or false", "NoneType": "null", "missing": "missing"}


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # RecursionError: edited by hand
        return None
    return obj if isinstance(obj, dict) else None


def parse_lines(raws: list[bytes]) -> list[dict[str, Any]] | None:
    """Lines parsed as one JSON array (key strings shared), or None unless each is exactly one object."""
    if not raws:
        return []
    # The brackets go onto the first and last line: the tape's bytes are copied once, not three
    # times; and decoded as json.loads would, but without keeping those bytes while parsing.
    parts = [b"[" + raws[0] + b"]"] if len(raws) == 1 else [b"[" + raws[0], *raws[1:-1], raws[-1] + b"]"]
    array = b",".join(parts)
    del parts
    try:
        text = array.decode(json.detect_encoding(array), "surrogatepass")
        del array
        parsed = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # the line-by-line read says where
        return None
    if not isinstance(parsed, list) or len(parsed) != len(raws):
        return None  # e.g. a line holding "1,2" would shift every line after it
    return parsed if all(map(isinstance, parsed, repeat(dict))) else None


def _check_header(p: Path, number: int, header: dict[str, Any] | None) -> dict[str, Any]:
    if header is None or header.get("mcptape") != "tape":
        raise TapeError(
            f"{p}:{number}: not an mcptape tape (the first line must be the tape header)",
            hint="record one with `mcptape rec` or `mcptape ci --update-golden`",
        )
    fmt = header.get("format")
    if isinstance(fmt, str) and fmt.strip() in {str(f) for f in READABLE_FORMATS}:
        raise TapeError(
            f'{p}:{number}: the header\'s "format" is the string {fmt!r}, and the tape format is a number',
            hint=f'write "format":{fmt.strip()} (no quotes) in the first line, or re-record the tape',
        )
    if fmt not in READABLE_FORMATS or isinstance(fmt, bool):
        raise TapeError(
            f"{p}: tape format {fmt!r} is not one this mcptape ({__version__}) reads (formats "
            f"{', '.join(map(str, READABLE_FORMATS))})",
            hint=f"re-record it with mcptape {__version__}, or use the mcptape version "
            f"{header.get('version', '?')} that wrote it",
        )
    return header



# Changed lines stepped over when placing the fresh lines by position; beyond, a dictionary of
# the golden's lines finds the rest wherever they are.
MAX_STEPS = 64


def read_pair(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> tuple[Tape, Tape]:
    """Both tapes, the fresh one (b) sharing the golden's (a) event objects for identical lines."""
    golden_lines = read_lines(a)
    golden = parse_tape(golden_lines)
    lines = read_lines(b)
    header = _parse_line(lines.raws[0]) if lines.raws and not lines.cut_short else None
    if header is None or header.get("mcptape") != "tape" or header.get("format") not in READABLE_FORMATS:
        return golden, parse_tape(lines)  # empty, cut short while writing, not a tape: parse_tape says
    found, missing = _place(golden.events, golden_lines.raws[1:1 + len(golden.events)], lines.raws[1:])
    del golden_lines  # the golden's lines: parsing the rest of the fresh tape can reuse their memory
    end = len(found)
    if missing:
        parsed = parse_lines([lines.raws[1 + k] for k in missing])  # one JSON array, as parse_tape does
        if parsed is None:
            return golden, parse_tape(lines)  # a line that does not parse: parse_tape says where
        for k, ev in zip(missing, parsed, strict=True):
            found[k] = ev
        first = footer_index(parsed)  # only a line parsed here can be the footer: the others are events
        if first < len(parsed):
            end = missing[first]
    fresh = Tape(header=header, events=[], path=lines.path)
    fill_events(fresh, lines.numbers[1:], [ev for ev in found if ev is not None], end)
    return golden, fresh


def _place(
    events: list[dict[str, Any]], known: list[bytes], body: list[bytes]
) -> tuple[list[dict[str, Any] | None], list[int]]:
    """For each fresh line (`body`), the golden event whose line (`known[i]` is event i's) it
    equals (module docstring), else None; and where the Nones are: the lines to parse."""
    n = len(body)
    start = common_prefix(known, body)
    # The last line is usually the footer, which differs whenever the number of events does:
    # the common suffix is looked for before it, and the line itself with the ones in between.
    last = n - 1 if start < n else n
    size = common_suffix(known, body[:last], min(len(known), last) - start)
    stop = last - size  # body[stop:last] are the golden's last `size` events
    found: list[dict[str, Any] | None] = [*events[:start], *[None] * (n - start)]
    found[stop:last] = events[len(events) - size:]
    # In between, from the end: runs of lines equal at the same distance from the suffix (a line
    # inserted or removed early shifts the rest), stepping over a changed line at a time.
    i, j = len(known) - size, stop  # the golden's and the fresh lines before these are not placed yet
    stepped_g: list[int] = []
    stepped_f: list[int] = []
    while True:
        run = equal_back(known, body, i, j, min(i, j) - start)
        found[j - run:j] = events[i - run:i]
        i, j = i - run, j - run
        if i == start or j == start or len(stepped_f) == MAX_STEPS:
            break
        i, j = i - 1, j - 1
        stepped_g.append(i)
        stepped_f.append(j)
    # The lines not placed: each one equal to a golden event line not placed either is that event.
    by_line = dict(zip(known[start:i], events[start:i], strict=True))
    by_line.update((known[k], events[k]) for k in stepped_g)
    missing: list[int] = []
    for k in [*range(start, j), *reversed(stepped_f), *range(last, n)]:
        ev = by_line.get(body[k])
        if ev is None:
            missing.append(k)
        else:
            found[k] = ev
    return found, missing


# --- lines of a tape written verbatim --------------------------------------------------

_HEAD = frozenset({"kind", "dir", "id", "method"})
# The heads of request and answer lines in the writer's fixed key order (tape/events.py), up to
# the value of `msg` (of `params` for an answer that echoes them). Only int and string ids:
# anything else is parsed.
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_HEAD_LINE = re.compile(
    rb'\{"kind":"(request|response|error)","dir":"(c2s|s2c)","id":(-?[0-9]+|' + _STRING + rb")"
    rb'(?:,"method":(' + _STRING + rb'))?,"(params|msg)":'
)
_HEAD_WORDS = {b"request": "request", b"response": "response", b"error": "error", b"c2s": C2S, b"s2c": S2C}


class LazyEvent(dict[str, Any]):
    """A request or answer line of a tape written verbatim, parsed only when more than its head is used.

    The head (kind, dir, id, method) is read off the line's bytes; `get`, `[]` and `in` of any
    other key parse the whole line first, so the engine reads it like any event. `wire` is the
    message's wire text sliced out of the line: on a verbatim tape (written_verbatim) the line is
    `dumps(event)`, so that slice is exactly `dumps(msg)`, the text the recorded peer sent.
    Only stdio play builds these; nothing serializes them (json would see the head only).
    """

    __slots__ = ("line", "wire")  # set by lazy_event; line is None once parsed
    line: bytes | None
    wire: str

    def _load(self) -> None:
        line, self.line = self.line, None
        if line is not None:
            try:
                parsed = json.loads(line)
            except (ValueError, RecursionError) as e:  # only if bytes changed under a matching digest
                raise TapeError(f"a tape line is not JSON although the tape's digest matches: {e}") from e
            self.clear()
            self.update(parsed)

    def get(self, key: str, default: Any = None) -> Any:
        if self.line is not None and key not in _HEAD:
            self._load()
        return dict.get(self, key, default)

    def __getitem__(self, key: str) -> Any:
        if self.line is not None and key not in _HEAD:
            self._load()
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if self.line is not None and key not in _HEAD:
            self._load()
        return dict.__contains__(self, key)

    def loaded(self) -> dict[str, Any]:
        """The whole event as a plain dict."""
        self._load()
        return dict(self)

    def __repr__(self) -> str:
        return repr(self.loaded())

    def __eq__(self, other: object) -> bool:  # (and so unhashable, as a dict is)
        return self.loaded() == (other.loaded() if isinstance(other, LazyEvent) else other)


_HEAD_STRINGS: dict[bytes, str] = {}  # a tape's few methods (and string ids), decoded once


def _head_value(token: bytes) -> Any:
    """An int or JSON string token of a line's head as the value json.loads would give."""
    if token[:1] != b'"':
        return int(token)
    value = _HEAD_STRINGS.get(token)
    if value is None:
        value = json.loads(token) if b"\\" in token else token[1:-1].decode("utf-8")
        if len(_HEAD_STRINGS) < 4096:
            _HEAD_STRINGS[token] = value
    return value


def lazy_event(raw: bytes, escaped: bool = True) -> LazyEvent | None:
    """A LazyEvent for a request or answer line of a verbatim tape; None for any other line.

    Relies on the key order tape/events.py fixes: `msg` comes last but for `raw` (a string) and
    the scripted client's `step` (an int). So msg's text runs to the line's last `}` but one, or
    to the `}` before a closing `,"step":N}`; a line with `raw` ends in `"}` and is parsed.
    `escaped=False` says the tape holds no `\\ud` at all (TapeStream checks the file once).
    """
    if escaped and b"\\ud" in raw:  # an escaped lone surrogate made the writer escape the whole line
        return None
    if raw.endswith(b"}}"):
        end = len(raw) - 1
    else:
        # The last `},"step":` followed by nothing but digits and the final `}` is the top-level
        # step (nested, another `}` would follow), and the `}` before it closes msg.
        end = raw.rfind(b'},"step":') + 1
        if end == 0 or not raw.endswith(b"}") or not raw[end + 8 : -1].isdigit():
            return None
    m = _HEAD_LINE.match(raw)
    if m is None:
        return None
    kind, direction, token, method, key = m.groups()
    if direction != (b"c2s" if kind == b"request" else b"s2c"):
        return None  # client answers and server requests: parsed
    start = m.end()
    if key == b"params":
        if kind == b"request":
            return None  # not the writer's order: a request line holds no echoed params
        # The echoed params come first; the top-level msg key is the one `,"msg":` that follows
        # them unless params or msg hold a "msg" key themselves (then the line is parsed).
        start = raw.find(b',"msg":', start) + 7
        if start == 6 or raw.find(b',"msg":', start) >= 0:
            return None
    elif kind == b"request" and method is None:
        return None
    words = _HEAD_WORDS
    ev = LazyEvent(kind=words[kind], dir=words[direction], id=int(token) if token[0] != 0x22 else _head_value(token))
    if method is not None:
        ev["method"] = _HEAD_STRINGS.get(method) or _head_value(method)
    ev.line = raw
    ev.wire = raw[start:end].decode("utf-8")
    return ev


class TapeStream:
    """A tape read for stdio play: what must fail up front is checked now, events parsed on demand.

    Parsing and indexing a 2000-call tape took longer than the live server takes to answer its
    first request, and play answered nothing before it was done. Here the file is read and split
    into lines (cheap), the header and footer parsed, and the event lines parsed in batches as
    ReplayEngine asks for them: 64 lines first (a handshake is in the first few), doubling up to
    2048, each batch as one JSON array (read_tape's trick: shared key strings, see parse_tape).

    Checked up front as read_tape and ReplayEngine do: the header (format version), the footer
    (`tape.complete`), a cut-short last line, that the tape holds a client request and that no
    server request id repeats. Lines that may be server requests are found by their bytes (our
    writer's fixed key order, anything else parsed); `streamable` is False when these checks
    want the whole tape (a repeated server request id, no client request), and run_play then
    loads it whole so the engine names the problem as before. A corrupt line in the middle is
    only found when its batch is parsed: a TapeError naming the line (play: exit 2). On a
    tape written verbatim (`verbatim`) request and answer lines are not parsed at all here but
    become LazyEvents: no line of it can be corrupt unless its digest lies.
    """

    FIRST_BATCH = 64
    MAX_BATCH = 2048
    _S2C_REQUEST = b'{"kind":"request","dir":"s2c"'
    _C2S_REQUEST = b'{"kind":"request","dir":"c2s"'
    _OUR_ORDER = b'{"kind":"'

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        data = _read(p)
        # Written by us and unedited: request and answer lines become LazyEvents (see module doc).
        self.verbatim = written_verbatim(data)
        self._escaped = b"\\ud" in data  # else no line needs lazy_event's per-line check
        odd_msg = _ODD_MSG.search(data) is not None
        lines = _split(p, data)
        del data
        self.tape = Tape(header=_header(lines), events=[], path=p)
        raws, numbers = lines.raws[1:], lines.numbers[1:]
        for k, raw in enumerate(raws):
            if b'"mcptape"' in raw:
                obj = _parse_line(raw)
                if obj is not None and obj.get("mcptape") == "end":
                    self.tape.footer = obj
                    raws, numbers = raws[:k], numbers[:k]
                    break
        if self.tape.footer is None:
            raws, numbers = _body(lines, raws, numbers)
        self._raws = raws
        self._numbers = numbers
        self._pos = 0
        self._batch = self.FIRST_BATCH
        # A message whose msg is not an object makes the tape unplayable: said before serving,
        # not when its batch is parsed mid-session (the lines holding one are few, see _ODD_MSG).
        odd = [(raw, n) for raw, n in zip(raws, numbers, strict=True) if odd_msg and _ODD_MSG.search(raw)]
        check_messages(p, [_parse_line(raw) or {} for raw, _ in odd], [n for _, n in odd])
        # A tape of HTTP sessions (format 3) is indexed whole: its anchors are per session (replay/index.py).
        self.streamable = self._prescan(_parse_line) and self.tape.header.get("format") != SESSIONS_FORMAT

    def restart_batches(self) -> None:
        """Batches start small again (FIRST_BATCH lines), doubling from there."""
        self._batch = self.FIRST_BATCH

    @property
    def event_count(self) -> int:
        """How many events the tape holds (when no line in the middle is corrupt)."""
        return len(self._raws)

    def _prescan(self, parse: Callable[[bytes], dict[str, Any] | None]) -> bool:
        has_request = False
        server_ids: set[str] = set()
        for raw in self._raws:
            ours = raw.startswith(self._OUR_ORDER)
            if not has_request and (raw.startswith(self._C2S_REQUEST) or (not ours and b'"c2s"' in raw)):
                obj = parse(raw)
                has_request = obj is not None and obj.get("kind") == "request" and obj.get("dir") == C2S
            if raw.startswith(self._S2C_REQUEST) or (not ours and b'"s2c"' in raw and b'"request"' in raw):
                obj = parse(raw)
                if obj is not None and obj.get("kind") == "request" and obj.get("dir") == S2C:
                    key = in_session(obj.get("session"), id_key(obj.get("id")))
                    if key in server_ids:
                        return False
                    server_ids.add(key)
        return has_request

    def read_batch(self, limit: int | None = None) -> int:
        """Parse the next batch (at most `limit` lines) onto `tape.events`; how many (0 at the end).

        A line that does not parse is a TapeError naming it (parse_events), found only now.
        """
        size = self._batch if limit is None else min(limit, self._batch)
        start = self._pos
        raws = self._raws[start : start + size]
        if not raws:
            return 0
        numbers = self._numbers[start : start + len(raws)]
        self._pos += len(raws)
        if limit is None:
            self._batch = min(self._batch * 2, self.MAX_BATCH)
        path = self.tape.path
        if self.verbatim:
            escaped = self._escaped
            events: list[dict[str, Any] | None] = [lazy_event(raw, escaped) for raw in raws]
            unparsed = [(raw, number) for raw, number, ev in zip(raws, numbers, events, strict=True) if ev is None]
            rest = iter(parse_events(path, [raw for raw, _ in unparsed], [number for _, number in unparsed]))
            self.tape.events.extend(ev if ev is not None else next(rest) for ev in events)
        else:
            parsed = parse_events(path, raws, numbers)
            check_messages(path, parsed, numbers)
            self.tape.events.extend(parsed)
        self.tape.event_lines.extend(numbers)
        return len(raws)
