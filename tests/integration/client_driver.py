"""Run one scripted session with a real MCP client library, in its own process: the official SDK or FastMCP.

    python client_driver.py sdk|fastmcp|raw stdio '["cmd", "arg", ...]' STEPS
    python client_driver.py sdk|fastmcp     http  http://127.0.0.1:PORT/mcp  STEPS

STEPS is JSON: a list of `["list_tools"]`, `["list_resources"]`, `["list_prompts"]`,
`["call", name, arguments]`, `["get_prompt", name, arguments]`, `["read_resource", uri]`, the
same steps `mcptape.yml` scripts. The client behind `mcptape rec` (or in front of `rec --listen`)
is how a user records a tape without mcptape's own client; each library opens the session its
own way (the SDK with `initialize`, FastMCP by probing `server/discover` first), which is the
point. `raw` is a hand-written JSON-RPC client over stdio, as small agents have: it asks what
mcptape's own client asks (`initialize` 2025-06-18, no capabilities) but always sends `params`
(`{}` where there is nothing to say). Prints one JSON line: what each step answered, as plain data, for the test to check the
session really ran. Not a product feature; a test's stand-in for a user's agent.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

TIMEOUT_S = 60


def plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump else value


async def run_sdk(transport: str, target: str, steps: list[list[Any]]) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    if transport == "stdio":
        argv = json.loads(target)
        opened = stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]))
    else:
        opened = streamable_http_client(target)
    async with opened as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        out: list[Any] = []
        for step in steps:
            op = step[0]
            if op == "list_tools":
                out.append(plain(await session.list_tools()))
            elif op == "list_resources":
                out.append(plain(await session.list_resources()))
            elif op == "list_prompts":
                out.append(plain(await session.list_prompts()))
            elif op == "call":
                out.append(plain(await session.call_tool(step[1], step[2])))
            elif op == "get_prompt":
                out.append(plain(await session.get_prompt(step[1], step[2])))
            elif op == "read_resource":
                out.append(plain(await session.read_resource(step[1])))
            else:
                raise SystemExit(f"unknown step {op}")
        return out


async def run_fastmcp(transport: str, target: str, steps: list[list[Any]]) -> list[Any]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    client: Client[Any]
    if transport == "stdio":
        argv = json.loads(target)
        client = Client(StdioTransport(command=argv[0], args=argv[1:]))
    else:
        client = Client(target)
    out: list[Any] = []
    async with client:
        for step in steps:
            op = step[0]
            if op == "list_tools":
                out.append([plain(t) for t in await client.list_tools()])
            elif op == "list_resources":
                out.append([plain(r) for r in await client.list_resources()])
            elif op == "list_prompts":
                out.append([plain(p) for p in await client.list_prompts()])
            elif op == "call":
                out.append(plain(await client.call_tool_mcp(step[1], step[2])))
            elif op == "get_prompt":
                out.append(plain(await client.get_prompt(step[1], step[2])))
            elif op == "read_resource":
                out.append([plain(c) for c in await client.read_resource(step[1])])
            else:
                raise SystemExit(f"unknown step {op}")
    return out


def run_raw(transport: str, target: str, steps: list[list[Any]]) -> list[Any]:
    import subprocess

    if transport != "stdio":
        raise SystemExit("the raw client speaks stdio only")
    argv = json.loads(target)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    next_id = 0

    def send(msg: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **msg}) + "\n").encode("utf-8"))
        proc.stdin.flush()

    def request(method: str, params: dict[str, Any]) -> Any:
        nonlocal next_id
        next_id += 1
        send({"id": next_id, "method": method, "params": params})
        while True:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"the server closed its output before answering {method}")
            msg = json.loads(line)
            if "method" in msg and "id" in msg:  # a server request: roots/list, ping, ...
                answer: dict[str, Any] = {"roots": []} if msg["method"] == "roots/list" else {}
                send({"id": msg["id"], "result": answer})
            elif msg.get("id") == next_id and "method" not in msg:
                return msg.get("result", msg.get("error"))

    request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "raw-agent", "version": "0"}})
    send({"method": "notifications/initialized", "params": {}})
    methods = {"list_tools": "tools/list", "list_resources": "resources/list", "list_prompts": "prompts/list"}
    out: list[Any] = []
    for step in steps:
        op = step[0]
        if op in methods:
            out.append(request(methods[op], {}))
        elif op == "call":
            out.append(request("tools/call", {"name": step[1], "arguments": step[2]}))
        elif op == "get_prompt":
            out.append(request("prompts/get", {"name": step[1], "arguments": step[2]}))
        elif op == "read_resource":
            out.append(request("resources/read", {"uri": step[1]}))
        else:
            raise SystemExit(f"unknown step {op}")
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:  # Node servers wait for pending server requests: end it as ci does
        proc.terminate()
        proc.wait(10)
    return out


def main() -> None:
    library, transport, target, steps = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    if library == "raw":
        out = run_raw(transport, target, steps)
    else:
        runner = run_sdk if library == "sdk" else run_fastmcp
        out = asyncio.run(asyncio.wait_for(runner(transport, target, steps), TIMEOUT_S))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
