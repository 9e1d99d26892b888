"""Terminal reports: what a reviewer reads (content, not styling), and `mcptape ls` / `show` as processes."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from mcptape.diff.compare import diff_tapes
from mcptape.report.terminal import make_console, render_diff, render_run
from mcptape.verdict.model import RunReport, SessionResult
from tests.conftest import ROOT, mcptape_command
from tests.recording import ADD, TapeBuilder, write


def rendered(fn, *args, **kw) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    fn(*args, make_console(buf), **kw)
    return buf.getvalue()


def tapes(text: str = "6", tools: list | None = None):  # type: ignore[no-untyped-def]
    g = TapeBuilder().call("tools/list", None, {"tools": [ADD, dict(ADD, name="divide")]}) \
        .tool("add", {"a": 2, "b": 3}, "5").tape()
    f = TapeBuilder().call("tools/list", None, {"tools": tools if tools is not None else [ADD, dict(ADD, name="divide")]}) \
        .tool("add", {"a": 2, "b": 3}, text).tape()
    return g, f


def test_render_diff_leads_with_the_first_drifted_call_in_one_line() -> None:
    result = diff_tapes(*tapes("6"))
    out = rendered(render_diff, result)
    lines = out.splitlines()
    assert lines[0].startswith("output drift")
    assert lines[1].strip() == 'step 2 · tools/call add {"a":2,"b":3} · result.content[0].text "5" → "6" (output)'
    assert "tool surface" not in out  # no table when the tools did not change
    # Details give the place in both tapes and the values.
    assert "golden:8 fresh:8" in out and "result.changed" in out


def test_render_diff_shows_the_surface_table_when_tools_changed() -> None:
    result = diff_tapes(*tapes("5", tools=[dict(ADD, description="Sum.")]))
    out = rendered(render_diff, result)
    assert out.splitlines()[0].startswith("structural drift")
    assert "tool surface" in out
    header = next(line for line in out.splitlines() if "Added" in line)
    for column in ("Added", "Removed", "Breaking", "Compatible", "Cosmetic"):
        assert column in header
    row = next(line for line in out.splitlines() if "divide" in line and "│" in line)
    # divide sits under Removed, add under Cosmetic
    assert row.index("divide") < header.index("Breaking")
    add_row = next(line for line in out.splitlines() if " add " in line and "│" in line)
    assert add_row.index("add") > header.index("Compatible") + len("Compatible")


def test_render_diff_same_and_markup_in_tape_text_is_literal() -> None:
    g, f = tapes("5")
    assert "no drift" in rendered(render_diff, diff_tapes(g, f))
    out = rendered(render_diff, diff_tapes(*tapes("[red]boom[/red]")))
    assert '"5" → "[red]boom[/red]"' in out


def test_render_run_one_line_per_session_then_details() -> None:
    drifted = diff_tapes(*tapes("6"))
    report = RunReport(
        config="mcptape.yml",
        sessions=[
            SessionResult("arith", "output", diff=drifted, golden="tapes/arith.tape.jsonl"),
            SessionResult("clock", "same", diff=diff_tapes(*tapes("5"))),
            SessionResult("broken", "error", error="server failed to start: nope"),
        ],
        orphans=["tapes/old.tape.jsonl"],
    )
    out = rendered(render_run, report)
    table_rows = [line for line in out.splitlines() if "│" in line]
    assert any("output" in r and "arith" in r and 'tools/call add {"a":2,"b":3}' in r for r in table_rows)
    assert any("same" in r and "clock" in r and "no drift" in r for r in table_rows)
    assert any("error" in r and "broken" in r and "server failed to start" in r for r in table_rows)
    # Details of the drifted session name it with the one-line first drift.
    assert 'arith · step 2 · tools/call add {"a":2,"b":3} · result.content[0].text "5" → "6" (output)' in out
    assert "tapes/old.tape.jsonl" in out
    assert "result: error (exit 3)" in out


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command(*args), capture_output=True, text=True, encoding="utf-8", timeout=60, cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})


@pytest.fixture
def tape_dir(tmp_path: Path) -> Path:
    g, _ = tapes()
    write(g, tmp_path / "arith.tape.jsonl")
    cut = tmp_path / "sub" / "cut.tape.jsonl"
    cut.parent.mkdir()
    data = (tmp_path / "arith.tape.jsonl").read_bytes()
    cut.write_bytes(data.rsplit(b"\n", 2)[0] + b"\n")  # drop the footer: a recorder that died
    (tmp_path / "notes.txt").write_text("not a tape", encoding="utf-8")
    return tmp_path


def test_ls_lists_tapes_with_counts_and_completeness(tape_dir: Path) -> None:
    proc = run("ls", str(tape_dir))
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if ".tape.jsonl" in line]
    assert len(rows) == 2
    full = next(r for r in rows if "arith.tape.jsonl" in r)
    cut = next(r for r in rows if "cut.tape.jsonl" in r)
    assert " 8 " in full and " 3 " in full and "2025-06-18" in full and "yes" in full
    assert "no (cut short)" in cut
    assert "notes.txt" not in proc.stdout


def test_ls_lists_the_rest_when_a_tape_goes_away_between_finding_and_reading_it(tape_dir: Path) -> None:
    # A dangling link is a tape found and then not there to read, as one another job removes mid-scan.
    (tape_dir / "gone.tape.jsonl").symlink_to(tape_dir / "removed.tape.jsonl")
    (tape_dir / "sub" / "loop").symlink_to(tape_dir)  # a link cycle: each folder is listed once
    proc = subprocess.run(mcptape_command("ls"), capture_output=True, text=True, encoding="utf-8", timeout=60,
                          cwd=tape_dir, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if ".tape.jsonl" in line]
    assert len(rows) == 3, proc.stdout
    assert any("arith.tape.jsonl" in r and "yes" in r for r in rows)
    assert any("gone.tape.jsonl" in r and "unreadable" in r and "No such file" in r for r in rows)


def test_show_lists_every_message(tape_dir: Path) -> None:
    proc = run("show", str(tape_dir / "arith.tape.jsonl"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "complete" in out and "8 events" in out
    rows = [line for line in out.splitlines() if "│" in line and ("c2s" in line or "s2c" in line or "exit" in line)]
    assert len(rows) == 8
    assert any("tools/call" in r and 'add {"a":2,"b":3}' in r and "c2s" in r for r in rows)
    assert any("response" in r and " 5 " in r for r in rows)
    assert "exit code 0" in out


def test_show_full_does_not_shorten(tmp_path: Path) -> None:
    long_text = "x" * 300 + "END"
    g = TapeBuilder().tool("echo", {"text": long_text}, long_text).tape()
    path = write(g, tmp_path / "long.tape.jsonl")
    short = run("show", str(path))
    assert "END" not in short.stdout and "(303 chars)" in short.stdout
    full = run("show", str(path), "--full")
    assert "END" in full.stdout.replace("\n", "").replace("│", "").replace(" ", "")


def test_show_unreadable_tape_exits_3(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tape.jsonl"
    bad.write_text("garbage\n", encoding="utf-8")
    proc = run("show", str(bad))
    assert proc.returncode == 3 and "not an mcptape tape" in proc.stderr


def test_run_report_says_how_many_values_of_which_kind_were_redacted() -> None:
    import io

    from mcptape.report.markdown import render_summary
    from mcptape.report.terminal import make_console, render_run
    from mcptape.verdict.model import RunReport, SessionResult

    report = RunReport(
        config="mcptape.yml",
        sessions=[
            SessionResult(name="a", verdict="same", redactions={"github-token": 2}),
            SessionResult(name="b", verdict="same", redactions={"env.CALC_TOKEN": 1, "github-token": 1}),
        ],
    )
    buffer = io.StringIO()
    render_run(report, make_console(buffer))
    expected = "4 secret values redacted: 1 env.CALC_TOKEN, 3 github-token"
    assert expected in buffer.getvalue()
    assert expected in render_summary(report)
    assert RunReport(config="x", sessions=[SessionResult(name="a", verdict="same")]).redaction_summary() is None


def test_render_diff_names_the_tapes_only_when_it_has_their_paths() -> None:
    result = diff_tapes(*tapes("6"))
    result.a = result.b = None  # tapes without a path or a name (a report read back, a tape in memory)
    assert "None" not in rendered(render_diff, result)  # no `golden None → fresh None`
    result.a, result.b = "tapes/g.tape.jsonl", "fresh/g.tape.jsonl"
    assert "golden tapes/g.tape.jsonl → fresh fresh/g.tape.jsonl" in rendered(render_diff, result)
