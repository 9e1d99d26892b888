"""The drift checks a diff engine runs: one registry per engine, mcptape's own listed here explicitly.

    result classifiers   by method: compare the `result` of two paired calls (classify.py)
    call checks          run on every paired call, in order (classify.py)
    session checks       run once per pair of tapes (classify.py, protocol.py, side_effects.py)

`default_checks()` builds a new registry with every built-in check, in the order the engine
runs them; nothing registers itself when a module is imported. An embedder or a test adds its
own to a registry of its own (`default_checks().call_checks["mine"] = ...`) and passes it to
`diff_tapes(checks=...)`: no other diff sees it. A new drift class is its row in the drift table
(verdict/vocabulary.py: name, meaning, severity, phrase, rank) and its check: a function in classify.py
(or a module beside it) and a line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcptape.diff import classify, protocol, side_effects, surface_review
from mcptape.diff.classify import CallCheck, ResultClassifier, SessionCheck


@dataclass
class Checks:
    """One engine's checks, by name (by method for result classifiers), in the order they run."""

    result_classifiers: dict[str, ResultClassifier] = field(default_factory=dict)
    call_checks: dict[str, CallCheck] = field(default_factory=dict)
    session_checks: dict[str, SessionCheck] = field(default_factory=dict)


def default_checks() -> Checks:
    """A new registry holding mcptape's built-in checks."""
    checks = Checks()
    for method in classify.SURFACE_LISTS:  # classify_surface, a renamed item as one finding
        checks.result_classifiers[method] = surface_review.classify_surface_renames
    for method in ("initialize", "server/discover"):
        checks.result_classifiers[method] = classify.classify_session
    checks.call_checks.update(
        arguments=classify.check_arguments,
        answer=classify.check_answer,
        notifications=classify.check_notifications,
        garbage=classify.check_garbage,
        agent_text=surface_review.check_agent_text,  # security: what an agent reads, added text only
        widening=surface_review.check_widening,  # security: what a tool may now do
    )
    checks.session_checks.update(
        server_requests=classify.check_server_requests,
        process=classify.check_process,
        protocol=protocol.check_protocol,  # a change of era; within one, classify.check_protocol_version
        deprecations=protocol.check_deprecations,
        complete=classify.check_complete,
        side_effects=side_effects.check_side_effects,
    )
    return checks
