"""The verdict: its vocabulary and its data, at the bottom, where everything that judges or renders reads it.

    vocabulary.py   severities, the finding kinds and drift classes, the exit code of each
    model.py        the verdict as plain data: Finding, Drift, DiffResult, SessionResult, RunReport
"""
