"""play: answer MCP requests from a tape, matched by content, strict by default; goes live only with --fallback.

    matching.py   which recorded call a live request is: matchers by name, redacted values as patterns
    engine.py     ReplayEngine: one client line in, the wire lines to send back (no I/O, no threads)
    stdio.py      the stdio loop of `mcptape play`
    http.py       the streamable HTTP server of `mcptape play --listen`
    fallback.py   the live side of `--fallback` / `--fallback-url`: through rec, appended to the tape
"""
