"""The README's "The Python API" example runs as written, from the root of a fresh clone (its
fixtures: the bundled example's tapes and config, the calc server), and prints what it says."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, ROOT, user_env


def readme_example() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## The Python API\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    for folder in ("example", "servers"):
        shutil.copytree(FIXTURES / folder, tmp_path / "fixtures" / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "agent", "frameworks"))
    (tmp_path / "example.py").write_text(readme_example(), encoding="utf-8")
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=user_env(), capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    unused, verdict = done.stdout.splitlines()
    assert unused == """['tools/call divide {"a":1,"b":0} (tape line 9)', 'tools/call echo {"text":"hello, tape"} (tape line 11)']"""
    assert verdict.startswith("structural step 2 · tools/call divide")
    assert (tmp_path / "calc.tape.jsonl").exists()
