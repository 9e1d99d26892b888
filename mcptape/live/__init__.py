"""The live side: mcptape as a client of a running server.

    client.py      the scripted MCP client: one session's steps and handshake against a live server
    wire.py        its wire state: request ids, the event log, deadlines, the receive loop
    server_requests.py  the answers to what the server asks (server requests, input rounds, URL elicitations)
    task_calls.py  a call run as a task, in either era
    launch.py      open the transport a config's server entry describes (a process or an HTTP endpoint)
    refusal.py     a server that completed the handshake and refused every request, named
    sandbox.py     a session's sandbox directories, snapshotted, and what each step changed in them

What a session means to the gate (redaction, comparison, goldens) is ci/'s; the bytes are transports/'.
"""
