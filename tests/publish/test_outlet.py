"""The outlet is total: every byte a command writes leaves through publish/outlet.py, checked first.

An AST scan of the package finds every write to a stream or a file (print, sys.stdout/stderr
writes, os.write, open for writing, write_text/write_bytes, write_atomic, argparse's printers,
a rich Console left on stdout, traceback printers) and fails on one outside the outlet and the
modules it needs (ALLOWED, each with its reason): the MCP wire rec relays and play serves is
bytes of the protocol, not output of ours, and the tape file rec streams is fed only lines the
outlet made. Then the outlet's own promises: a release leaves whole or not at all, terminal
output is checked (a token a report would print fails it), nothing is optional.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

from mcptape.errors import SecretLeak
from mcptape.publish.outlet import Outlet, say, terminal
from mcptape.redact.redactor import Redactor
from tests.conftest import ROOT

PACKAGE = ROOT / "mcptape"

# module (relative to mcptape/) or module::function -> why it may write
ALLOWED = {
    "publish/outlet.py": "the outlet",
    "tape/atomic.py": "write_atomic: the outlet's atomic file writer",
    "tape/format.py": "TapeWriter: the tape file rec streams, fed only lines the outlet made (Outlet.tape_line)",
    "record/relay.py": "the MCP wire between client and server, relayed unchanged, and the tee to rec's writer",
    "replay/stdio.py": "play's MCP wire (answers from a tape the outlet checked when it was written)",
    "tape/view.py::main": "git's textconv driver (`python -m mcptape.tape.view`, docs/github-action.md): a golden's "
                          "view on stdout; tape/ sits below the outlet",
    "config/json_schema.py::__main__": "a developer's script regenerating the shipped schema",
    "cli.py::_refuse_platform": "the one sentence on a platform mcptape does not run on, where the outlet cannot load",
    "api/child.py::_write_status": "the library's child process telling the library its pid and exit code (two "
                                   "numbers, no data): a message between processes, not a command's output",
}

_STREAMS = {"sys.stdout", "sys.stderr", "sys.stdout.buffer", "sys.stderr.buffer", "sys.__stdout__", "sys.__stderr__"}
_WRITE_CALLS = {"os.write", "os.writev", "os.sendfile", "traceback.print_exc", "traceback.print_exception",
                "traceback.print_stack"}
_WRITE_NAMES = {"print", "write_atomic"}
_WRITE_METHODS = {"write_text", "write_bytes", "print_help", "print_usage"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _mode(call: ast.Call) -> str | None:
    """The mode of an open()/fdopen() call, if written as a literal."""
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        return str(call.args[1].value)
    return None


def writes(source: str) -> list[tuple[int, str, str]]:
    """(line, function, what) of every write to a stream or a file in `source`; function is the
    enclosing def's name, `__main__` for a module's `if __name__ == "__main__":` block."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            scope = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                scope = child.name
            elif isinstance(child, ast.If) and "__name__" in ast.unparse(child.test) and "__main__" in ast.unparse(child.test):
                scope = "__main__"
            if isinstance(child, ast.Call):
                what = _write_of(child)
                if what is not None:
                    found.append((child.lineno, scope, what))
            visit(child, scope)

    visit(ast.parse(source), "<module>")
    return found


def _write_of(call: ast.Call) -> str | None:
    func = _dotted(call.func)
    if func in _WRITE_NAMES or func.split(".")[-1] == "write_atomic":
        return func
    if func in _WRITE_CALLS:
        return func
    if isinstance(call.func, ast.Attribute):
        owner = _dotted(call.func.value)
        if call.func.attr in ("write", "writelines") and owner in _STREAMS:
            return func
        if call.func.attr in _WRITE_METHODS:
            return func
        if call.func.attr == "exit" and len(call.args) >= 2:  # argparse's exit(status, message) prints
            return func
    if func.split(".")[-1] in ("open", "fdopen"):
        mode = _mode(call)
        if mode is not None and any(c in mode for c in "wax+"):
            return f"{func}(mode={mode!r})"
    if func.split(".")[-1] == "Console" and not any(kw.arg == "file" for kw in call.keywords):
        return "a rich Console on stdout"
    return None


