"""`mcptape init`'s planning: from what a live server lists to a first mcptape.yml.

    scaffold.py    example arguments and which calls are safe, from a tool's schema and annotations (pure)
    probe.py       call each candidate tool once and say whether it answered
    pinning.py     pin the package an `npx pkg` / `uvx pkg` command runs

The command (options, printing, the exit code) is commands/init.py.
"""
