"""Diff: align two tapes and classify every difference (surface, schema, session, result, error, ...).

`diff_tapes` is the pure core (engine.py); `run_diff` is `mcptape diff A B [--json]` (command.py).
Classifiers are registered by name in classify.py so conformance, side-effect and cross-protocol
checks can be added without touching the engine. Rendering is report/terminal.py's.
"""

from mcptape.diff import side_effects as _side_effects  # noqa: F401  (registers the side_effect check)
from mcptape.diff.classify import (
    CALL_CHECKS,
    RESULT_CLASSIFIERS,
    SESSION_CHECKS,
    register_call_check,
    register_result_classifier,
    register_session_check,
)
from mcptape.diff.command import run_diff
from mcptape.diff.engine import diff_tapes

__all__ = [
    "CALL_CHECKS",
    "RESULT_CLASSIFIERS",
    "SESSION_CHECKS",
    "diff_tapes",
    "register_call_check",
    "register_result_classifier",
    "register_session_check",
    "run_diff",
]
