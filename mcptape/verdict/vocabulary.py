"""The verdict's vocabulary: severities, the finding kinds and drift classes, the exit code of each.

At the bottom of the package because everything that judges or is configured to judge reads it:
config/ checks `drift.fail_on` and `drift.ignore` against these names, diff/ and conformance build
findings of these kinds, report/ renders them, commands/ turn them into exit codes. The data the
verdict is made of (Finding, Drift, SessionResult, ...) is verdict/model.py's.
"""

from __future__ import annotations

from typing import Literal

from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_OK, EXIT_OUTPUT_DRIFT, EXIT_SECRET, EXIT_STRUCTURAL_DRIFT

Severity = Literal["structural", "output", "info"]
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


# Every kind of a `security` finding and what it means to a reviewer (SARIF rules, `check --surface`'s
# table): the rules of diff/text_rules.py (new text on the surface), then what a tool may do
# (diff/surface_review.py).
SECURITY_KINDS: dict[str, str] = {
    "instruction": "instruction-shaped text aimed at the model (tool poisoning, OWASP MCP03)",
    "invisible": "characters a reviewer cannot see but a model reads (zero-width, bidi, Unicode tags)",
    "homoglyph": "letters that look like others (mixed scripts, a name that reads like another)",
    "url": "a new URL, e-mail address or host for the agent to reach",
    "encoded": "an encoded blob (base64 or hex) a reviewer cannot read",
    "sensitive": "a reference to credentials or a sensitive path",
    "oversize": "a field that grew by more than a reviewer can read in one change",
    "widened": "a tool that may now do more than it declared (a hint flipped, a result's cache scope changed)",
    "output_dropped": "a tool whose output schema lost a field agents may rely on",
}


# The categories of a Finding and the kinds each comes in: the names `drift.fail_on` keys
# ("category" or "category.kind") and `drift.ignore` rules use, checked when mcptape.yml loads.
# What each means and how bad it is: diff/classify.py's docstring. tests/diff/test_classify.py
# checks that every Finding the code builds is named here.
FINDING_KINDS: dict[str, tuple[str, ...]] = {
    "call": ("added", "removed", "arguments", "server_request_added", "server_request_removed", "server_request_changed"),
    "surface": ("added", "removed", "renamed"),
    "schema": ("breaking", "compatible", "cosmetic"),
    "session": ("protocol", "client_protocol", "capability_removed", "capability_added", "capability_changed", "server_info", "changed"),
    "protocol": ("changed", "deprecated"),
    "result": ("changed", "added", "removed"),
    "error": ("result_to_error", "error_to_result", "is_error", "code", "message", "data"),
    "notification": ("added", "removed", "changed", "order"),
    "process": ("no_answer", "answered", "crash", "exit", "garbage", "note"),
    "side_effect": ("added", "removed", "changed"),
    "conformance": ("schema", "output_schema", "version"),
    # Only when two live sides are compared (ci/baseline.py): off the exit code unless fail_on says so.
    "latency": ("regression",),
    "release": ("patch", "minor"),  # a structural drift under a semver patch or minor bump
    "security": tuple(SECURITY_KINDS),
    "context": ("budget",),  # diff/surface_cost.py: drift.budget exceeded
}
# The keys of a `drift.ignore` rule: what of a finding and its call the rule matches (diff/compare.py).
IGNORE_KEYS = ("path", "category", "method", "name")


def drift_classes() -> list[str]:
    """Every name a `drift.fail_on` key may be: each category, and each category.kind."""
    return [name for category, kinds in FINDING_KINDS.items() for name in (category, *(f"{category}.{k}" for k in kinds))]


def worst_exit(codes: list[int]) -> int:
    """4 > 3 > 2 > 1 > 0: a leaked secret outranks a crash, a crash outranks drift."""
    return max(codes, default=EXIT_OK)
