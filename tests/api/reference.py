"""The public surface of `import mcptape`, read from the source with griffe (statically, as a user's
documentation and type tools read it): the record semver is held to (docs/api-surface.txt, one line
per public name, member, field and signature) and the API reference page (docs/api.md, from the
docstrings). tests/api/test_reference.py keeps both equal to the source;
`MCPTAPE_UPDATE_API=1 python -m pytest tests/api/test_reference.py` rewrites them after an intended
change, and the diff of docs/api-surface.txt is what a reviewer reads: a removed or changed line
breaks users (a major release), an added one is a minor.

Which module holds each public name is mcptape/__init__.py's `_PUBLIC` (three names, replay, record
and diff, are also subpackages' names, which a static reader sees first). The models the API
returns are part of the surface with every field they reach (SessionResult, DiffResult, ...).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import griffe

from tests.conftest import ROOT

SURFACE = ROOT / "docs" / "api-surface.txt"
REFERENCE = ROOT / "docs" / "api.md"
# The models a Verdict and a RunReport reach: their fields are covered as the returned models' are.
REACHED = ("verdict.model.SessionResult", "verdict.model.DiffResult", "verdict.model.Drift", "verdict.model.Finding",
           "verdict.model.CallRef", "verdict.model.SurfaceChanges", "verdict.model.SurfaceFacts")


@functools.cache
def load(search: Path = ROOT) -> griffe.Module:
    package = griffe.load(search / "mcptape", resolve_aliases=False)
    assert isinstance(package, griffe.Module)
    return package


def public_names(package: griffe.Module) -> list[tuple[str, str]]:
    """(public name, its path under mcptape) in the order of `__all__`, from the source of `_PUBLIC`."""
    init = (Path(package.filepath)).read_text(encoding="utf-8")  # type: ignore[arg-type]
    namespace: dict[str, Any] = {}
    block = init.split("_PUBLIC = ", 1)[1].split("\n}\n", 1)[0] + "\n}"
    exec("_PUBLIC = " + block, namespace)  # noqa: S102 - our own file: the dict literal, nothing else
    return [(name, f"{module.removeprefix('mcptape.')}.{name}") for name, module in namespace["_PUBLIC"].items()]


def _annotation(value: Any) -> str:
    return str(value) if value is not None else ""


def signature(function: griffe.Function, *, drop_self: bool = False) -> str:
    parts: list[str] = []
    star = False
    params = list(function.parameters)
    if drop_self and params and params[0].name in ("self", "cls"):
        params = params[1:]
    for p in params:
        kind = p.kind.value if p.kind is not None else ""
        text = p.name
        if kind == "variadic positional":
            text, star = "*" + p.name, True
        elif kind == "variadic keyword":
            text = "**" + p.name
        elif kind == "keyword-only" and not star:
            parts.append("*")
            star = True
        if p.annotation is not None:
            text += f": {_annotation(p.annotation)}"
        if p.default is not None and kind not in ("variadic positional", "variadic keyword"):
            text += f" = {p.default}" if p.annotation is not None else f"={p.default}"
        parts.append(text)
    returns = f" -> {_annotation(function.returns)}" if function.returns is not None else ""
    return f"({', '.join(parts)}){returns}"


def _async(function: Any) -> str:
    return "async " if "async" in function.labels else ""


def _members(cls: griffe.Class) -> list[tuple[str, Any]]:
    """A class's own public members, in source order: fields and properties, then methods."""
    found = [(n, m) for n, m in cls.members.items() if not n.startswith("_") and not m.is_alias]
    return sorted(found, key=lambda item: (item[1].lineno or 0))


def member_line(owner: str, name: str, member: Any) -> str:
    if member.kind.value == "function":
        labels = sorted(member.labels - {"async"})
        label = f" [{', '.join(labels)}]" if labels else ""
        return f"{_async(member)}{owner}.{name}{signature(member, drop_self=True)}{label}"
    if member.annotation is None:  # an enum's member
        return f"{owner}.{name} = {member.value}"
    what = "property" if "property" in member.labels else "field"
    default = member.value is not None and "class-attribute" in member.labels
    value = f" = {member.value}" if default else ""
    return f"{owner}.{name}: {_annotation(member.annotation)}{value} ({what})"


def _bases(cls: griffe.Class) -> str:
    return ", ".join(str(base).removeprefix("enum.") for base in cls.bases)


def surface(package: griffe.Module | None = None) -> list[str]:
    """One line per public name and each of its own public members: the record semver is held to."""
    package = package or load()
    lines = ["__version__"]
    for name, path in [*public_names(package), *((p.rsplit(".", 1)[1], p) for p in REACHED)]:
        obj = package[path]
        qualified = f"mcptape.{name}" if not path.startswith(REACHED) else f"(reached) {name}"
        if obj.kind.value == "function":
            lines.append(f"{_async(obj)}{qualified}{signature(obj)}")
        elif obj.kind.value == "class":
            lines.append(f"class {qualified}({_bases(obj)})")
            lines += [member_line(qualified, n, m) for n, m in _members(obj)]
        else:
            lines.append(f"{qualified}: {obj.kind.value}")
    return lines


# --- the reference page ----------------------------------------------------------------------------

HEADER = """# The Python API: reference

Generated from the docstrings by tests/api/reference.py (`MCPTAPE_UPDATE_API=1 python -m pytest
tests/api/test_reference.py`); a test fails when this page and the source differ. Every example
below runs as a test (tests/api/test_docstrings.py), in a copy of the bundled example
(fixtures/example: its mcptape.yml, golden tapes and calc server). What is public and what semver
covers: the README's "The Python API"; the names and signatures, one per line: api-surface.txt.
"""


def _markdown(doc: str) -> str:
    """A docstring as markdown: prose as it is, each doctest block fenced as a Python session."""
    out: list[str] = []
    block: list[str] = []
    for line in doc.splitlines() + [""]:
        if line.startswith((">>>", "...")) or (block and line.strip()):
            block.append(line)
            continue
        if block:
            out += ["```pycon", *block, "```"]
            block = []
        out.append(line)
    text = "\n".join(out).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


def _doc(obj: Any) -> str:
    return _markdown(obj.docstring.value) if obj.docstring is not None else ""


def reference(package: griffe.Module | None = None) -> str:
    package = package or load()
    parts = [HEADER]
    names = public_names(package)
    parts.append("## Contents\n\n" + "\n".join(f"- [`mcptape.{n}`](#mcptape{n.lower()})" for n, _ in names) + "\n")
    for name, path in names:
        obj = package[path]
        if obj.kind.value == "function":
            parts.append(f"## mcptape.{name}\n\n```python\n{_async(obj)}{name}{signature(obj)}\n```\n\n{_doc(obj)}\n")
            continue
        parts.append(f"## mcptape.{name}\n\n```python\nclass {name}({_bases(obj)})\n```\n\n{_doc(obj)}\n")
        for member_name, member in _members(obj):
            line = member_line(name, member_name, member)
            parts.append(f"### {name}.{member_name}\n\n```python\n{line}\n```\n\n{_doc(member)}\n".rstrip() + "\n")
    parts.append("## Models reached through Verdict and RunReport\n\nTheir fields are covered as the "
                 "returned models' are.\n")
    for path in REACHED:
        obj = package[path]
        name = path.rsplit(".", 1)[1]
        fields = "\n".join(member_line(name, n, m) for n, m in _members(obj))
        parts.append(f"### {name}\n\n{_doc(obj)}\n\n```python\n{fields}\n```\n")
    return "\n".join(part.rstrip() + "\n" for part in parts)
