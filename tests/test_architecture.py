"""The package's shape, checked: no import cycles, no module taking another's private names, no
layer importing one above it, imports at module level but where a heavy import must stay off a
light path. Run `python tests/test_architecture.py` to print the import graph.

Layers, lowest first: a module may import modules of its own layer or of a lower one. Within a
layer the graph must still be acyclic.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mcptape"

DOC = ROOT / "docs" / "architecture.md"


def read_layers(doc: str) -> list[tuple[str, tuple[str, ...]]]:
    """The layer table of docs/architecture.md (its first table), lowest first: the one home of the
    layers, which this test reads. `tape/` names the package mcptape.tape, `report/model` a module."""
    table = doc.split("| layer | modules | what they own |\n|---|---|---|\n", 1)[1].split("\n\n", 1)[0]
    layers = []
    for row in table.strip().splitlines():
        name, modules, _ = (cell.strip() for cell in row.strip("|").split(" | ", 2))
        layers.append((name, tuple("mcptape." + m.strip("` ").rstrip("/").replace("/", ".") for m in modules.split(","))))
    return layers


LAYERS: list[tuple[str, tuple[str, ...]]] = read_layers(DOC.read_text(encoding="utf-8"))

# Imports that stay inside a function, and why: each keeps a heavy import off a path that must
# start fast (`mcptape --version`, `mcptape play`, `mcptape diff --json -`) or that most runs never take.
LAZY = {
    ("mcptape.cli", "mcptape.publish.outlet"): "only an error message pays for the redactor (~15 ms)",
    ("mcptape.cli", "traceback"): "only MCPTAPE_DEBUG=1 prints a traceback",
    ("mcptape.commands.diff", "mcptape.config.load"): "pydantic, for `diff -c mcptape.yml` only",
    ("mcptape.commands.diff", "mcptape.report.terminal"): "rich, for the terminal report only (not --json -)",
    ("mcptape.commands.play", "mcptape.replay.http"): "http.server and the HTTP framing, for --listen only",
    ("mcptape.commands.rec", "mcptape.record.http"): "httpx, for --listen only",
    ("mcptape.publish.outlet", "mcptape.report.terminal"): "rich, for a terminal report only (Outlet.report): off play's and rec's paths",
    ("mcptape.transports.oauth", "jwt"): "PyJWT, for an `auth:` private key's client assertion only",
    ("mcptape.transports.oauth", "cryptography.hazmat.primitives.asymmetric"): "the key's kind, for a private key only",
    ("mcptape.transports.oauth", "cryptography.hazmat.primitives.serialization"): "the key's kind, for a private key only",
    ("mcptape.conformance.gate", "mcptape.conformance.check"): "mcp-types, imported by ci's main thread while the servers start",
    ("mcptape.commands.diff", "mcptape.conformance.gate"): "pydantic and mcp-types, for diff --conformance only",
    ("mcptape.commands.diff", "mcptape.report.html"): "jinja2 and rich, for diff --html only",
    ("mcptape.commands.diff", "mcptape.publish.outlet"): "the redactor that checks the page, for diff --html only",
    ("mcptape.publish.github", "ghapi.core"): "ghapi, only when a comment is posted",
    ("mcptape.publish.github", "ghapi.page"): "ghapi, only when a comment is posted",
    ("mcptape.publish.github", "httpx2"): "ghapi's client, only when a comment is posted",
    ("mcptape.publish.github", "fasttransport.errors"): "ghapi's transport, only when a comment is posted",
    ("mcptape.publish.outlet", "mcptape.redact.policy"): "the known secrets of an error message, only when one is printed",
    ("mcptape.redact.rules", "betterleaks"): "the rule set's Go runtime: loaded on first use, never before rec forks",
    ("mcptape.logsafe", "secrets"): "only in a GitHub job, and logsafe is on the path of --version",
    ("mcptape.logsafe", "unicodedata"): "only for a joiner or selector in text (an emoji's?): logsafe is on --version's path",
    ("mcptape.replay.nearmiss", "mcptape.redact.redactor"): "only a miss pays for the redactor (play's start-up)",
    ("mcptape.commands.play", "mcptape.replay.fallback"): "subprocess and the tape writer, for --fallback only",
    ("mcptape.commands.play", "mcptape.replay.faults"): "random (and its hashing), for --fault only",
    ("mcptape.replay.fallback", "mcptape.transports.http"): "httpx, for --fallback-url only",
    ("mcptape.pytest_plugin", "mcp"): "the official SDK, only when a test asks stdio_parameters()",
    ("mcptape.pytest_plugin", "mcptape.api.serving"): "the library, only when a test uses the mcptape_server fixture",
    ("mcptape.api.child", "mcptape.cli"): "the command line, in the stdio child only (serving.py reads its file names)",
    ("mcptape.api.endpoint", "mcp"): "the official SDK: the library's client side only, and mcptape does not depend on it",
    ("mcptape.api.endpoint", "mcp.client.session_group"): "the SDK's parameter objects, when asked for",
    ("mcptape.api.endpoint", "mcp.client.stdio"): "the SDK's stdio client, for client_session() over stdio only",
    ("mcptape.api.endpoint", "mcp.client.streamable_http"): "the SDK's HTTP client, for client_session() over HTTP only",
    ("mcptape.api.endpoint", "mcptape.api.sdk_streams"): "anyio and the SDK's streams, for in-memory replays only",
    ("mcptape.api.serving", "mcptape.record.http"): "httpx, for HTTP recordings only",
    ("mcptape.api.serving", "mcptape.replay.http"): "http.server and the HTTP framing, for HTTP replays only",
    ("mcptape.pytest_plugin", "mcptape.environment"): "the plugin loads in every pytest run: no mcptape module until a test asks",
    ("mcptape.replay.matching", "mcptape.volatility.normalize"): "the JSON path evaluator (dataclasses), for --ignore-arg only",
    ("mcptape.commands.play", "mcptape.publish.telemetry"): "the trace export, for --otel only",
    ("mcptape.commands.run_report", "mcptape.report.html"): "jinja2, for ci/merge --html only",
    ("mcptape.live.launch", "mcptape.transports.http"): "httpx, for a `url:` server only (most runs start stdio servers)",
    ("mcptape.live.launch", "mcptape.transports.oauth"): "the OAuth client (httpx, PyJWT), for a `url:` server only",
    **{("mcptape.publish.telemetry", m): "the otel extra (OpenTelemetry SDK, OTLP exporter), only under --otel"
       for m in ("opentelemetry", "opentelemetry.trace", "opentelemetry.trace.propagation.tracecontext",
                 "opentelemetry.sdk.resources", "opentelemetry.sdk.trace", "opentelemetry.sdk.trace.export",
                 "opentelemetry.exporter.otlp.proto.http.trace_exporter")},
}


@functools.cache
def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


@functools.cache
def imports() -> list[tuple[str, str, str | None, bool]]:
    """(importer, imported module, imported name or None, at module level) for every import in the package."""
    mods = modules()
    out: list[tuple[str, str, str | None, bool]] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        top = {id(statement) for statement in tree.body}
        for statement in tree.body:  # `if TYPE_CHECKING:` blocks are module level
            if isinstance(statement, ast.If):
                top |= {id(child) for child in statement.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [(name, alias.name, None, id(node) in top) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    out.append((name, full if full in mods else base, alias.name, id(node) in top))
    return out


def owner(module: str) -> str:
    """The package module `module` belongs to (a submodule of mcptape, or mcptape itself)."""
    mods = modules()
    while module not in mods and "." in module:
        module = module.rpartition(".")[0]
    return module


def graph() -> dict[str, set[str]]:
    """Who imports whom. The root package is the library's door (the command line's layer): its public
    names load their modules when first asked for (PEP 562), so no module below may import it; the
    version every layer reads is the fact module `version`."""
    edges: dict[str, set[str]] = defaultdict(set)
    for importer, imported, _, _ in imports():
        if imported.startswith("mcptape") and owner(imported) != importer:
            edges[importer].add(owner(imported))
    return edges


def layer_of(module: str) -> int:
    """The layer of a module: the one whose longest prefix names it (mcptape itself: the door, the top)."""
    if module == "mcptape":
        return len(LAYERS) - 1
    best = -1
    best_len = -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    nodes = sorted(set(edges) | {w for targets in edges.values() for w in targets})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in nodes:
        if v not in index:
            visit(v)
    return found


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where the imported module sits in a higher layer."""
    return [(a, b) for a, targets in sorted(edges.items()) for b in sorted(targets) if layer_of(b) > layer_of(a)]


