"""Issue 18: a tape compares by meaning, not by who recorded it.

One session (list tools, resources and prompts, two tool calls, a prompt) against today's
server-everything, recorded by `mcptape ci`, by `mcptape rec` behind the official SDK 2.x client
(`ClientSession` over `stdio_client`, rec as the server command), behind FastMCP's `Client`,
and behind a hand-written JSON-RPC client; over streamable HTTP, by `mcptape rec --listen` in
front of the server, driven by ci, the SDK and FastMCP. `mcptape diff` of each recording
against ci's golden of the same transport and protocol version must say "same" (exit 0).

The clients differ in what issue 18 says must not matter: `params` absent or `{}`, a
`server/discover` probe refused before `initialize` (FastMCP; ci's own `auto`), where racing
notifications land. What they ask is the same: the SDK and FastMCP open with `initialize`
2025-11-25, as ci's `auto` does after its fallback (issue 29), so their golden is ci's with
`protocol: "2025-11-25"` or with `auto`; the raw client asks 2025-06-18 (no capabilities), what
mcptape 0.1 asked, and its golden is ci's with `auto`: a server that answers each client the
version it asked is the same server (docs/diff.md).
A positive control shows diff still sees a changed call among such recordings.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import mcptape_command
from tests.integration.http_helpers import background, free_port, mcptape_listening
from tests.integration.real_servers import Run, mcptape, need_tools, node_release

pytestmark = pytest.mark.node

DRIVER = Path(__file__).with_name("client_driver.py")
STEPS: list[list[object]] = [["list_tools"], ["list_resources"], ["list_prompts"], ["call", "echo", {"message": "hello tape"}],
         ["call", "get-sum", {"a": 2, "b": 3}], ["get_prompt", "simple-prompt", {}]]
CONFIG_STEPS = """\
      - list_tools
      - list_resources
      - list_prompts
      - call: echo
        arguments: {message: hello tape}
      - call: get-sum
        arguments: {a: 2, b: 3}
      - get_prompt: simple-prompt
