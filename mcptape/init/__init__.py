"""`mcptape init`'s planning: from what a live server lists to a first mcptape.yml, green from its first `ci`.

    server.py      the `servers:` entry, and what the server lists (with the handshake's fallbacks)
    scaffold.py    example arguments and which calls are safe, from a tool's schema and annotations (pure)
    probe.py       call each candidate tool once and say whether it answered
    plan.py        what the session calls, and why each call it does not make is commented out
    trial.py       the session run twice as ci runs it: the normalize rules, and the calls no rule makes stable
    config_file.py the file's text, and writing it once, checked, never over a file
    pinning.py     pin the package an `npx pkg` / `uvx pkg` command runs
    text.py        server text in comments and progress lines: one line, escaped

In order: entry and listing, plans, probes, trial rounds, the file. None of it prints: progress goes to
the callback the command gives. The command (options, printing, the exit code) is commands/init.py.
"""