def private_taken(found: list[tuple[str, str, str | None, bool]]) -> list[tuple[str, str, str]]:
    """(importer, module, name) where a module imports a `_private` name of another."""
    return [(importer, imported, name) for importer, imported, name, _ in found
            if imported.startswith("mcptape") and owner(imported) != importer
            and name is not None and name.startswith("_") and not name.startswith("__")]


def test_every_module_has_a_layer() -> None:
    assert [m for m in modules() if layer_of(m) < 0] == []


def test_there_are_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_no_layer_imports_one_above_it() -> None:
    assert upward(graph()) == []


def test_no_module_takes_another_modules_private_names() -> None:
    assert private_taken(imports()) == []


def test_imports_are_at_module_level_but_where_a_heavy_one_must_stay_off_a_light_path() -> None:
    inner = sorted({(importer, imported) for importer, imported, _, top in imports() if not top})
    assert [pair for pair in inner if pair not in LAZY] == []
    assert [pair for pair in LAZY if pair not in inner] == []  # an entry nothing needs any more goes


def test_renderers_only_render_and_diff_knows_nothing_of_conformance() -> None:
    """report/ renders plain documents (the outlet scrubs them once, where they leave), and the
    conformance gate sits above diff/: neither reaches for the other's job, even lazily."""
    edges = {(importer, owner(imported)) for importer, imported, _, _ in imports()}
    assert sorted((a, b) for a, b in edges if a.startswith("mcptape.report.") and b.startswith("mcptape.redact")) == []
    assert sorted((a, b) for a, b in edges if a.startswith("mcptape.diff.") and b.startswith("mcptape.conformance")) == []
    assert sorted((a, b) for a, b in edges if a.startswith("mcptape.config.") and b.startswith("mcptape.report")) == []
    assert sorted((a, b) for a, b in edges if a.startswith("mcptape.transports.") and b.startswith("mcptape.config")) == []


