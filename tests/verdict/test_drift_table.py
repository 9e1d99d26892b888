"""The drift table (mcptape/verdict/vocabulary.py) is the one home of every finding kind: each row has
every column, every finding the code builds is a row's at a severity the row allows, and what names,
renders or redacts a finding reads the row (issue 39, item 3)."""

from __future__ import annotations

import ast
from pathlib import Path
from string import Formatter
from typing import get_args

import pytest

from mcptape.redact.own_text import own_text
from mcptape.report.markdown import _places, in_words
from mcptape.verdict.model import CallRef, Drift, Finding
from mcptape.verdict.vocabulary import (
    DEFAULT_PHRASE,
    DRIFT_TABLE,
    FINDING_KINDS,
    RANK_CLIENT,
    RANK_PROTOCOL,
    SECURITY_KINDS,
    DriftKind,
    Severity,
    drift_classes,
)

PACKAGE = Path(__file__).resolve().parents[2] / "mcptape"
SEVERITIES = set(get_args(Severity))
PLACES = set(_places(Drift(None, [Finding("result", "output", "", "x")])))


def missing_columns(row: DriftKind) -> list[str]:
    """The columns of a row that are empty or out of their range."""
    out = [name for name in ("category", "kind", "meaning") if not getattr(row, name).strip()]
    if row.severity not in SEVERITIES:
        out.append("severity")
    if not RANK_PROTOCOL <= row.rank <= RANK_CLIENT:
        out.append("rank")
    if not row.phrases or any(not p.strip() for p in row.phrases):
        out.append("phrases")
    unknown = {name for p in row.phrases for _, name, _, _ in Formatter().parse(p) if name} - PLACES
    if unknown:
        out.append(f"phrases (unknown places {sorted(unknown)})")
    if not set(row.may_be) <= SEVERITIES - {row.severity}:
        out.append("may_be")
    return out


def test_every_row_has_every_column() -> None:
    assert {row.name: missing_columns(row) for row in DRIFT_TABLE.values() if missing_columns(row)} == {}
    # not vacuous: a row without a meaning, with an unknown place or a severity that is no severity is caught
    assert missing_columns(DriftKind("result", "x", "output", 3, "")) == ["meaning"]
    assert missing_columns(DriftKind("result", "x", "output", 3, "m", ("{nowhere}",))) == ["phrases (unknown places ['nowhere'])"]
    assert missing_columns(DriftKind("result", "x", "bad", 9, "m", may_be=("nope",))) == ["severity", "rank", "may_be"]  # type: ignore[arg-type]


def test_the_names_fail_on_accepts_and_the_security_rules_are_the_tables() -> None:
    assert drift_classes() == [n for c, kinds in FINDING_KINDS.items() for n in (c, *(f"{c}.{k}" for k in kinds))]
    assert {(c, k) for c, kinds in FINDING_KINDS.items() for k in kinds} == set(DRIFT_TABLE)
    assert {k: row.meaning for (c, k), row in DRIFT_TABLE.items() if c == "security"} == SECURITY_KINDS


def built_findings() -> list[tuple[str, ast.Call, bool]]:
    """(file:line, call, direct) for every finding the package builds: `Finding.of(...)`, a pair's
    `.found(...)`, and `Finding(...)` itself (direct: only the model may, reading a report back)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
            if isinstance(f, ast.Name) and f.id == "Finding":
                out.append((where, node, True))
            elif isinstance(f, ast.Attribute) and (f.attr == "found" or (
                    f.attr == "of" and isinstance(f.value, ast.Name) and f.value.id == "Finding")):
                out.append((where, node, False))
    return out


def off_table(found: list[tuple[str, ast.Call, bool]]) -> list[str]:
    """The places that build a finding the table does not hold, or at a severity its row does not allow."""
    def literal(node: ast.expr | None) -> str | None:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    bad = []
    for where, call, direct in found:
        if direct:
            if not where.startswith("verdict/model.py"):
                bad.append(f"{where}: Finding(...) built directly: use Finding.of (the table's severity)")
            continue
        category, kind = (literal(a) for a in (call.args + [None, None])[:2])  # type: ignore[operator]
        severity = literal(next((k.value for k in call.keywords if k.arg == "severity"), None))
        if category is None or kind is None:
            continue  # a kind from a variable: Finding.of checks it when it runs
        row = DRIFT_TABLE.get((category, kind))
        if row is None:
            bad.append(f"{where}: {category}.{kind} is no row of the drift table")
        elif severity is not None and severity not in (row.severity, *row.may_be):
            bad.append(f"{where}: {category}.{kind} at {severity}, the table allows {row.severity} {row.may_be}")
    return bad


def test_every_finding_the_code_builds_is_a_row_of_the_table() -> None:
    found = built_findings()
    assert len(found) >= 60  # the scan sees the checks, not nothing
    assert off_table(found) == []
    # not vacuous: a class the table lacks, a severity it does not allow, a direct construction
    fake = ast.parse('Finding.of("result", "vanished", "", "m")\npair.found("process", "crash", "", "m", severity="info")\n'
                     'Finding("result", "output", "", "m")').body
    calls = [(f"x.py:{i}", stmt.value, i == 2) for i, stmt in enumerate(fake) if isinstance(stmt, ast.Expr)
             and isinstance(stmt.value, ast.Call)]
    assert len(off_table(calls)) == 3


def test_finding_of_takes_the_tables_severity_and_refuses_one_it_does_not_allow() -> None:
    assert Finding.of("schema", "breaking", "p", "m").severity == "structural"
    assert Finding.of("notification", "added", "p", "m", severity="info").severity == "info"  # a may_be
    with pytest.raises(ValueError, match="process.crash is structural"):
        Finding.of("process", "crash", "", "m", severity="info")
    with pytest.raises(KeyError):
        Finding.of("result", "vanished", "", "m")


@pytest.mark.parametrize("key", sorted(DRIFT_TABLE), ids=lambda k: ".".join(k))
def test_every_row_reads_in_words_and_its_words_are_mcptapes_own(key: tuple[str, str]) -> None:
    row = DRIFT_TABLE[key]
    drift = Drift(CallRef("tools/call", "add", {"a": 1}), [Finding.of(row.category, row.kind, "result.x", "a → b", 1, 2)])
    line = in_words(drift)
    assert line and "{" not in line  # every place filled
    assert own_text(row.category) and own_text(row.kind)  # the redactor never takes a kind's name for a secret
    words = {w for p in (row.meaning, *row.phrases) for w in p.replace("{", " {").split() if not w.startswith("{")}
    assert [w for w in words if w.strip("`()[],.:;") and not own_text(w.strip("`()[],.:;"))] == []


def test_a_phrase_is_picked_by_the_places_the_finding_fills() -> None:
    call = CallRef("tools/call", "add", {"a": 2, "b": 3})
    required = Finding.of("schema", "breaking", "result.tools[add].inputSchema.properties.c", "`c` is now required")
    assert in_words(Drift(call, [required])) == "` add ` now requires ` c `: calls without it break"
    other = Finding.of("schema", "breaking", "result.tools[add].inputSchema.type", "type narrowed")
    assert in_words(Drift(call, [other])) == "` type narrowed `: calls written against the golden schema may break"
    assert in_words(Drift(call, [Finding.of("result", "added", "result.y", "added 1")])) == \
        DEFAULT_PHRASE.format(call="` add(a=2, b=3) `", detail="` result.y added 1 `")
