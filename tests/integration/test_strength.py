"""The gate's strength in the gate's flow, with real processes: `ci --strength` and
`drift.min_strength` on the bundled calc example, `init`'s summary, and the shell fixture's survivor
shown to be a real blind spot (the server's real change passes the gate it names).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.conftest import FIXTURES
from tests.integration.test_init import mcptape, ok

LONGTAIL = FIXTURES / "servers" / "longtail_server.py"


def _example(tmp_path: Path) -> Path:
    project = tmp_path / "example"
    shutil.copytree(FIXTURES / "example", project)
    config = project / "mcptape.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("../servers/", f"{FIXTURES}/servers/"), encoding="utf-8")
    return project


def test_ci_strength_puts_one_line_in_the_report_summary_and_json_and_a_minimum_fails_with_3(tmp_path: Path) -> None:
    project = _example(tmp_path)
    plain = ok(mcptape(project, "ci", "--summary", "plain.md"))
    assert "gate strength" not in plain.stdout  # off by default
    proc = ok(mcptape(project, "ci", "--strength", "--summary=summary.md", "--json=report.json"))
    line = next(x for x in proc.stdout.splitlines() if x.startswith("gate strength "))
    assert "no session asks for" in line  # the example lists tools no session calls (crash, hang, ...)
    assert json.loads((project / "report.json").read_text(encoding="utf-8"))["strength"] == line
    assert line in (project / "summary.md").read_text(encoding="utf-8")
    assert "gate strength" not in (project / "plain.md").read_text(encoding="utf-8")

    config = project / "mcptape.yml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text + "drift:\n  min_strength: 100\n", encoding="utf-8")
    weak = ok(mcptape(project, "ci"), 3)  # the key alone asks for it
    assert "result: none (exit 0)" in weak.stdout  # the server did not drift: the verdict says so
    assert f"mcptape.yml:{text.count(chr(10)) + 2}: drift.min_strength: the gate's strength is " in weak.stderr


def test_init_says_the_strength_of_the_gate_it_wrote(tmp_path: Path) -> None:
    proc = ok(mcptape(tmp_path, "init", "--", sys.executable, str(LONGTAIL), "--kind", "order"))
    assert "gate strength 100%: " in proc.stdout  # a canonical order: dropping a command fails the gate


def test_the_shell_fixtures_survivor_is_a_real_blind_spot_and_a_canonical_order_closes_it(tmp_path: Path) -> None:
    project = tmp_path / "shell"
    shutil.copytree(FIXTURES / "strength" / "shell", project)
    config = project / "mcptape.yml"
    text = config.read_text(encoding="utf-8").replace("python3, ../../servers/longtail_server.py",
                                                       f"{sys.executable}, {LONGTAIL}")
    config.write_text(text, encoding="utf-8")
    ok(mcptape(project, "ci"))
    changed = text.replace("--kind, order", "--changed, --kind, order")  # `wc` is no longer allowed
    config.write_text(changed, encoding="utf-8")
    ok(mcptape(project, "ci"), 0)  # the change strength named passes the gate: a real blind spot
    # The control: the same server under `order: sorted` keeps the list in the golden, and drifts.
    config.write_text(text.replace('replace: "<COMMANDS>"', "order: sorted"), encoding="utf-8")
    ok(mcptape(project, "ci", "-u"))
    assert "survived (0)" in ok(mcptape(project, "check", "--strength")).stdout
    config.write_text(changed.replace('replace: "<COMMANDS>"', "order: sorted"), encoding="utf-8")
    ok(mcptape(project, "ci"), 1)
