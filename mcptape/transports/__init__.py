"""Transports move messages; they know bytes and framing, not MCP (stdio.py; HTTP in http.py).

The interface every transport offers to the scripted client is tiny:
`send(line: bytes)`, `receive(timeout) -> bytes | None` (None at end of stream), `close()`.
"""
