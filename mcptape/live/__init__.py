"""The live side: mcptape as a client of a running server.

    client.py      the scripted MCP client: one session's steps against a live server, every event recorded
    launch.py      open the transport a config's server entry describes (a process or an HTTP endpoint)
    refusal.py     a server that completed the handshake and refused every request, named
    sandbox.py     a session's sandbox directories, snapshotted, and what each step changed in them

What a session means to the gate (redaction, comparison, goldens) is ci/'s; the bytes are transports/'.
"""