"""


def server_block(name: str, body: str, protocol: str) -> str:
    return f"  {name}:\n{body}    protocol: \"{protocol}\"\n"


def write_config(path: Path, servers: dict[str, tuple[str, str]], golden_dir: str = "tapes") -> None:
    blocks = "".join(server_block(name, body, protocol) for name, (body, protocol) in servers.items())
    sessions = "".join(f"  - name: {name}\n    server: {name}\n    steps:\n{CONFIG_STEPS}" for name in servers)
    path.write_text(f"version: 1\ngolden_dir: {golden_dir}\nservers:\n{blocks}sessions:\n{sessions}",
                    encoding="utf-8")


def drive(library: str, transport: str, target: str, steps: list[list[object]] = STEPS) -> list[object]:
    proc = subprocess.run([sys.executable, str(DRIVER), library, transport, target, json.dumps(steps)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"{library} over {transport}: {proc.stderr[-2000:]}"
    out: list[object] = json.loads(proc.stdout)
    return out


def rec_argv(tape: Path, server: list[str]) -> str:
    return json.dumps(mcptape_command("rec", "--out", str(tape), "--name", tape.stem, "--", *server))


@dataclass
class Recordings:
    root: Path
    stdio_auto: Path  # ci's golden, protocol auto
    stdio_pinned: Path  # ci's golden, protocol 2025-11-25
    http_pinned: Path  # ci's golden over streamable HTTP, straight to the server, 2025-11-25

    def tape(self, name: str) -> Path:
        return self.root / f"{name}.tape.jsonl"


def diff(a: Path, b: Path, *args: str) -> Run:
    return mcptape("diff", str(a), str(b), *args, cwd=b.parent)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recordings]:
    need_tools()
    root = tmp_path_factory.mktemp("any-client")
    everything = node_release("everything")
    stdio = f"    command: [node, {everything}, stdio]\n"
    port = free_port()
    write_config(root / "mcptape.yml", {"stdio-auto": (stdio, "auto"), "stdio-pinned": (stdio, "2025-11-25")})
    with background(["node", str(everything), "streamableHttp"], port, env={"PORT": str(port)}):
        write_config(root / "http.yml", {"http-pinned": (f"    url: http://127.0.0.1:{port}/mcp\n", "2025-11-25")})
        for config in ("mcptape.yml", "http.yml"):
            run = mcptape("ci", "-c", config, "--update-golden", cwd=root)
            assert run.returncode == 0, run.text()

    server = ["node", str(everything), "stdio"]
    for library in ("sdk", "fastmcp", "raw"):
        drive(library, "stdio", rec_argv(root / f"{library}-stdio.tape.jsonl", server))
    changed: list[list[object]] = [*STEPS[:3], ["call", "echo", {"message": "hello changed tape"}], *STEPS[4:]]
    drive("sdk", "stdio", rec_argv(root / "sdk-stdio-changed.tape.jsonl", server), changed)

    for who in ("sdk", "fastmcp", "ci-pinned", "ci-auto"):
        port = free_port()  # a fresh server per recording: its list_changed notifications start anew
        with background(["node", str(everything), "streamableHttp"], port, env={"PORT": str(port)}):
            tape = root / f"{who}-listen.tape.jsonl"
            with mcptape_listening("rec", "--out", str(tape), "--name", tape.stem,
                                   "--upstream", f"http://127.0.0.1:{port}/mcp") as listening:
                if who.startswith("ci"):
                    protocol = "2025-11-25" if who == "ci-pinned" else "auto"
                    write_config(root / f"{who}.yml", {who: (f"    url: {listening.url}\n", protocol)},
                                 golden_dir=f"scratch-{who}")
                    mcptape("ci", "-c", f"{who}.yml", "--update-golden", cwd=root)
                else:
                    drive(who, "http", listening.url)
    yield Recordings(root, root / "tapes" / "stdio-auto.tape.jsonl", root / "tapes" / "stdio-pinned.tape.jsonl",
                     root / "tapes" / "http-pinned.tape.jsonl")


def assert_same(run: Run) -> None:
    assert run.returncode == 0 and run.headline().startswith("same"), run.text()


def test_ci_through_rec_listen_is_the_same_as_ci_straight_to_the_server(recordings: Recordings) -> None:
    # The control that rec --listen records what ci sees: already "same" today.
    assert_same(diff(recordings.http_pinned, recordings.tape("ci-pinned-listen")))


def test_a_changed_call_still_differs_among_client_recordings(recordings: Recordings) -> None:
    run = diff(recordings.tape("sdk-stdio"), recordings.tape("sdk-stdio-changed"), "--json")
    assert run.returncode == 1, run.text()
    report = json.loads(run.stdout)
    changed = [d for d in report["drifts"] if (d["call"] or {}).get("name") == "echo"]
    assert changed and "hello changed tape" in json.dumps(changed), run.stdout[:3000]


def test_rec_behind_the_sdk_client_is_the_same_as_ci(recordings: Recordings) -> None:
    assert_same(diff(recordings.stdio_pinned, recordings.tape("sdk-stdio")))


def test_rec_behind_the_sdk_client_is_the_same_as_ci_auto(recordings: Recordings) -> None:
    # Issue 29: ci's auto falls back to initialize 2025-11-25, what the SDK asks: same, to the byte of the version.
    run = diff(recordings.stdio_auto, recordings.tape("sdk-stdio"))
    assert_same(run)
    assert "client asked protocol" not in run.text()


def test_rec_behind_fastmcp_is_the_same_as_ci(recordings: Recordings) -> None:
    assert_same(diff(recordings.stdio_pinned, recordings.tape("fastmcp-stdio")))


def test_rec_behind_a_raw_client_is_the_same_as_ci(recordings: Recordings) -> None:
    # The raw client asks 2025-06-18, ci 2025-11-25: the server accepted each, so the same server.
    assert_same(diff(recordings.stdio_auto, recordings.tape("raw-stdio")))
    report = json.loads(diff(recordings.stdio_auto, recordings.tape("raw-stdio"), "--json").stdout)
    [info] = [f for d in report["drifts"] for f in d["findings"] if f["kind"] == "client_protocol"]
    assert info["severity"] == "info" and '"2025-11-25" → "2025-06-18"' in info["message"], info


def test_rec_listen_behind_the_sdk_client_is_the_same_as_ci(recordings: Recordings) -> None:
    assert_same(diff(recordings.http_pinned, recordings.tape("sdk-listen")))


def test_rec_listen_behind_fastmcp_is_the_same_as_ci(recordings: Recordings) -> None:
    assert_same(diff(recordings.http_pinned, recordings.tape("fastmcp-listen")))


def test_rec_listen_behind_ci_auto_is_the_same_as_ci(recordings: Recordings) -> None:
    tape = recordings.tape("ci-auto-listen")
    golden = recordings.root / "scratch-ci-auto" / "ci-auto.tape.jsonl"
    assert golden.exists(), "ci with protocol auto could not record through rec --listen"
    assert_same(diff(golden, tape))


def test_rec_listen_logs_a_client_disconnect_in_one_line(tmp_path: Path) -> None:
    # A client that drops its connection (a reset, as a killed agent's socket is) while rec
    # waits for its next request; the clients above do so now and then when they close.
    import socket
    import struct

    need_tools()
    port = free_port()
    upstream = background(["node", str(node_release("everything")), "streamableHttp"], port, env={"PORT": str(port)})
    recorder = mcptape_listening("rec", "--out", str(tmp_path / "dropped.tape.jsonl"),
                                 "--upstream", f"http://127.0.0.1:{port}/mcp")
    with upstream, recorder as listening:
        host, _, rest = listening.url.removeprefix("http://").partition(":")
        for _ in range(2):
            with socket.create_connection((host, int(rest.split("/")[0])), timeout=10) as sock:
                sock.sendall(b"POST /mcp HTTP/1.1\r\n")  # half a request: rec is reading the rest
                time.sleep(1.0)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    assert listening.returncode == 0, listening.stderr
    assert "Traceback" not in listening.stderr, listening.stderr


def test_two_rec_tapes_of_an_unchanged_time_server_are_the_same(tmp_path: Path) -> None:
    steps: list[list[object]] = [["list_tools"], ["call", "get_current_time", {"timezone": "Asia/Tokyo"}]]
    server = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    for n in (1, 2):
        if n == 2:
            time.sleep(1.1)  # the clock's seconds must move between the two recordings
        drive("sdk", "stdio", rec_argv(tmp_path / f"time-{n}.tape.jsonl", server), steps)
    assert_same(diff(tmp_path / "time-1.tape.jsonl", tmp_path / "time-2.tape.jsonl"))


def test_diff_takes_the_configs_rules(recordings: Recordings, tmp_path: Path) -> None:
    # A rule of the config makes the echoed message volatile: with -c, the changed echo is "same".
    config = tmp_path / "mcptape.yml"
    config.write_text('version: 1\nservers:\n  s:\n    command: [node, x.js]\nsessions:\n  - name: s\n'
                      '    server: s\n    steps: [list_tools]\nnormalize:\n  - pattern: "hello (changed )?tape"\n'
                      '    replace: "<GREETING>"\n', encoding="utf-8")
    run = mcptape("diff", "-c", str(config), str(recordings.tape("sdk-stdio")),
                  str(recordings.tape("sdk-stdio-changed")), cwd=tmp_path)
    assert_same(run)
