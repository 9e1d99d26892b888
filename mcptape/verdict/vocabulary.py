"""The verdict's vocabulary: severities, the finding kinds and drift classes, the exit code of each.

At the bottom of the package because everything that judges or is configured to judge reads it:
config/ checks `drift.fail_on` and `drift.ignore` against these names, diff/ and conformance build
findings of these kinds, report/ renders them, commands/ turn them into exit codes. The data the
verdict is made of (Finding, Drift, SessionResult, ...) is verdict/model.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_OK, EXIT_OUTPUT_DRIFT, EXIT_SECRET, EXIT_STRUCTURAL_DRIFT

Severity = Literal["structural", "output", "info"]
# A severity's exit code, which also orders severities wherever one is worse than another (higher, worse).
SEVERITY_EXIT: dict[str, int] = {"structural": EXIT_STRUCTURAL_DRIFT, "output": EXIT_OUTPUT_DRIFT, "info": EXIT_OK}

# Session verdicts, worst last; `exit_code` orders them for "the worst verdict wins".
VERDICT_EXIT: dict[str, int] = {
    "same": EXIT_OK,
    "updated": EXIT_OK,  # --update-golden wrote the golden tape
    "output": EXIT_OUTPUT_DRIFT,
    "structural": EXIT_STRUCTURAL_DRIFT,
    "error": EXIT_COULD_NOT_RUN,
    "secret": EXIT_SECRET,
}


# -- the drift table ----------------------------------------------------------------------------------
#
# One row per finding kind: the one home of what a kind is called, what it means, how bad it is by
# default, how a report says it, and which of two findings of one severity heads a drift. diff/ and the
# other checks build findings through it (verdict/model.py's `finding` takes the severity from here),
# `drift.fail_on`/`drift.ignore` are checked against its names (config/), the reports say its phrases
# (report/markdown.py's `in_words`) and its meanings (SARIF rules, `check --surface`), and the redactor
# reads its words as mcptape's own text (redact/own_text.py). Adding a drift class is one row here plus the
# check that finds it (diff/checks.py's registry); tests/verdict/test_drift_table.py fails on a row with a
# column missing and on a finding built with a kind or severity the table does not give.

# How bad a finding may be, by default and where its check decides (a rule the row's meaning states).
# `rank` orders findings of one severity, lower first: what a reviewer most needs to read first.
RANK_PROTOCOL, RANK_FAILS, RANK_LOST, RANK_CHANGED, RANK_MAY_USE, RANK_METADATA, RANK_CLIENT = range(7)

# The phrase a report says a drift in when its kind has none that fits the finding (the placeholders
# below are filled by the renderer from the finding: untrusted values always as code spans).
DEFAULT_PHRASE = "{call}: {detail}"


@dataclass(frozen=True)
class DriftKind:
    """One row of the drift table."""

    category: str
    kind: str
    severity: Severity  # before `drift.fail_on`
    rank: int  # which heads a drift among findings of one severity (RANK_*)
    meaning: str  # what it says about the server, for a reviewer (docs, SARIF, `check --surface`)
    # How a report says it, most specific first: the first whose placeholders the finding fills is used
    # ({call} {what} {detail} {noun} {item} {tool} {required} {optional} {described} {before} {after} {at} {error}).
    phrases: tuple[str, ...] = (DEFAULT_PHRASE,)
    may_be: tuple[Severity, ...] = ()  # other severities its check gives, by the rule `meaning` states

    @property
    def name(self) -> str:
        return f"{self.category}.{self.kind}"


_S: Severity = "structural"
_O: Severity = "output"
_I: Severity = "info"
_PROCESS = ("the server process changed at {call}: {what}",)
_ROWS = [
    # call: what the session sent and the server asked, call by call
    DriftKind("call", "added", _S, RANK_CHANGED, "a call the golden tape does not hold"),
    DriftKind("call", "removed", _S, RANK_LOST, "a recorded call the fresh tape no longer holds",
              ("{call} is no longer answered as recorded: {what}",)),
    DriftKind("call", "arguments", _O, RANK_CLIENT, "the client sent other arguments (the session's change, not the server's)"),
    DriftKind("call", "server_request_added", _O, RANK_CHANGED,
              "the server now asks the client something it did not (sampling, elicitation, roots)"),
    DriftKind("call", "server_request_removed", _O, RANK_CHANGED, "the server no longer asks the client what it asked"),
    DriftKind("call", "server_request_changed", _O, RANK_CHANGED,
              "the server asks the client another question (paired in order per method)"),
    # surface: what the server lists
    DriftKind("surface", "added", _S, RANK_MAY_USE, "a tool, resource or prompt the golden did not list "
              "(`drift.added_surface` sets how bad)", ("new {noun} {item}: clients see it when they list",
                                                       "{what}: clients see it when they list"), (_O, _I)),
    DriftKind("surface", "removed", _S, RANK_LOST, "a listed tool, resource or prompt is gone",
              ("{noun} {item} is gone: clients that use it break", "{what}: clients that use it break")),
    DriftKind("surface", "renamed", _S, RANK_CHANGED, "a tool listed under a new name with the same schema"),
    # schema: a tool's JSON Schema, read by who reads it (diff/schema_change.py)
    DriftKind("schema", "breaking", _S, RANK_LOST, "the server accepts less than it did, or promises less in its output",
              ("{tool} now requires {required}: calls without it break",
               "{what}: calls written against the golden schema may break")),
    DriftKind("schema", "compatible", _O, RANK_MAY_USE, "the server accepts more, or promises more",
              ("{tool} accepts a new optional {optional}: existing calls keep working", "{what}: existing calls keep working")),
    DriftKind("schema", "cosmetic", _O, RANK_MAY_USE, "a description, title or hint: what an agent reads, not what it may send",
              ("the description of {noun} {described} is now {after}, was {before} (cosmetic)", "{what} (cosmetic)")),
    # session: the handshake and what frames the session
    DriftKind("session", "protocol", _S, RANK_PROTOCOL, "the negotiated protocol revision changed"),
    DriftKind("session", "client_protocol", _O, RANK_CLIENT,
              "the client asked another revision (info when the server accepted each)", may_be=(_I,)),
    DriftKind("session", "capability_removed", _S, RANK_METADATA, "a capability the server declared is gone"),
    DriftKind("session", "capability_added", _O, RANK_METADATA, "the server declares a new capability"),
    DriftKind("session", "capability_changed", _O, RANK_METADATA,
              "a capability's setting changed (structural when a feature went from on to off)", may_be=(_S,)),
    DriftKind("session", "server_info", _O, RANK_METADATA, "the server's name, title or version changed"),
    DriftKind("session", "changed", _O, RANK_METADATA, "another field of the handshake's answer changed (instructions, ...)"),
    DriftKind("session", "no_golden", _S, RANK_CHANGED, "the session has no golden tape: record it, review it, commit it"),
    DriftKind("session", "no_reference", _S, RANK_CHANGED, "the session cannot run on the reference it is compared with"),
    # protocol: across revisions (diff/protocol.py)
    DriftKind("protocol", "changed", _S, RANK_PROTOCOL, "the session speaks another era of MCP (its envelope, its handshake)"),
    DriftKind("protocol", "deprecated", _I, RANK_PROTOCOL, "the session uses what its revision deprecates (a note)"),
    # result: a call's answer
    DriftKind("result", "changed", _O, RANK_CHANGED, "a value in an answer changed",
              ("{call} now returns {after}{at}, was {before}",)),
    DriftKind("result", "added", _O, RANK_CHANGED, "an answer holds a field or item it did not"),
    DriftKind("result", "removed", _O, RANK_CHANGED, "an answer lost a field or item"),
    # error: a call's failure
    DriftKind("error", "result_to_error", _S, RANK_FAILS, "a call that returned a result now fails",
              ("{call} now fails with {error}, where it returned a result",
               "{call} now fails with an error, where it returned a result")),
    DriftKind("error", "error_to_result", _S, RANK_CHANGED, "a call that failed now returns a result",
              ("{call} now returns a result, where it failed with an error",)),
    DriftKind("error", "is_error", _S, RANK_CHANGED, "a result's `isError` flag flipped (a call that now fails heads)"),
    DriftKind("error", "code", _S, RANK_CHANGED,
              "a call fails with another error code (info where the revision moved the code with it)",
              ("{call} now fails with error code {after}, was {before}",), (_I,)),
    DriftKind("error", "message", _O, RANK_CHANGED, "a call fails with another message",
              ("{call} now fails with {after}, was {before}",)),
    DriftKind("error", "data", _O, RANK_CHANGED, "an error's `data` changed"),
    # notification: what the server sends unasked
    DriftKind("notification", "added", _O, RANK_CHANGED,
              "the server sends a notification it did not (info for one racing a client's GET stream over HTTP)", may_be=(_I,)),
    DriftKind("notification", "removed", _O, RANK_CHANGED,
              "the server no longer sends a notification (info for one racing a client's GET stream over HTTP)", may_be=(_I,)),
    DriftKind("notification", "changed", _O, RANK_CHANGED, "a notification's content changed"),
    DriftKind("notification", "order", _O, RANK_CHANGED, "progress arrives after the response it belongs to"),
    # process: the server as a process and the recording as a whole
    DriftKind("process", "no_answer", _S, RANK_FAILS, "a request the server no longer answers (a timeout, a crash)", _PROCESS),
    DriftKind("process", "answered", _S, RANK_CHANGED, "a request the golden has no answer to is answered now", _PROCESS),
    DriftKind("process", "crash", _S, RANK_FAILS, "the server crashed, or the fresh tape was cut short", _PROCESS),
    DriftKind("process", "exit", _O, RANK_CHANGED, "the server exited another way", _PROCESS),
    DriftKind("process", "garbage", _O, RANK_CHANGED, "lines on stdout that are not JSON-RPC", _PROCESS),
    DriftKind("process", "note", _O, RANK_CHANGED, "something the recorder noted (a dropped line, a cut-short tape)", _PROCESS),
    # side_effect: files the server touched in its sandbox (diff/side_effects.py)
    DriftKind("side_effect", "added", _S, RANK_CHANGED, "a step now touches a file it did not"),
    DriftKind("side_effect", "removed", _S, RANK_CHANGED, "a step no longer touches a file it did"),
    DriftKind("side_effect", "changed", _S, RANK_CHANGED, "a step changes a file another way"),
    # conformance: the MCP schema of the tape's revision (conformance/; `drift.conformance` sets how bad)
    DriftKind("conformance", "schema", _S, RANK_CHANGED, "a message breaks its revision's MCP schema", may_be=(_O, _I)),
    DriftKind("conformance", "output_schema", _S, RANK_CHANGED, "structuredContent breaks the tool's own outputSchema",
              may_be=(_O, _I)),
    DriftKind("conformance", "version", _I, RANK_CHANGED, "the tape's revision has no schema to check it against"),
    # Only when two live sides are compared (ci/baseline.py): off the exit code unless `drift.fail_on` says so.
    DriftKind("latency", "regression", _I, RANK_CHANGED, "a call is slower than the reference beyond the reference's own noise",
              may_be=(_O, _S)),
    DriftKind("release", "patch", _S, RANK_LOST, "a structural drift under a semver patch bump "
              "(`drift.fail_on` applied where it is found)", may_be=(_O, _I)),
    DriftKind("release", "minor", _S, RANK_LOST, "a structural drift under a semver minor bump "
              "(`drift.fail_on` applied where it is found)", may_be=(_O, _I)),
    # security: the review of a surface change (diff/text_rules.py: new text; diff/surface_review.py: what a tool may do)
    DriftKind("security", "instruction", _S, RANK_CHANGED, "instruction-shaped text aimed at the model (tool poisoning, OWASP MCP03)"),
    DriftKind("security", "invisible", _S, RANK_CHANGED,
              "characters a reviewer cannot see but a model reads (zero-width, bidi, Unicode tags)"),
    DriftKind("security", "homoglyph", _S, RANK_CHANGED, "letters that look like others (mixed scripts, a name that reads like another)"),
    DriftKind("security", "url", _S, RANK_CHANGED, "a new URL, e-mail address or host for the agent to reach"),
    DriftKind("security", "encoded", _S, RANK_CHANGED, "an encoded blob (base64 or hex) a reviewer cannot read"),
    DriftKind("security", "sensitive", _S, RANK_CHANGED, "a reference to credentials or a sensitive path"),
    DriftKind("security", "oversize", _S, RANK_CHANGED, "a field that grew by more than a reviewer can read in one change"),
    DriftKind("security", "widened", _S, RANK_CHANGED,
              "a tool that may now do more than it declared (a hint flipped, a result's cache scope changed)"),
    DriftKind("security", "output_dropped", _S, RANK_CHANGED, "a tool whose output schema lost a field agents may rely on"),
    # context: what the surface costs an agent (diff/surface_cost.py)
    DriftKind("context", "budget", _S, RANK_CHANGED, "the surface's cost in an agent's context grew past `drift.budget`"),
]  # fmt: skip
DRIFT_TABLE: dict[tuple[str, str], DriftKind] = {(row.category, row.kind): row for row in _ROWS}

# The categories and the kinds of each, in the table's order: the names `drift.fail_on` keys ("category"
# or "category.kind") and `drift.ignore` rules use, checked when mcptape.yml loads.
FINDING_KINDS: dict[str, tuple[str, ...]] = {}
for _row in _ROWS:
    FINDING_KINDS[_row.category] = (*FINDING_KINDS.get(_row.category, ()), _row.kind)

# Every kind of a `security` finding and what it means to a reviewer (SARIF rules, `check --surface`).
SECURITY_KINDS: dict[str, str] = {row.kind: row.meaning for row in _ROWS if row.category == "security"}


def drift_kind(category: str, kind: str | None) -> DriftKind:
    """The row of a finding's class (a finding without a kind is its category's first: `result` is
    `result.changed`). KeyError for a class the table does not hold: a check that emits one is a bug."""
    return DRIFT_TABLE[(category, kind if kind is not None else FINDING_KINDS[category][0])]


# The keys of a `drift.ignore` rule: what of a finding and its call the rule matches (diff/compare.py).
IGNORE_KEYS = ("path", "category", "method", "name")


def drift_classes() -> list[str]:
    """Every name a `drift.fail_on` key may be: each category, and each category.kind."""
    return [name for category, kinds in FINDING_KINDS.items() for name in (category, *(f"{category}.{k}" for k in kinds))]


def worst_exit(codes: list[int]) -> int:
    """4 > 3 > 2 > 1 > 0: a leaked secret outranks a crash, a crash outranks drift."""
    return max(codes, default=EXIT_OK)
