"""Tape format v1: JSONL with a header line, one event per line, and a footer marking a clean end.

Owns the bytes of a tape file: serialization (deterministic: fixed key order, no wall-clock
times, raw UTF-8), streaming writes flushed per event (rec), atomic whole-file writes (golden
tapes), and reading with line numbers. What an event *means* is events.py's business.

    {"mcptape":"tape","format":1,"version":"0.1.0","name":"calc","transport":"stdio",...}  header
    {"kind":"request","dir":"c2s","id":1,"method":"tools/call","msg":{...}}               events
    {"kind":"response","dir":"s2c","id":1,"method":"tools/call","params":{...},"msg":{...}}
    {"mcptape":"end","events":2,"crc32":"5d9c3a0e"}                                        footer

A tape without its footer was cut short (crash, kill); it is still readable up to the last
complete line, and `Tape.complete` says so. Fields a reader does not know are kept.

The footer's `crc32` covers every byte before the footer line. It is not a seal against
tampering (anyone can recompute it) but a cheap proof that a file is, byte for byte, what our
writer wrote: then every line is the compact serialization of its event, which lets play send
a recorded message's bytes without parsing them (see replay.TapeStream). A tape edited by hand
keeps working; it is just parsed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import IO, Any

from mcptape import __version__
from mcptape.errors import TapeError, WriteError
from mcptape.jsonrpc import dumps

FORMAT_VERSION = 1
TAPE_SUFFIX = ".tape.jsonl"

Event = dict[str, Any]


def make_header(name: str, *, transport: str = "stdio", **fields: Any) -> dict[str, Any]:
    """A header line: format version first so any reader can refuse what it does not know."""
    header: dict[str, Any] = {
        "mcptape": "tape",
        "format": FORMAT_VERSION,
        "version": __version__,
        "name": name,
        "transport": transport,
    }
    header.update({k: v for k, v in fields.items() if v is not None})
    return header


def make_footer(event_count: int, crc: int | None = None, **fields: Any) -> dict[str, Any]:
    """A footer line; `crc` is zlib.crc32 of every byte of the tape before it (see module doc)."""
    footer: dict[str, Any] = {"mcptape": "end", "events": event_count}
    footer.update({k: v for k, v in fields.items() if v is not None})
    if crc is not None:
        footer["crc32"] = f"{crc:08x}"
    return footer


def written_verbatim(data: bytes) -> bool:
    """The tape file `data` is exactly as our writer wrote it: its last line is a footer whose
    crc32 matches every byte before that line (see module doc)."""
    end = len(data) - 1
    if end < 0 or data[end] != 0x0A:
        return False
    start = data.rfind(b"\n", 0, end) + 1
    last = data[start:end]
    if not last.startswith(b'{"mcptape":"end"') or b'"crc32":"' not in last:
        return False
    footer = _parse_line(last)
    return footer is not None and footer.get("crc32") == f"{zlib.crc32(memoryview(data)[:start]):08x}"


def serialize(line: dict[str, Any]) -> bytes:
    """One tape line as bytes, newline included. Key order is the producer's (fixed by design)."""
    return (dumps(line) + "\n").encode("utf-8")


@dataclass
class Tape:
    """A tape read from disk: header, events in order, footer (None if cut short)."""

    header: dict[str, Any]
    events: list[Event]
    footer: dict[str, Any] | None = None
    path: Path | None = None
    # 1-based line number in the file of each event, for annotations and error messages.
    event_lines: list[int] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.footer is not None

    @property
    def name(self) -> str:
        return str(self.header.get("name") or (self.path.name if self.path else "tape"))

    @property
    def protocol(self) -> str | None:
        """Negotiated protocol version: the header's, else read off the handshake.

        Legacy: the `initialize` result's protocolVersion (it wins: a session that initialized is
        legacy, whatever a discover probe before it got). 2026-07-28 (no handshake): the version
        the client's requests carry in `_meta` — the answered `server/discover`'s first, else the
        first request that has one (a tape recorded without discover).
        """
        if self.header.get("protocol"):
            return str(self.header["protocol"])
        discovered: str | None = None
        stamped: str | None = None
        for ev in self.events:
            kind, method = ev.get("kind"), ev.get("method")
            if kind == "response" and method == "initialize":
                result = ev.get("msg", {}).get("result") or {}
                version = result.get("protocolVersion")
                return str(version) if version else None
            if kind == "response" and method == "server/discover" and discovered is None:
                discovered = _meta_version(ev.get("params"))
            elif stamped is None and kind == "request" and ev.get("dir") == "c2s" and method != "server/discover":
                stamped = _meta_version((ev.get("msg") or {}).get("params"))
        return discovered or stamped

    def line_of(self, index: int) -> int:
        return self.event_lines[index] if index < len(self.event_lines) else index + 2