LARGE_FILE_LINES = 800


def test_a_file_over_800_lines_says_why_at_its_top() -> None:
    """Issue 26: no module grows past ~800 lines unnoticed; one that must be that long says why in
    its docstring ("Over 800 lines, on purpose: ...")."""
    unexplained = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > LARGE_FILE_LINES and "Over 800 lines, on purpose:" not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(name)
    assert unexplained == []


def test_the_checks_see_a_cycle_an_upward_import_and_a_private_name() -> None:
    # The same checks on data that has each fault: they are not vacuous.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert upward({"mcptape.tape.reader": {"mcptape.ci.session"}, "mcptape.ci.session": {"mcptape.tape.reader"}}) == [
        ("mcptape.tape.reader", "mcptape.ci.session")]
    fake: list[tuple[str, str, str | None, bool]] = [("mcptape.replay.engine", "mcptape.tape.reader", "_parse_line", True),
            ("mcptape.tape.reader", "mcptape.tape.reader", "_parse_line", True), ("mcptape.cli", "mcptape", "__version__", True)]
    assert private_taken(fake) == [("mcptape.replay.engine", "mcptape.tape.reader", "_parse_line")]


# CONTRIBUTING.md (heavy imports stay off the fast paths): the paths that must start fast import none of the heavy optional packages.
HEAVY = ("rich", "ghapi", "jsonschema", "pydantic", "httpx", "betterleaks")
TAPE = ROOT / "fixtures" / "example" / "tapes" / "surface.tape.jsonl"
INITIALIZE = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
              b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')


