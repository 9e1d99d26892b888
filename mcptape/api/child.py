"""The stdio child a client spawns for the library: `python -m mcptape.api.child DIR play|rec ARGS...`.

With stdio the client starts the server process itself (the SDK's `stdio_client`, FastMCP's
`StdioTransport`, an agent framework's), so the library cannot wait on it or read its exit code.
This wrapper runs the command as `mcptape` would (cli.main) and leaves in DIR what the library
reads once its block ends, one set of files per process (a client may open several sessions):

    PID.status.json   {"pid": PID} when it starts, {"pid": PID, "exit_code": N} when it ends
    PID.stderr        what the command said (the library logs it: it never prints)
    PID.report.json   play's report (`--json=FILE`, added here), misses and unused recordings

Knows nothing of what the files mean: serving.py reads them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def status_path(where: Path, pid: int) -> Path:
    return where / f"{pid}.status.json"


def report_path(where: Path, pid: int) -> Path:
    return where / f"{pid}.report.json"


def stderr_path(where: Path, pid: int) -> Path:
    return where / f"{pid}.stderr"


def _write_status(where: Path, pid: int, exit_code: int | None) -> None:
    status: dict[str, int] = {"pid": pid}
    if exit_code is not None:
        status["exit_code"] = exit_code
    path = status_path(where, pid)
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(status), encoding="utf-8")
    os.replace(part, path)  # whole or absent: the library may read it at any moment


def main(argv: list[str]) -> int:
    where, command = Path(argv[0]), argv[1:]
    pid = os.getpid()
    sys.stderr.flush()
    said = os.open(stderr_path(where, pid), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(said, 2)
    os.close(said)
    if command[:1] == ["play"]:  # after the tape, before any `-- CMD...` of --fallback
        command = [*command[:2], f"--json={report_path(where, pid)}", *command[2:]]
    _write_status(where, pid, None)
    from mcptape.cli import main as mcptape_main

    code = mcptape_main(command)
    sys.stdout.flush()
    sys.stderr.flush()
    _write_status(where, pid, code)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