def _meta_version(params: Any) -> str | None:
    """`params._meta["io.modelcontextprotocol/protocolVersion"]` of a 2026-07-28 request, if any."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) and version else None


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
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TapeError(f"{p}: cannot read tape: {e.strerror or e}") from e
    pieces = data.split(b"\n")
    cut_short = not data.endswith(b"\n")
    del data
    raws = [raw for raw in pieces if raw.strip()]
    numbers: Sequence[int]
    if raws == pieces[:len(raws)]:  # blank lines only at the end (the usual case): no list to build
        numbers = range(1, len(raws) + 1)
    else:
        numbers = [n for n, raw in enumerate(pieces, start=1) if raw.strip()]
    return TapeLines(p, raws, numbers, cut_short)


def read_tape(path: str | os.PathLike[str]) -> Tape:
    """Read a tape; a missing footer is allowed (cut short), an unknown format version is not."""
    return parse_tape(read_lines(path))


def parse_tape(lines: TapeLines) -> Tape:
    """The tape `read_tape` reads, from its lines.

    The event lines are parsed as one JSON array on purpose: the C scanner then shares each
    key string across all events instead of allocating it per line, which reads a 100k-event
    tape in about three quarters of the time and memory. A tape that does not parse that way
    (cut short, corrupt) is read again line by line to say where.
    """
    p = lines.path
    if not lines.raws:
        raise TapeError(f"{p}: empty file, not a tape", hint="record one with `mcptape rec`")
    tape = Tape(header=_check_header(p, lines.numbers[0], _parse_line(lines.raws[0])), events=[], path=p)
    body = lines.raws[1:]
    numbers = lines.numbers[1:]
    parsed = parse_lines(body)
    if parsed is None:
        parsed = []
        for i, raw in enumerate(body):
            obj = _parse_line(raw)
            if obj is None:
                if i == len(body) - 1 and lines.cut_short:
                    numbers = numbers[:i]
                    break
                raise TapeError(f"{p}:{numbers[i]}: line is not a JSON object mcptape can read (corrupt, or nested "
                                "deeper than JSON readers go)", hint="the tape is corrupt; re-record it")
            parsed.append(obj)
    fill_events(tape, numbers, parsed)
    return tape


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
    tape.events.extend(parsed[:end])
    tape.event_lines.extend(numbers[:end])


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
    if fmt != FORMAT_VERSION:
        raise TapeError(
            f"{p}: tape format {fmt!r} is not one this mcptape ({__version__}) reads (format {FORMAT_VERSION})",
            hint=f"re-record it with mcptape {__version__}, or use the mcptape version "
            f"{header.get('version', '?')} that wrote it",
        )
    return header


class TapeWriter:
    """Streams a tape to disk in whole lines, flushed as they come (or a batch at a time, see
    write_line), so a crash leaves a readable prefix."""

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.count = 0
        data = serialize(header)
        self._fh.write(data)
        self._fh.flush()
        self._crc = zlib.crc32(data)  # of everything written so far, for the footer
        self._held: list[bytes] = []  # lines written with flush=False, not yet in the file

    def write(self, event: Event) -> None:
        self.write_line(serialize(event))

    def write_line(self, data: bytes, *, flush: bool = True) -> None:
        """Write one event already serialized (newline included), e.g. by Redactor.line_bytes.

        With flush=False the line is held until the next flush(), which writes every held line
        in one system call: rec's writer flushes once per batch read off the tee, not per line.
        """
        self._held.append(data)
        self._crc = zlib.crc32(data, self._crc)
        self.count += 1
        if flush:
            self.flush()

    def flush(self) -> None:
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._fh.write(data)
        self._fh.flush()

    def close(self, **footer_fields: Any) -> None:
        if self._fh.closed:
            return
        self.flush()
        self._fh.write(serialize(make_footer(self.count, self._crc, **footer_fields)))
        self._fh.flush()
        self._fh.close()

    def abandon(self) -> None:
        """Close without a footer: the tape stays marked as cut short (held lines still written)."""
        if not self._fh.closed:
            try:
                self.flush()
            finally:
                self._fh.close()


def tape_bytes(header: dict[str, Any], events: Iterable[Event], **footer_fields: Any) -> bytes:
    """The whole tape as bytes: what write_tape_atomic writes and what redaction verifies."""
    parts = [serialize(header)]
    crc = zlib.crc32(parts[0])
    for ev in events:
        parts.append(serialize(ev))
        crc = zlib.crc32(parts[-1], crc)
    parts.append(serialize(make_footer(len(parts) - 1, crc, **footer_fields)))
    return b"".join(parts)  # one copy of a tape that may be large


# Atomic writes go through a temp file in this subdirectory of the target's directory: the same
# filesystem, so the rename is atomic, and a directory git ignores (its .gitignore says `*`, which
# ignores the .gitignore too), so a writer killed between the temp file and the rename leaves
# nothing `git add tapes/` would stage. The directory is removed once no write is in flight.
TEMP_DIR = ".mcptape-tmp"
TEMP_GITIGNORE = b"*\n"
TEMP_SUFFIX = ".tmp"
# Temp files are named `<target>.<pid>.<random>.tmp`; one whose writer is gone is stale. A temp
# carrying our own pid but older than this process was left by an earlier process with that pid.
_STARTED = time.time()
_temp_dir_lock = threading.Lock()  # parallel ci sessions write goldens into one directory


def write_atomic(path: str | os.PathLike[str], data: bytes, *, what: str = "file") -> None:
    """Write a file so readers see the old bytes or the new, never a mix: temp, fsync, rename.

    Any OSError (disk full, read-only, a file where a directory should be, a directory where
    the file should be) is a WriteError naming the path, `what` it is and the cause: exit 3.
    """
    p = Path(path)
    try:
        _write_atomic(p, data)
    except OSError as e:
        raise WriteError(
            f"{p}: cannot write the {what}: {_cause(e, p)}",
            hint="check that the directory is a writable directory and the disk is not full",
        ) from e


def _cause(e: OSError, target: Path) -> str:
    """The OSError's reason, with the path it is about when that is not the target (nor our temp file)."""
    reason = e.strerror or str(e)
    where = Path(os.fsdecode(e.filename)) if e.filename is not None else None
    if where is None or where == target or TEMP_DIR in where.parts:
        return reason
    return f"{where}: {reason}"


