"""The review view beside each golden tape: a one-field change reads as short lines naming the tool and field.

The control in each test is the tape itself: the same change there is one changed line of over a
kilobyte. The view is derived from the tape's events only, so it is byte-stable, and the views
committed with the bundled example must be exactly what their tapes give (a stale view would
mislead a reviewer).
"""

from __future__ import annotations

import copy
import difflib
import shutil
import subprocess
import sys
from pathlib import Path

from mcptape.tape.format import tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.tape.view import VIEW_SUFFIX, render_view, view_path
from tests.conftest import ROOT, mcptape_command, user_env

EXAMPLE = ROOT / "fixtures" / "example"


def _changed(a: bytes, b: bytes) -> list[str]:
    diff = difflib.unified_diff(a.decode().splitlines(), b.decode().splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def _with_required_c(events: list[dict]) -> list[dict]:
    events = copy.deepcopy(events)
    for ev in events:
        if ev.get("kind") == "response" and ev.get("method") == "tools/list":
            add = next(t for t in ev["msg"]["result"]["tools"] if t["name"] == "add")
            add["inputSchema"]["properties"]["c"] = {"type": "number"}
            add["inputSchema"]["required"].append("c")
    return events


def test_a_new_required_property_is_three_short_lines_naming_the_tool_and_field() -> None:
    golden = read_tape(EXAMPLE / "tapes" / "surface.tape.jsonl")
    changed = _with_required_c(golden.events)
    view_diff = _changed(render_view(golden.header, golden.events), render_view(golden.header, changed))
    assert view_diff == [
        '-result.tools[add].inputSchema.required = ["a","b"]',
        '+result.tools[add].inputSchema.properties.c.type = "number"',
        '+result.tools[add].inputSchema.required = ["a","b","c"]',
    ]
    # The control: in the tape the same change is one whole changed line of over a kilobyte.
    tape_diff = _changed(tape_bytes(golden.header, golden.events), tape_bytes(golden.header, changed))
    assert max(len(line) for line in tape_diff) > 1000


def test_the_view_is_byte_stable_and_the_committed_views_match_their_tapes() -> None:
    tapes = sorted((EXAMPLE / "tapes").glob("*.tape.jsonl"))
    assert tapes
    for tape in tapes:
        t = read_tape(tape)
        view = render_view(t.header, t.events)
        assert view == render_view(t.header, copy.deepcopy(t.events))
        assert view_path(tape).read_bytes() == view, f"{view_path(tape).name} is stale: run mcptape ci --update-golden"
        # The textconv form prints the same bytes.
        proc = subprocess.run([sys.executable, "-m", "mcptape.tape.view", str(tape)], capture_output=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout == view


def test_view_of_a_file_that_is_not_a_tape_is_exit_3(tmp_path: Path) -> None:
    bad = tmp_path / "x.tape.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mcptape.tape.view", str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr and str(bad) in proc.stderr


def test_update_golden_writes_each_view_beside_its_tape_and_in_the_out_dir(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws / "example", ignore=shutil.ignore_patterns("demo.py", "__pycache__", "*" + VIEW_SUFFIX))
    shutil.copytree(ROOT / "fixtures" / "servers", ws / "servers", ignore=shutil.ignore_patterns("__pycache__"))
    tapes = ws / "example" / "tapes"

    def ci(*args: str, variant: str = "identical") -> subprocess.CompletedProcess[str]:
        return subprocess.run(mcptape_command("ci", *args), cwd=ws / "example", capture_output=True, text=True,
                              timeout=120, env=user_env(PYTHONPATH=str(ROOT), MCPTAPE_FIXTURE_VARIANT=variant))

    # Goldens from before views existed: an unchanged run gives them their views, and leaves the tapes alone.
    before = {p.name: p.read_bytes() for p in tapes.glob("*.tape.jsonl")}
    assert ci("--update-golden").returncode == 0
    assert {p.name: p.read_bytes() for p in tapes.glob("*.tape.jsonl")} == before
    views = {p.name: p.read_bytes() for p in tapes.glob("*" + VIEW_SUFFIX)}
    assert views == {p.name: (EXAMPLE / "tapes" / p.name).read_bytes() for p in tapes.glob("*" + VIEW_SUFFIX)}
    assert len(views) == 3
    # Again: nothing changes (byte-stable).
    assert ci("--update-golden").returncode == 0
    assert {p.name: p.read_bytes() for p in tapes.glob("*" + VIEW_SUFFIX)} == views

    # A real change: `add` gains a required `c`; the gate's fresh tapes come with their views.
    out = tmp_path / "fresh"
    gate = ci("--out-dir", str(out), variant="required_param")
    assert gate.returncode == 2, gate.stderr
    assert (out / ("surface" + VIEW_SUFFIX)).is_file()
    accepted = ci("--update-golden", "--session", "surface", variant="required_param")  # arithmetic now errs: no `c`
    assert accepted.returncode == 0, accepted.stderr
    new_view = (tapes / ("surface" + VIEW_SUFFIX)).read_bytes()
    assert new_view == (out / ("surface" + VIEW_SUFFIX)).read_bytes()
    diff = _changed(views["surface" + VIEW_SUFFIX], new_view)
    assert diff and all(len(line) < 200 for line in diff), diff
    assert '+result.tools[add].inputSchema.properties.c.type = "number"' in diff
