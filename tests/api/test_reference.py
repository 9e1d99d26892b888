"""The public surface is a record (docs/api-surface.txt) and the reference page (docs/api.md) is the
docstrings: both generated from the source by tests/api/reference.py, and a change to either that
the other does not show fails here. Regenerate after an intended change, then review the diff:

    MCPTAPE_UPDATE_API=1 python -m pytest tests/api/test_reference.py

A removed or changed line of api-surface.txt breaks users (a major release); an added one is a minor.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.api.reference import REFERENCE, SURFACE, load, reference, surface
from tests.conftest import ROOT

UPDATE = os.environ.get("MCPTAPE_UPDATE_API") == "1"
HOW = "the public surface changed: MCPTAPE_UPDATE_API=1 python -m pytest tests/api/test_reference.py, then review the diff"


def _kept(path: Path, text: str) -> str:
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    return path.read_text(encoding="utf-8")


def test_the_recorded_surface_is_the_source() -> None:
    now = "\n".join(surface()) + "\n"
    recorded = _kept(SURFACE, now)
    gone = sorted(set(recorded.splitlines()) - set(now.splitlines()))
    new = sorted(set(now.splitlines()) - set(recorded.splitlines()))
    assert (gone, new) == ([], []), HOW


def test_the_reference_page_is_the_docstrings() -> None:
    assert _kept(REFERENCE, reference()) == reference(), HOW


def test_a_changed_signature_or_docstring_shows(tmp_path: Path) -> None:
    """The control: the record sees a changed default and the page a changed docstring."""
    copy = tmp_path / "mcptape"
    shutil.copytree(ROOT / "mcptape", copy, ignore=shutil.ignore_patterns("__pycache__"))
    judging = copy / "api" / "judging.py"
    text = judging.read_text(encoding="utf-8")
    judging.write_text(text.replace("raw: bool = False", "raw: bool = True", 1)
                       .replace("Compare tape `b` with tape `a`", "Compare two tapes", 1), encoding="utf-8")
    changed = load(tmp_path)
    before, after = set(surface()), set(surface(changed))
    assert [line.split("(")[0] for line in sorted(before - after)] == ["mcptape.diff"]
    assert "raw: bool = True" in next(iter(after - before))
    assert "Compare two tapes" in reference(changed) and "Compare two tapes" not in reference()


def test_every_public_name_is_on_the_page_and_in_the_record() -> None:
    import mcptape

    page, record = REFERENCE.read_text(encoding="utf-8"), SURFACE.read_text(encoding="utf-8")
    for name in mcptape.__all__:
        if name != "__version__":
            assert f"## mcptape.{name}\n" in page, name
            assert f"mcptape.{name}(" in record or f"class mcptape.{name}(" in record, name
