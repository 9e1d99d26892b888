"""`mcptape diff` as a user runs it, on tapes recorded from the calc fixture's drift variants.

Each variant of fixtures/servers/calc_server.py is recorded with the same scripted session
(tests/recording.py over a real pipe), written as a tape file, and diffed against the
`identical` recording by a real `python -m mcptape diff` process: verdict, exit code and
the first drifted call must be the ones the variant exists to produce.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import calc_command, mcptape_command
from tests.recording import Request, TapeBuilder, record, tool, write

SESSION: list[Request] = [
    ("tools/list", None),
    tool("add", a=2, b=3),
    tool("divide", a=1, b=0),
    ("resources/read", {"uri": "calc://constants"}),
    ("prompts/get", {"name": "explain", "arguments": {"topic": "sums"}}),
]

# variant -> (exit code, verdict, first drifted call in one line)
EXPECTED = {
    "identical": (0, "same", None),
    "changed_result": (1, "output", 'step 2 · tools/call add {"a":2,"b":3} · result.content[0].text "5" → "6" (output)'),
    "removed_tool": (2, "structural", "step 1 · tools/list · result.tools[divide] tool `divide` removed (structural)"),
    "added_tool": (2, "structural", "step 1 · tools/list · result.tools[multiply] tool `multiply` added (structural)"),
    "error_code": (2, "structural", 'step 3 · tools/call divide {"a":1,"b":0} · error.code -32602 → -32000 (structural)'),
    "error_message": (1, "output", 'step 3 · tools/call divide {"a":1,"b":0} · error.message "Division by zero" → '
                                   '"Cannot divide by zero" (output)'),
    "result_to_error": (2, "structural", 'step 2 · tools/call add {"a":2,"b":3} · result → error -32603 "add is broken" '
                                         "(structural)"),
    "optional_param": (1, "output", "step 1 · tools/list · result.tools[add].inputSchema.properties.c tool `add`: "
                                    "optional property `c` added (output)"),
    "required_param": (2, "structural", "step 1 · tools/list · result.tools[add].inputSchema.properties.c tool `add`: "
                                        "required property `c` added (structural)"),
    "description": (1, "output", 'step 1 · tools/list · result.tools[add].description tool `add`: description '
                                 '"Add two numbers." → "Return the sum of two numbers." (output)'),
}


# Side-effect variants need a sandbox snapshot around each step (live/sandbox.py, run by ci), which
# this scripted session does not take; tests/integration/test_sandbox.py covers them.
SANDBOX_VARIANTS = {"notes", "side_effect", "side_effect_changed"}
# Variants for hostile input (deep JSON, names that could act on a terminal) are recorded by
# `mcptape ci` in tests/integration/test_hostile.py.
HOSTILE_VARIANTS = {"deep", "deep_changed", "hostile_names", "hostile_html"}  # hostile_html: tests/report/test_html.py
# Variants whose drift is the surface review's (tool poisoning, a rename, a harmless rewording) are
# run through ci in tests/integration/test_surface_review_ci.py.
SURFACE_REVIEW_VARIANTS = {"poisoned", "reworded", "renamed"}


def test_every_documented_variant_is_covered() -> None:
    doc = (Path(__file__).resolve().parents[2] / "fixtures" / "servers" / "calc_server.py").read_text(encoding="utf-8")
    block = doc.split("Choose behaviour with", 1)[1].split("Fault tools", 1)[0]
    documented = {line.split()[0] for line in block.splitlines()[1:] if line.strip()}
    assert documented - SANDBOX_VARIANTS - HOSTILE_VARIANTS - SURFACE_REVIEW_VARIANTS == set(EXPECTED)


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(record(calc_command("identical"), SESSION, name="arith"),
                 tmp_path_factory.mktemp("golden") / "arith.tape.jsonl")


# diff leaves through os._exit once its output is flushed (see run_diff). With PYTHONUNBUFFERED
# set (this sandbox sets it) stdout is written through and a missing flush would go unseen; a
# user's shell or CI runner seldom sets it, so these runs do without it.
_BUFFERED_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def diff(a: Path, b: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command("diff", str(a), str(b), *extra), capture_output=True, text=True,
                          encoding="utf-8", timeout=60, cwd=Path(__file__).resolve().parents[2], env=_BUFFERED_ENV)


def diff_json(a: Path, b: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = diff(a, b, "--json", *extra)
    assert proc.stderr == ""
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_variant_verdict_exit_code_and_first_drift(variant: str, golden: Path, tmp_path: Path) -> None:
    code, verdict, first = EXPECTED[variant]
    fresh = write(record(calc_command(variant), SESSION, name="arith"), tmp_path / f"{variant}.tape.jsonl")
    rc, data = diff_json(golden, fresh)
    assert (rc, data["verdict"], data["exit_code"], data["first_drift"]) == (code, verdict, code, first)
    if code:
        # Only the drifted calls are reported (removed_tool also changes the divide call's error
        # message), each with the golden tape's line for an annotation.
        assert len(data["drifts"]) == (2 if variant == "removed_tool" else 1)
        assert data["drifts"][0]["findings"][0]["golden_line"] is not None
    # The human report says the same, on stdout.
    proc = diff(golden, fresh)
    assert proc.returncode == code
    assert (first or "no drift") in proc.stdout


def test_one_call_inserted_early_only_that_call(golden: Path, tmp_path: Path) -> None:
    session = [SESSION[0], tool("echo", text="hi"), *SESSION[1:]]
    fresh = write(record(calc_command("identical"), session), tmp_path / "inserted.tape.jsonl")
    rc, data = diff_json(golden, fresh)
    assert rc == 2
    assert [d["call"]["name"] for d in data["drifts"]] == ["echo"]
    assert data["first_drift"] == 'step 2 · tools/call echo {"text":"hi"} · call added (not in the golden tape) (structural)'


def test_parallel_calls_reordered_are_not_drift(tmp_path: Path) -> None:
    calls = [tool("add", a=n, b=n) for n in range(5)] + [tool("echo", text="x")]
    a = write(record(calc_command("identical"), calls, parallel=True), tmp_path / "a.tape.jsonl")
    b = write(record(calc_command("identical"), list(reversed(calls)), parallel=True), tmp_path / "b.tape.jsonl")
    rc, data = diff_json(a, b)
    assert (rc, data["verdict"]) == (0, "same")
    changed = write(record(calc_command("changed_result"), list(reversed(calls)), parallel=True), tmp_path / "c.tape.jsonl")
    rc, data = diff_json(a, changed)
    assert rc == 1 and len(data["drifts"]) == 5  # every add, not echo


def test_crash_mid_session_is_structural(golden: Path, tmp_path: Path) -> None:
    session = [SESSION[0], tool("crash"), *SESSION[1:]]
    fresh = write(record(calc_command("identical"), session), tmp_path / "crash.tape.jsonl")
    rc, data = diff_json(golden, fresh)
    assert rc == 2
    found = {(f["category"], f["kind"]) for d in data["drifts"] for f in d["findings"]}
    assert ("process", "crash") in found and ("call", "removed") in found
    # The headline is the crash, what a reviewer most needs (verdict/model.py: headline_priority).
    assert data["first_drift"] == "exit server crashed: exit code 0 → exit code 3 (structural)"
    assert any(d["call"] and d["call"]["method"] == "tools/call" and d["call"].get("name") == "crash"
               for d in data["drifts"])  # and the call that crashed it is named among the drifts
    # The calls the dead server never got are named as removed, after the crash.
    removed = [d["call"]["method"] for d in data["drifts"] if d["findings"][0]["kind"] == "removed"]
    assert removed == ["tools/call", "tools/call", "resources/read", "prompts/get"]


def test_unreadable_tape_exits_3(golden: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tape.jsonl"
    bad.write_text('{"not": "a tape"}\n', encoding="utf-8")
    proc = diff(golden, bad)
    assert proc.returncode == 3
    assert "not an mcptape tape" in proc.stderr and str(bad) in proc.stderr
    missing = diff(golden, tmp_path / "missing.tape.jsonl")
    assert missing.returncode == 3 and "cannot read tape" in missing.stderr


def test_conformance_is_opt_in_and_names_the_broken_field(tmp_path: Path) -> None:

    tape = TapeBuilder().tool("t", {}, result={"content": [{"type": "text", "text": 5}]}).tape()
    clean = TapeBuilder().tool("t", {}, result={"content": [{"type": "text", "text": "5"}]}).tape()
    a, b = write(clean, tmp_path / "a.tape.jsonl"), write(tape, tmp_path / "b.tape.jsonl")
    assert diff(b, b).returncode == 0
    proc = diff(a, b, "--conformance")
    assert proc.returncode == 2 and "result.content[0].text" in proc.stdout
    # A violation the golden tape has too is known (issue 18: a baseline), reported without failing.
    known = diff(b, b, "--conformance")
    assert known.returncode == 0 and "known: " in known.stdout, known.stdout


def test_a_fresh_tape_sharing_most_lines_reads_the_same(golden: Path, tmp_path: Path) -> None:
    # diff reads the fresh tape reusing the golden's parsed events for identical lines; a fresh
    # tape cut short, or with a line that is not JSON, is still read (or refused) as read_tape does.
    # (Each is made by editing a sealed tape: read with --allow-edited, which tests/tape/test_seal.py checks.)
    text = golden.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    cut = tmp_path / "cut.tape.jsonl"
    cut.write_text("".join(lines[:-1]), encoding="utf-8")  # no footer: the recorder died
    rc, data = diff_json(golden, cut, "--allow-edited")
    assert rc == 2 and ("process", "crash") in {(f["category"], f["kind"]) for d in data["drifts"] for f in d["findings"]}
    corrupt = tmp_path / "corrupt.tape.jsonl"
    corrupt.write_text("".join(lines[:3]) + "{not json\n" + "".join(lines[3:]), encoding="utf-8")
    proc = diff(golden, corrupt, "--allow-edited")
    assert proc.returncode == 3 and f"{corrupt}:4: line is not a JSON object" in proc.stderr
    same = tmp_path / "same.tape.jsonl"
    same.write_text(text, encoding="utf-8")
    assert diff_json(golden, same)[1]["verdict"] == "same"
    # Positive control: the same lines but one, whose answer changed, is read as that line.
    [add_line] = [n for n, line in enumerate(lines) if '"text":"5"' in line]
    changed = tmp_path / "changed.tape.jsonl"
    changed.write_text("".join(lines[:add_line]) + lines[add_line].replace('"text":"5"', '"text":"6"')
                       + "".join(lines[add_line + 1:]), encoding="utf-8")
    rc, data = diff_json(golden, changed, "--allow-edited")
    assert (rc, data["first_drift"]) == (1, EXPECTED["changed_result"][2])
