"""rec: record a live session as a tape, over stdio or HTTP, without ever slowing the wire.

    stdio.py    `mcptape rec -- <server>`: spawn the server, fork the writer, run the relay
    relay.py    the poll loop that moves the bytes and tees a copy (the hot path)
    writer.py   the forked writer: frames -> lines -> events -> redact -> tape
    http.py     `mcptape rec --listen --upstream`: a recording reverse proxy
"""
