"""Transports move messages; they know bytes and framing, not MCP.

    base.py      the interface every transport offers the scripted client (send, receive, close)
    stdio.py     a spawned server over its stdin/stdout, and the shutdown ladder of its process
    http.py      streamable HTTP and the legacy HTTP+SSE transport, an optional `start:` server
    sse.py       server-sent events: parsing a stream, writing an event (stdlib only)
    memory.py    an in-memory pair with a server function on the other end (tests)
    serve.py     the serving side shared by `rec --listen` and `play --listen`: a threaded HTTP/1.1 server

Below config/: which transport a config's server entry describes is live/launch.py's, above both.
"""
