"""The gate's pipeline: the sessions of mcptape.yml recorded, judged against their golden tapes.

    session.py     one session: record -> redact -> normalize -> compare, or write the golden
    selection.py   which sessions a run covers (--session, --shard) and where it may write
    repeat.py      `ci --repeat N`: the same session N times, volatile values and the rules that fix them

The command that drives them (options, threads, reports, exit code) is commands/ci.py.
"""
