"""Gate strength: how much of a real change a gate would catch, and which rule lets the rest through.

Mutation testing of a gate, offline (no server starts): from each session's golden tape, changes a
server could make are derived (mutants.py: a tool removed, a result's text changed, a notification
dropped, ...; seeded, so the same config and goldens give the same mutants), each applied to a copy
of the golden as if it were the fresh tape and judged by ci's own path (judge.py: ci/session.py's
normalization, comparison, conformance gate, budget and `fail_on`), and the verdicts counted
(report.py): killed (the gate exits non-zero), survived (it passes: named with the config line that
masked it, or the fact that no session calls that tool), ignored by design (masked by a rule made for
exactly that value) and equivalent (no gate could see it). measure.py runs it over a config.

Leaves to others: what a difference is and how severe (diff/, the verdict's vocabulary), which
sessions exist and where their goldens are (ci/), printing and exit codes (commands/check.py's
`--strength`, ci's `--strength` line and `drift.min_strength`, init's summary).
"""
