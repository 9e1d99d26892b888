"""The library behind `import mcptape`: the public names are the root package's (mcptape/__init__.py).

A host like the command line (docs/architecture.md, its top layer): it calls the functions the
commands call (commands/play.py, rec.py, diff.py, ci.py, fork.py) and turns their results into
values and their failures into the exceptions of errors.py, where a command prints and exits.
Its modules, each imported only when one of its names is first asked of `mcptape`:

    modes.py       RecordMode, the record modes it shares with the pytest plugin, and what each does
    serving.py     replay(), record() and connect(): what each does, and how it ended (values, exceptions)
    endpoint.py    the Endpoint a client connects to (stdio, HTTP, in memory), PlayReport
    options.py     PlayOptions and ForkSpec, and their mapping onto play's own options and command line
    sdk_streams.py serving a tape to the official SDK's ClientSession through memory streams
    child.py       the stdio child a client spawns (`python -m mcptape.api.child`): play or rec, its status kept
    judging.py     diff() and run(): the verdict models the --json reports serialize
    notices.py     what a command says on stderr, said as a warning
"""
