"""transports/memory.py: the in-memory pair behaves as the client expects of any transport."""

from __future__ import annotations

import pytest

from mcptape.errors import ServerError, ServerTimeout
from mcptape.transports.memory import MemoryPeer, memory_pair


def test_lines_cross_both_ways_and_close_ends_each_side() -> None:
    client, peer = memory_pair()

    def echo(peer: MemoryPeer) -> int:
        while (line := peer.receive()) is not None:
            peer.send(b"echo " + line)
        peer.write_stderr(b"bye")
        return 7

    peer.serve(echo)
    client.send(b"one")
    assert client.receive(5) == b"echo one"
    with pytest.raises(ServerTimeout):
        client.receive(0.05)
    assert client.close() == 7 and client.stderr_tail() == "bye"
    assert client.receive(5) is None  # the end of the server's stream
    with pytest.raises(ServerError):
        client.send(b"late")
