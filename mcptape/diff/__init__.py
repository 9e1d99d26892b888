"""Diff: align two tapes and classify every difference (surface, schema, session, result, error, ...).

    compare.py      diff_tapes: golden + fresh tape -> DiffResult (pure)
    calls.py        a tape's events as the calls a reviewer thinks in; the stretches both tapes share
    align.py        which golden call is which fresh call
    checks.py       the registry of checks an engine runs (default_checks: mcptape's own)
    classify.py     the checks: small pure functions, one difference -> Findings
    schema_change.py JSON Schema changes: breaking, compatible, cosmetic
    protocol.py     across protocol eras: the 2026-07-28 envelope out, the handshake as the session;
                    a refused discover probe out of both tapes
    pages.py        the pages of one */list walk as one list
    side_effects.py files a server wrote in its sandbox
    values.py       path-level differences between two JSON values (arrays of objects by natural key)

Rendering is report/'s; `mcptape diff` is commands/diff.py.
"""