def imported_by(*argv: str, stdin: bytes = b"") -> set[str]:
    """The top-level packages a real `python -m mcptape ARGV` process imports (-X importtime)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "mcptape", *argv], input=stdin, cwd=ROOT,
                          capture_output=True, timeout=60, check=False)
    names = set()
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_version_and_play_import_none_of_the_heavy_packages_and_diff_does() -> None:
    assert [m for m in HEAVY if m in imported_by("--version")] == []
    assert [m for m in HEAVY if m in imported_by("play", str(TAPE), stdin=INITIALIZE)] == []
    assert "rich" in imported_by("diff", str(TAPE), str(TAPE))  # the measurement sees what a command imports


if __name__ == "__main__":
    edges = graph()
    for module in sorted(modules()):
        targets = ", ".join(sorted(t.removeprefix("mcptape.") for t in edges.get(module, ())))
        print(f"{layer_of(module)} {module} -> {targets}")
    print("cycles:", cycles(edges))
    sys.exit(0)


def test_the_layers_are_the_table_of_docs_architecture_md() -> None:
    """The table is the one home of the layers: this test reads it, so a module the table leaves
    out has no layer (test_every_module_has_a_layer fails), and a table that moves a module moves it."""
    assert [name for name, _ in LAYERS] == ["facts", "formats and wires", "scrubbing", "configuration", "judging",
                                          "conformance", "renderings", "publishing", "the live side",
                                          "recording and replay", "the gate", "commands", "the command line"]
    assert "mcptape.tape" in LAYERS[1][1] and "mcptape.verdict" in LAYERS[0][1]
    doc = DOC.read_text(encoding="utf-8")
    without = read_layers(doc.replace(", `volatility/`", "", 1))
    assert "mcptape.volatility" not in {m for _, mods in without for m in mods}


# Rows of the table that may name modules at the package root: the fact modules at the bottom and the
# doors at the top. Every other layer is folders, so the folder a module sits in says its layer.
ROOT_ROWS = ("facts", "the command line")


def loose_modules(layers: list[tuple[str, tuple[str, ...]]], found: dict[str, Path]) -> list[str]:
    """Modules at the package root that the table does not name in a row that may hold them, and
    table entries outside those rows that are not folders (issue 39: the folders are the layer table)."""
    allowed = {m for name, mods in layers if name in ROOT_ROWS for m in mods}
    packages = {name for name, path in found.items() if path.name == "__init__.py"}
    loose = [m for m, path in found.items() if m.count(".") == 1 and path.parent == PACKAGE
             and path.name != "__init__.py" and m not in allowed]
    not_folders = [m for name, mods in layers if name not in ROOT_ROWS for m in mods if m not in packages]
    return sorted(loose + not_folders)


def test_the_folders_are_the_layer_table() -> None:
    assert loose_modules(LAYERS, modules()) == []
    # not vacuous: a new module at the root, or a row naming a module instead of a folder, is caught
    extra = dict(modules(), **{"mcptape.helpers": PACKAGE / "helpers.py"})
    assert loose_modules(LAYERS, extra) == ["mcptape.helpers"]
    rows = [(name, mods + ("mcptape.diff.values",)) if name == "judging" else (name, mods) for name, mods in LAYERS]
    assert loose_modules(rows, modules()) == ["mcptape.diff.values"]
    # every folder of the package is in exactly one row
    folders = sorted(m for m, path in modules().items() if path.name == "__init__.py" and m.count(".") == 1)
    named = sorted(m for _, mods in LAYERS for m in mods if m in folders)
    assert named == folders


# Bare file names two folders share, and why the folders make the difference obvious: the same job
# on another side (a transport; rec over it; play over it), or a command named after the job below it.
SHARED_NAMES = {
    "stdio.py": {"transports", "record", "replay"},
    "http.py": {"transports", "record", "replay"},
    "check.py": {"commands", "conformance"},
    "merge.py": {"commands", "ci"},
}


def test_no_two_modules_share_a_bare_name_unless_their_folders_tell_them_apart() -> None:
    by_name: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            by_name[path.name].add(path.parent.relative_to(PACKAGE).as_posix())
    assert {name: folders for name, folders in by_name.items() if len(folders) > 1} == SHARED_NAMES