def test_the_scan_finds_every_kind_of_write() -> None:
    """The positive control: each way to write is found, in its function."""
    source = (
        "import os, sys\n"
        "def a():\n    print('x')\n"
        "def b():\n    sys.stderr.write('x')\n    sys.stdout.buffer.write(b'x')\n"
        "def c(p):\n    open(p, 'w').write('x')\n    open(p, mode='ab')\n    open(p)\n    p.write_text('x')\n"
        "def d(fd):\n    os.write(fd, b'x')\n    write_atomic('p', b'x')\n"
        "def e(parser):\n    parser.print_help(sys.stderr)\n    Console(width=3)\n    Console(file=io.StringIO())\n"
        "if __name__ == '__main__':\n    print('y')\n"
    )
    found = [(scope, what) for _, scope, what in writes(source)]
    assert found == [
        ("a", "print"), ("b", "sys.stderr.write"), ("b", "sys.stdout.buffer.write"), ("c", "open(mode='w')"),
        ("c", "open(mode='ab')"), ("c", "p.write_text"), ("d", "os.write"), ("d", "write_atomic"),
        ("e", "parser.print_help"), ("e", "a rich Console on stdout"), ("__main__", "print"),
    ]


def test_no_module_outside_the_outlet_writes_to_a_stream_or_a_file() -> None:
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ALLOWED:
            continue
        for line, scope, what in writes(path.read_text(encoding="utf-8")):
            if f"{rel}::{scope}" not in ALLOWED:
                outside.append(f"mcptape/{rel}:{line} ({scope}): {what}")
    assert outside == [], "write through publish/outlet.py instead:\n" + "\n".join(outside)
    # Every exception is still there: an allowance for a write that went is one less place to look.
    for entry in ALLOWED:
        rel, _, scope = entry.partition("::")
        found = writes((PACKAGE / rel).read_text(encoding="utf-8"))
        assert found and (not scope or any(s == scope for _, s, _ in found)), f"{entry} no longer writes"


# --- the outlet's promises ---------------------------------------------------------------------------

TOKEN = "ghp_" + "Zq8kR4mW9xT2vB7nL5pJ3hF6dG1s0Yc2Aa3B"  # a token shape, built here


def test_a_release_writes_nothing_when_its_last_file_holds_a_secret(tmp_path: Path) -> None:
    release = Outlet(Redactor(home=None, user=None)).release()
    release.add(tmp_path / "a.tape.jsonl", b'{"mcptape":"tape"}\n', what="tape")
    release.add(tmp_path / "a.tape.view.txt", b"# view\nresult.x = \"plain\"\n", what="view", form="view")
    with pytest.raises(SecretLeak):
        release.add(tmp_path / "a.tape.timing.json", f'{{"t": "{TOKEN}"}}\n'.encode(), what="timing")
    assert list(tmp_path.iterdir()) == []  # verified, not written: the caller writes nothing after a leak
    release.write()  # the two that passed, once the caller chooses to (ci/session.py never does after a leak)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tape.jsonl", "a.tape.view.txt"]


def test_terminal_output_is_checked_and_keeps_the_users_own_paths(capsys: pytest.CaptureFixture[str]) -> None:
    outlet = terminal()
    outlet.show("/home/alice/tapes/x.tape.jsonl: 3 events\n", "ls")  # home paths stay: the user's own
    assert "/home/alice/tapes" in capsys.readouterr().out
    with pytest.raises(SecretLeak):
        outlet.show(f"a token: {TOKEN}\n", "ls")
    assert TOKEN not in capsys.readouterr().out
    buffer = io.StringIO()
    say(f"mcptape x: quoting {TOKEN}", file=buffer)  # a message is scrubbed, not refused
    assert TOKEN not in buffer.getvalue() and "<REDACTED:github-token" in buffer.getvalue()
