"""Redactor: scrub events, objects and text of secrets, and verify finished output (SecretLeak, exit 4)."""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import mcptape.environment as environment
from mcptape.errors import ConfigError, SecretLeak
from mcptape.jsonrpc import dumps
from mcptape.redact.detectors import Engine, EngineConfig, Sink
from mcptape.redact.shapes import ALWAYS_NAMES, COMMON_USER_NAMES, ENTROPY_NAMES, SHAPES, TAG_KEY
from mcptape.tape.format import serialize, tape_bytes

# --------------------------------------------------------------------------------------------
# the public face


class Redactor:
    """Scrubs secrets from events, objects and text, and verifies finished output.

    One instance per tape or report: placeholders are stable within it (and across runs, see the
    module docstring). `counts` says how many distinct values of which kind were redacted.
    """

    def __init__(
        self,
        known: Mapping[str, str] | None = None,
        patterns: Sequence[str] = (),
        allow: Sequence[str] = (),
        *,
        home: str | None = "",
        user: str | None = "",
        decode: bool = True,
        salt: bytes = b"",
        rules: bool = True,
    ) -> None:
        """`home`/`user` default ("") to this machine's; pass None to turn that detector off.
        `rules=False`: our detectors and the known values without the rule set (redact/rules.py),
        for the messages of a process that speaks the MCP wire (publish/outlet.py's say)."""
        compiled = []
        for i, p in enumerate(patterns):
            try:
                compiled.append(re.compile(p))
            except re.error as e:
                raise ConfigError(
                    f"redact.patterns[{i}]: not a valid regular expression: {e}",
                    hint="write a Python regular expression, e.g. ACME-[A-Z0-9]{24}",
                ) from e
        if home == "":
            home = _default_home()
        if user == "":
            user = _default_user()
        if home is not None:
            home = home.rstrip("/\\")
            if home.count("/") + home.count("\\") < 1 or len(home) < 3:
                home = None  # "/" or a drive root would match every path
        if user is not None and (len(user) < 4 or user.lower() in COMMON_USER_NAMES):
            user = None
        self._config = EngineConfig(
            known={k: str(v) for k, v in (known or {}).items()},
            patterns=compiled,
            allow=frozenset(allow),
            home=home,
            user=user,
            decode=decode,
            salt=salt,
        )
        self._scrubber = Engine(self._config, SHAPES, rules=rules)
        self._checker = Engine(self._config, SHAPES, rules=rules)  # built separately: a scrubber bug cannot blind it
        self._start_counting()

    def _start_counting(self) -> None:
        self.counts: dict[str, int] = {}
        self.occurrences: dict[str, int] = {}
        self._seen: set[tuple[str, str]] = set()
        self._sink = Sink(self._record)
        # A private key printed a line at a time goes on in the next line *of its own stream*: the
        # server's stderr lines are one stream, the wire's messages another, and which of them the
        # writer sees first between two lines of a key is timing. Each keeps its own open key.
        self._open_keys: dict[bool, tuple[bool, int]] = {False: (False, 0), True: (False, 0)}

    @property
    def known(self) -> dict[str, str]:
        """The known secret values it was built with (source -> value)."""
        return self._config.known

    def fork(self) -> Redactor:
        """A Redactor for another output of the same run: the same compiled detectors (nothing is
        compiled again: a run compiles its config's once, however many sessions and outputs it
        has), its own counts and its own scanning state, so forks may scrub in parallel threads."""
        twin = object.__new__(Redactor)
        twin._config = self._config
        twin._scrubber = self._scrubber.fork()
        twin._checker = self._checker.fork()  # still apart from the scrubber: a copy of the checker
        twin._start_counting()
        return twin

    def with_known(self, more: Mapping[str, str]) -> Redactor:
        """This redactor knowing `more` secret values too (`name` -> value): what a session learned as it
        ran, an OAuth token (transports/oauth.py), before anything of the session is written. Its
        engines are compiled again (a known value is part of them); counts start afresh."""
        twin = object.__new__(Redactor)
        twin._config = EngineConfig(**{**vars(self._config), "known": {**self._config.known, **more}})
        twin._scrubber = Engine(twin._config, SHAPES)
        twin._checker = Engine(twin._config, SHAPES)
        twin._start_counting()
        return twin

    def _record(self, kind: str, value: str, path: str, named: bool) -> None:
        self.occurrences[kind] = self.occurrences.get(kind, 0) + 1
        # Distinct values are told apart by a keyed digest; the value itself is not kept.
        digest = hmac.new(TAG_KEY + self._config.salt, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        key = (kind, digest.hexdigest())
        if key not in self._seen:
            self._seen.add(key)
            self.counts[kind] = self.counts.get(kind, 0) + 1

    @contextlib.contextmanager
    def rules_deferred(self) -> Iterator[None]:
        """Scrub and verify with our own detectors only, for the few steps a process takes before
        it forks (rec's header): the rule set's Go runtime must not start in a process that will
        fork (rules.py). Whatever was checked so must be checked again with the rules after."""
        engines = (self._scrubber, self._checker)
        before = [e.use_rules for e in engines]
        for e in engines:
            e.use_rules = False
        try:
            yield
        finally:
            for e, was in zip(engines, before, strict=True):
                e.use_rules = was

    # -- scrubbing ----------------------------------------------------------------------------

    def redact_event(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """A new event with every secret replaced, in every part (msg, raw, text, b64, detail, ...).

        Events holding nothing secret-like are returned as a shallow copy (nested values shared).
        """
        stderr = event.get("kind") == "stderr"
        if not self._open_keys[stderr][0] and not self._scrubber.could_match(dumps(event)):
            return dict(event)
        return self._scrub_event(event, stderr)

    def _scrub_event(self, event: Mapping[str, Any], stderr: bool) -> dict[str, Any]:
        """The scrubber's walk of one event with its stream's open key (see `_open_keys`)."""
        s = self._scrubber
        s.pem_open, s.pem_pieces = self._open_keys[stderr]
        try:
            return s.event(event, self._sink)
        finally:
            self._open_keys[stderr] = (s.pem_open, s.pem_pieces)

    def redact_obj(self, obj: Any) -> Any:
        """A deep copy of a JSON-like value (dicts, lists, strings, ...) with secrets replaced."""
        return self._scrubber.obj(obj, self._sink)

    def redact_text(self, text: str) -> str:
        return self._scrubber.text(text, 0, self._sink)

    def redact_tape(self, header: Mapping[str, Any], events: Iterable[Mapping[str, Any]], *, where: str = "tape",
                    **footer: Any) -> bytes:
        """The whole tape as bytes, scrubbed and verified: what a golden tape writer writes atomically.

        Raises SecretLeak (and so writes nothing) if verification finds anything.
        """
        data = tape_bytes(
            self._scrubber.obj(dict(header), self._sink),
            (self.redact_event(ev) for ev in events),
            **self._scrubber.obj(footer, self._sink),
        )
        self.verify(data, where)
        return data

    def line_bytes(self, line: Mapping[str, Any], where: str, text: str | None = None) -> bytes:
        """One tape line scrubbed, serialized (newline included) and verified: what a streaming
        writer writes. Raises SecretLeak (write nothing) if verification finds anything. `text`,
        if given, must be `dumps(line)` (EventBuilder.line_and_text splices it for less).

        A line in which the checker can find nothing (`could_match`, verify's own first step) is
        final as it stands: it is not walked, scrubbed or serialized twice. That is verification
        by the checker, not trust in the scrubber, so the two engines stay independent.
        """
        if text is None:
            text = dumps(line)
        stderr = line.get("kind") == "stderr"
        if not self._open_keys[stderr][0] and not self._checker.could_match(text):
            return (text + "\n").encode("utf-8")
        data = serialize(self._scrub_event(line, stderr))
        self.verify(data, where)
        return data

    def guard(self, text: str, where: str) -> str:
        """Scrub text and verify the result: for reports, logs, markdown, PR comments, error messages."""
        cleaned = self.redact_text(text)
        self.verify(cleaned, where)
        return cleaned

    def summary(self) -> str:
        """How many values of which kind were redacted, never the values: `2 github-token, 1 env.X`."""
        return ", ".join(f"{n} {kind}" for kind, n in sorted(self.counts.items())) or "nothing redacted"

    # -- verification -------------------------------------------------------------------------

    def verify(self, data: str | bytes, where: str, *, form: str = "lines") -> None:
        """Scan finished output with the separately built checker; SecretLeak names place and kind.

        `form` says how the bytes are read. "lines" (tapes, reports, documents, messages): JSON
        lines are parsed and walked, so the place is a line and a JSON path; other lines are
        scanned as text. "view" (tape/view.py's review view): each `path = <JSON value>` line is
        read as what it is, a value at a path: the value parsed and walked as the tape's strings
        are, the path scanned as the tape's keys are, the line's exact text scanned as a tape
        line's is; `@@` and `#` lines as text. The view holds the tape's values, JSON-escaped: read
        as plain text, a `\\n` before a name or a number after one reads as something the tape
        does not hold (a `Cookie:` line, `total_tokens = 12345678`), and every golden with one
        could never be written. Decoded forms are checked too.
        """
        if form not in ("lines", "view"):
            raise ValueError(f"verify: unknown form {form!r}")
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        checker = self._checker
        checker.pem_open = False
        found: list[tuple[str, str, bool]] = []
        sink = Sink(lambda kind, value, path, named: found.append((kind, path, named)))
        lines = text.split("\n")
        multi = len([ln for ln in lines if ln.strip()]) > 1
        for number, line in enumerate(lines, start=1):
            if not line.strip() or not (checker.pem_open or checker.could_match(line)):
                continue  # nothing there any detector could find, as text or parsed
            place = f"{where}:{number}" if multi else where
            parsed: Any = None
            view_value = _view_value(line) if form == "view" else None
            if view_value is not None:
                path, parsed = view_value
                checker.text(path, 0, sink, "path")
                checker.obj(parsed, sink, path)
            else:
                stripped = line.strip()
                if stripped[:1] in "{[":
                    try:
                        parsed = json.loads(stripped)
                    except ValueError:
                        parsed = None
                if isinstance(parsed, dict):
                    checker.event(parsed, sink)
                elif isinstance(parsed, list):
                    checker.obj(parsed, sink)
                else:
                    checker.text(line, 0, sink, "text")
            if not found and parsed is not None:
                # The exact text as well: a walker bug must not hide a plain token in the bytes.
                # Not the rule set's hits: some of its rules read a keyword nearby, which a JSON
                # line may put in another field; the walk above gave them each string to check.
                # Nor what only a name makes a secret (Hit.context): the walk judged each value
                # under its own name, which the line's text may put beside another value.
                strict = [h for h in checker.scan(line) if not (h.context or h.rule or h.kind in _CONTEXT_KINDS)]
                if strict:
                    found.append((strict[0].kind, "line text", strict[0].named))
            if found:
                kind, path, named = found[0]
                hint = (
                    f"if the value of {kind} is not a secret, list it under redact.allow in mcptape.yml; "
                    "if it is, this is an mcptape bug: please report it"
                    if named
                    else "this is an mcptape bug: please report it; meanwhile add the value's shape to "
                    "redact.patterns in mcptape.yml"
                )
                raise SecretLeak(f"{place}: a {kind} value survived redaction (at {path}); nothing was written", hint=hint)


_VIEW_SEPARATOR = " = "


def _view_value(line: str) -> tuple[str, Any] | None:
    """(path, value) of a review view's `path = <JSON value>` line, None for any other line (tape/view.py).

    A path may hold ` = ` itself (inside a tool's name): the first split whose right side parses is it."""
    if line.startswith(("@@ ", "# ")):
        return None
    at = line.find(_VIEW_SEPARATOR)
    while at > 0:
        try:
            return line[:at], json.loads(line[at + len(_VIEW_SEPARATOR) :])
        except ValueError:
            at = line.find(_VIEW_SEPARATOR, at + 1)
    return None


# Kinds whose detection depends on context a raw JSON line garbles (escaped quotes, entropy of a
# prefix); the structured walk checks them instead.
_CONTEXT_KINDS = frozenset(
    {"cookie", "bearer-token", "basic-auth", "aws-secret-key"} | {n.replace("_", "-") for n in ALWAYS_NAMES + ENTROPY_NAMES}
)


def _default_home() -> str | None:
    home = environment.get("HOME") or ""
    if not home:
        try:
            home = str(Path.home())
        except RuntimeError:
            return None
    return home or None


def _default_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return None


class RedactOptions(Protocol):
    """What of the config's `redact:` block a Redactor is built with (config/models.py RedactSettings)."""

    @property
    def patterns(self) -> Sequence[str]: ...

    @property
    def allow(self) -> Sequence[str]: ...


def make_redactor(known: Mapping[str, str] | None = None, options: RedactOptions | None = None) -> Redactor:
    """The one way mcptape builds a Redactor: the known secret values (the config's, rec's command
    line and environment, `rec --listen`'s headers) and the config's `redact:` patterns and
    allow-list, on top of the built-in detectors. A fresh instance: one per tape or report (its
    `counts` are that output's). publish/outlet.py builds the one for a loaded config."""
    if options is None:
        return Redactor(known=known)
    return Redactor(known=known, patterns=options.patterns, allow=options.allow)


_builtin: Redactor | None = None


def builtin_redactor() -> Redactor:
    """A shared Redactor with the built-in detectors only (no config, no known values), for text
    no config's secret is expected in: error messages, replay's miss messages. Built once (it costs
    ~15 ms); its counts mean nothing."""
    global _builtin
    if _builtin is None:
        _builtin = make_redactor()
    return _builtin