def _write_atomic(p: Path, data: bytes) -> None:
    try:
        mode = p.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # not there yet (mkdir below says why, if it cannot be)
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        # `--json /dev/stdout`, a FIFO: renaming over it would replace the device or pipe with a
        # file (as root, /dev/stdout itself). There is nothing to keep atomic: write into it.
        with open(p, "wb") as fh:
            fh.write(data)
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    temp_dir = p.parent / TEMP_DIR
    with _temp_dir_lock:
        _open_temp_dir(temp_dir)
        fd, tmp = tempfile.mkstemp(prefix=f"{p.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=temp_dir)
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    finally:
        with _temp_dir_lock:
            _close_temp_dir(temp_dir)
    try:  # make the rename itself durable
        dir_fd = os.open(p.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _open_temp_dir(temp_dir: Path) -> None:
    """The temp directory, ignored by git before any temp file exists in it; stale temps removed."""
    temp_dir.mkdir(exist_ok=True)
    ignore = temp_dir / ".gitignore"
    try:
        current = ignore.read_bytes()
    except FileNotFoundError:
        current = None
    if current != TEMP_GITIGNORE:
        ignore.write_bytes(TEMP_GITIGNORE)
    for entry in os.scandir(temp_dir):
        if entry.name != ".gitignore" and _stale_temp(entry):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def _stale_temp(entry: os.DirEntry[str]) -> bool:
    """A temp file no live writer owns (see TEMP_DIR)."""
    try:
        older = entry.stat(follow_symlinks=False).st_mtime < _STARTED
    except FileNotFoundError:
        return False
    parts = entry.name.removesuffix(TEMP_SUFFIX).rsplit(".", 2)
    pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
    if pid is None or pid == os.getpid():
        return older
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


def _close_temp_dir(temp_dir: Path) -> None:
    """Remove the temp directory when nothing but its .gitignore is left in it."""
    try:
        if os.listdir(temp_dir) != [".gitignore"]:
            return
        os.unlink(temp_dir / ".gitignore")
        os.rmdir(temp_dir)
    except FileNotFoundError:
        return
    except OSError:
        # Another process put a temp file in it meanwhile: it must stay ignored.
        with contextlib.suppress(OSError):
            (temp_dir / ".gitignore").write_bytes(TEMP_GITIGNORE)
