"""The documents the code cites are in the repository: the contract (docs/design.md), how we work
(CONTRIBUTING.md) and the rest of docs/. A citation of a file the repository lacks (as the code once
cited DESIGN.md and STYLE.md, which lived outside it) fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A document named in prose: a path ending in .md, upper-case names included (CONTRIBUTING.md).
CITATION = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b")


def cited_documents(text: str) -> set[str]:
    return set(CITATION.findall(text))


def missing_citations(root: Path) -> list[str]:
    """`file: document` for every document the package's code cites that `root` does not hold."""
    missing = []
    for path in sorted((root / "mcptape").rglob("*.py")):
        for document in sorted(cited_documents(path.read_text(encoding="utf-8"))):
            if not ((root / document).is_file() or (root / "docs" / document).is_file()):
                missing.append(f"{path.relative_to(root)}: {document}")
    return missing


def test_every_document_the_code_cites_is_in_the_repository() -> None:
    assert missing_citations(ROOT) == []
    # What the package cites today, so the check above is not vacuous.
    cited = set().union(*(cited_documents(p.read_text(encoding="utf-8")) for p in (ROOT / "mcptape").rglob("*.py")))
    assert {"docs/design.md", "CONTRIBUTING.md"} <= cited


def test_the_check_sees_a_citation_of_a_document_that_is_not_there(tmp_path: Path) -> None:
    (tmp_path / "mcptape").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("# contract\n", encoding="utf-8")
    (tmp_path / "mcptape" / "errors.py").write_text(
        '"""Exit codes of docs/design.md, as DESIGN.md said, written the STYLE.md way."""\n', encoding="utf-8")
    assert missing_citations(tmp_path) == ["mcptape/errors.py: DESIGN.md", "mcptape/errors.py: STYLE.md"]


def test_the_contract_names_every_command_and_exit_code() -> None:
    """docs/design.md is the contract in its current truth: every command cli.py dispatches, and
    every exit code errors.py defines, is in it."""
    from mcptape import errors
    from mcptape.cli import COMMANDS

    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert [name for name in COMMANDS if f"mcptape {name}" not in design] == []
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert [code for code in sorted(codes) if f"\n| {code} |" not in design] == []
