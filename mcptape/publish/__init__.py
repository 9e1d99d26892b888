"""Publishing: every byte that leaves mcptape, verified first, and where it goes.

    outlet.py      the one way out: tapes, reports, the terminal, the comment body — verified before written
    github.py      GitHub: job summary, annotations, step outputs, the sticky PR comment
    telemetry.py   sessions as OpenTelemetry traces (`--otel`)

It knows nothing of how a session is run (live/, ci/): it is handed finished text, events and reports.
"""
