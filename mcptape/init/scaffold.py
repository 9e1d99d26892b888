"""What `mcptape init` writes for a server it has listed: example arguments and which calls are safe.

Pure functions over the JSON a server lists (a tool's `inputSchema` and `annotations`, a
prompt's `arguments`); connecting is live/client.py's, the file's text is config_file.py's, and
checking arguments against a schema is client.schema_violation's (the check `ci` makes before
every call), so what init writes is what ci accepts.

Arguments are the smallest valid value a schema suggests, in this order: `examples`/`example`,
`default`, `const`, `enum`'s first value, then a value of the type (only the required properties
of an object, `minItems` items of an array, a number inside its bounds, a string of the format
or a hint from the property's name: `path_hints`, from the server's command, first). Optional properties are left out, but a number named like a
wait (WAIT_WORDS), which gets its smallest value so that the gate stays fast. A value that is not valid is not guessed further: the call
is written commented out for the user to complete.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Words in a tool's name that say it changes something: a call named so is not run until the user
# says so, whatever its annotations claim (a wrong readOnlyHint must not delete data on the first run).
DESTRUCTIVE_WORDS = frozenset({
    "delete", "remove", "rm", "write", "create", "update", "upsert", "move", "mv", "rename", "edit",
    "reset", "drop", "truncate", "clear", "purge", "destroy", "kill", "stop", "restart", "set", "put",
    "patch", "post", "insert", "append", "save", "upload", "send", "publish", "commit", "push", "merge",
    "checkout", "apply", "install", "uninstall", "deploy", "execute", "exec", "run",
})
# Words in an unannotated tool's name that read as a question: such a tool may be probed by init (run
# once; kept only if it answered). "add" is not one: git_add is as common as add(a, b).
QUERY_WORDS = frozenset({
    "get", "list", "ls", "read", "search", "find", "query", "lookup", "describe", "count", "status", "version",
    "echo", "ping", "health", "calculate", "calc", "compute", "convert", "show", "view", "info", "stats",
    "explain", "validate", "check", "parse", "format", "current", "now", "time", "whoami", "tree", "diff", "log",
    "sum", "multiply", "divide", "subtract", "sqrt", "hello", "greet", "resolve", "inspect",
})
# Argument names that say a query-named tool changes something after all (`get_or_create(overwrite)`).
CHANGE_ARGUMENT_WORDS = frozenset({"overwrite", "force", "confirm", "content", "body", "payload", "new"})
# An optional number named like a wait is given its smallest value (1, inside its bounds) instead of
# being left to its default: a demo tool's `duration: 10` must not make every gate run 10 s longer.
WAIT_WORDS = frozenset({"duration", "delay", "sleep", "wait", "timeout", "interval", "seconds", "ms", "millis"})
MAX_DEPTH = 6  # nested schemas deeper than this get no value (a recursive $ref would never end)

# A string property's name -> a value a server of that kind accepts more often than "example".
NAME_HINTS: tuple[tuple[str, str], ...] = (
    ("timezone", "UTC"),
    ("email", "user@example.com"),
    ("url", "https://example.com"),
    ("uri", "https://example.com"),
    ("path", "."),
    ("dir", "."),
    ("language", "en"),
    ("locale", "en"),
    ("expr", "1 + 1"),  # a calculator's `expression`
)
FORMATS = {
    "date-time": "2025-01-01T00:00:00Z",
    "date": "2025-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
    "hostname": "example.com",
}
_NO_VALUE = object()
Hints = tuple[tuple[str, str], ...]  # (word in a property's name, value), tried before NAME_HINTS


def path_hints(command: Sequence[str], cwd: Path) -> Hints:
    """Hints from a server command: its first argument that is a directory (the repository or root
    the server was started on) is the likeliest value of a `path`, `repo_path` or `root`."""
    for arg in list(command)[1:]:
        if not arg.startswith("-") and arg not in (".", "/") and (cwd / arg).is_dir():
            return (("path", arg), ("dir", arg), ("repo", arg), ("root", arg))
    return ()


# Words a tool says of the files it reads -> the file types (extensions) it likely wants, most likely first.
FILE_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("spreadsheet", (".xlsx", ".xls", ".xlsm", ".ods", ".csv")),
    ("excel", (".xlsx", ".xls", ".xlsm")),
    ("workbook", (".xlsx", ".xls", ".xlsm")),
    ("xlsx", (".xlsx",)),
    ("csv", (".csv",)),
    ("pdf", (".pdf",)),
    ("docx", (".docx",)),
    ("word document", (".docx", ".doc")),
    ("powerpoint", (".pptx",)),
    ("pptx", (".pptx",)),
    ("sqlite", (".db", ".sqlite", ".sqlite3")),
    ("image", (".png", ".jpg", ".jpeg", ".gif", ".webp")),
    ("html", (".html", ".htm")),
    ("markdown", (".md",)),
)
# Directories never searched for an example file: tools, caches, and mcptape's own golden tapes.
_NOT_DATA = frozenset({"node_modules", "__pycache__", "venv", "tapes", "dist", "build", "target", "site-packages"})
_FILE_URI = re.compile(r"\bfile:")  # "a resource described by an http:, https:, file: or data: URI"
MAX_FILES_SEEN = 2000  # a root with more entries than this is not walked further
MAX_FILE_DEPTH = 3  # the root and two levels of directories under it


def file_types(tool: Mapping[str, Any]) -> tuple[str, ...]:
    """The extensions of the files a tool reads, as its name and descriptions say ("Read data from an
    Excel workbook": .xlsx ...), most likely first; () when they name no type."""
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    texts = [str(tool.get("name") or ""), str(tool.get("description") or "")]
    texts += [str(p.get("description") or "") for p in (properties or {}).values() if isinstance(p, dict)]
    words = " ".join(" ".join(_words(t)) for t in texts)
    out: list[str] = []
    for word, extensions in FILE_TYPES:
        if re.search(rf"\b{word}s?\b", words):
            out += [e for e in extensions if e not in out]
    return tuple(out)


def example_file(root: Path, extensions: Sequence[str] = ()) -> Path | None:
    """A file under `root` (relative to it) to give a tool that reads files: of the first of `extensions`
    found (a spreadsheet reader gets a spreadsheet), else, with no extensions asked, a README first.
    Hidden files and tool directories (_NOT_DATA) are skipped; the shallowest, then first by name, wins."""
    found: list[Path] = []
    level = [Path()]
    for _ in range(MAX_FILE_DEPTH):  # breadth first, so a big tree costs at most MAX_FILES_SEEN entries
        deeper: list[Path] = []
        for rel in level:
            try:
                entries = sorted(os.scandir(root / rel), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in _NOT_DATA or len(found) + len(deeper) > MAX_FILES_SEEN:
                    continue
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        deeper.append(rel / entry.name)
                    elif entry.is_file():
                        found.append(rel / entry.name)
        level = deeper
    if extensions:
        for extension in extensions:
            match = next((p for p in found if p.suffix.lower() == extension), None)
            if match is not None:
                return match
        return None
    top = [p for p in found if len(p.parts) == 1]
    top.sort(key=lambda p: (not p.name.lower().startswith("readme"), p.name))
    return top[0] if top else None


def file_hints(tool: Mapping[str, Any], root: Path, shown_root: str | None) -> Hints:
    """Hints for a tool that reads files: a file of the type it names under the server's root (or, for a
    tool named like `read_file`, a README), as a path (relative to where the server runs: `shown_root`
    is the root as the server's command names it, None for its working directory), an absolute path
    for a property named so, and a `file:` URI for a `uri` (relative: the config is committed, and a
    checkout elsewhere must find it too)."""
    extensions = file_types(tool)
    reads_files = "file" in _words(str(tool.get("name", ""))) or bool(_FILE_URI.search(str(tool.get("description", ""))))
    if not extensions and not reads_files:
        return ()
    found = example_file(root, extensions)
    if found is None:
        return ()
    shown = (Path(shown_root) / found).as_posix() if shown_root else found.as_posix()
    return (("absolute", str((root / found).resolve())), ("path", shown), ("file", shown),
            ("uri", f"file:{shown}"))


@dataclass(frozen=True)
class Safety:
    """Whether a tool's call runs on the first `ci`, and why not.

    `kind` is what the coverage line counts: "read-only" (annotated so: runs), "query" (not annotated,
    but its name and arguments read as a question: init may probe it), "network" (reaches the outside
    world: commented out), "write" (may change something: commented out, never probed).
    """

    safe: bool
    reason: str = ""
    kind: str = "write"

    @property
    def probe(self) -> bool:
        """init may call it once to see whether it answers (plan.py's module docstring)."""
        return self.kind == "query"


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def _argument_words(schema: Any) -> set[str]:
    """Words in a tool's argument names (top level): `overwrite`, `new_content`, `target_id`..."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return {w for key in (properties if isinstance(properties, dict) else {}) for w in _words(str(key))}


def tool_safety(tool: Mapping[str, Any]) -> Safety:
    """A tool is called on the first run only if annotated read-only, not destructive, not reaching the
    outside world and not named like a change (DESTRUCTIVE_WORDS). An unannotated tool named like a
    question (QUERY_WORDS), with no argument named like a change, is a "query": init may probe it."""
    annotations = tool.get("annotations")
    hints = annotations if isinstance(annotations, dict) else {}
    words = _words(str(tool.get("name", "")))
    changing = sorted(set(words) & DESTRUCTIVE_WORDS)
    if hints.get("destructiveHint") is True:
        return Safety(False, "annotated destructiveHint")
    if changing:
        return Safety(False, f"its name says it may change something ({', '.join(changing)})")
    if hints.get("openWorldHint") is True:
        return Safety(False, "annotated openWorldHint: it reaches the outside world, and CI may have no network",
                      "network")
    if hints.get("readOnlyHint") is True:
        return Safety(True, kind="read-only")
    changing_args = sorted(_argument_words(tool.get("inputSchema")) & (DESTRUCTIVE_WORDS | CHANGE_ARGUMENT_WORDS))
    if "readOnlyHint" not in hints and set(words) & QUERY_WORDS and not changing_args:
        return Safety(False, "not annotated readOnlyHint, named like a query", "query")
    return Safety(False, "not annotated readOnlyHint: it may change something")


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return {}
        node = node[part]
    return node


def _first_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        return str(kinds[0]) if kinds else None
    return str(kind) if isinstance(kind, str) else None


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    low = schema.get("minimum")
    high = schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = schema["exclusiveMinimum"] + (1 if integer else 0.5)
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = schema["exclusiveMaximum"] - (1 if integer else 0.5)
    value: int | float = 1
    if isinstance(low, int | float) and value < low:
        value = low
    if isinstance(high, int | float) and value > high:
        value = high
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0 and value % step:
        value = step * max(1, round(value / step))
    return int(value) if integer else value


# "e.g. 'America/New_York'", "for example: `main`", "(example: 42)": the value a description suggests.
_DESCRIBED_EXAMPLE = re.compile(
    r"""(?i)(?:(?:\be\.g\.|\bfor example|\bsuch as)[,:]?|\bexamples?:)\s*(?:["'`]([^"'`\n]{1,80})["'`]|([\w./:@+-]{1,80}))""")


def described_example(description: Any) -> str | None:
    """The first example value a property's description gives ("e.g. 'UTC'"), or None."""
    if not isinstance(description, str):
        return None
    match = _DESCRIBED_EXAMPLE.search(description)
    if match is None:
        return None
    value = (match.group(1) or match.group(2) or "").strip().rstrip(".,;)")
    return value or None


def _string(schema: Mapping[str, Any], name: str, hints: Hints = ()) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        return FORMATS[fmt]
    lowered = name.lower()
    # A hint from the server's own command or lists (a directory it was started on, a URI it listed)
    # beats the description's example, which beats a guess from the property's name.
    value = next((hint for key, hint in hints if key in lowered), None) or described_example(schema.get("description")) \
        or next((hint for key, hint in NAME_HINTS if key in lowered), "example")
    low = schema.get("minLength")
    high = schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        value = value + "x" * (low - len(value))
    if isinstance(high, int) and len(value) > high:
        value = value[:high]
    return value


def example_value(schema: Any, root: Mapping[str, Any], name: str = "", depth: int = 0, hints: Hints = ()) -> Any:
    """A value `schema` suggests (see the module docstring), or _NO_VALUE when none is found."""
    schema = _resolve(schema, root)
    if depth > MAX_DEPTH or not isinstance(schema, dict):
        return _NO_VALUE
    for key in ("examples", "example"):
        examples = schema.get(key)
        if key == "examples" and isinstance(examples, list) and examples:
            return examples[0]
        if key == "example" and key in schema:
            return examples
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and not schema.get("type"):
            usable = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")] or options
            return example_value(usable[0], root, name, depth + 1, hints)
    kind = _first_type(schema)
    if kind is None and ("properties" in schema or "required" in schema):
        kind = "object"
    if kind == "object":
        return example_object(schema, root, depth + 1, hints)
    if kind == "array":
        item = example_value(schema.get("items", {}), root, name, depth + 1, hints)
        count = schema.get("minItems")
        if not isinstance(count, int) or count <= 0:
            return []
        return _NO_VALUE if item is _NO_VALUE else [item] * count
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "string":
        return _string(schema, name, hints)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _NO_VALUE


def example_object(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0, hints: Hints = ()) -> Any:
    """The object with only its required properties, each given an example value."""
    properties = schema.get("properties")
    props = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    out: dict[str, Any] = {}
    for key in required if isinstance(required, list) else []:
        value = example_value(props.get(key, {}), root, str(key), depth, hints)
        if value is _NO_VALUE:
            return _NO_VALUE
        out[str(key)] = value
    for key, prop in props.items():
        prop = _resolve(prop, root)
        if key in out or not isinstance(prop, dict) or not set(_words(str(key))) & WAIT_WORDS:
            continue
        if _first_type(prop) in ("integer", "number"):
            out[str(key)] = _number(prop, _first_type(prop) == "integer")
    if depth > 0 and not out and not required:
        # A nested object that requires nothing by its schema but means something only with one of its
        # fields (`sources: [{path} or {url}]`, the rule in code): the first field a hint names.
        for key, prop in props.items():
            prop = _resolve(prop, root)
            if isinstance(prop, dict) and _first_type(prop) == "string" and any(k in str(key).lower() for k, _ in hints):
                out[str(key)] = _string(prop, str(key), hints)
                break
    return out


def example_arguments(schema: Any, hints: Hints = ()) -> dict[str, Any] | None:
    """Arguments for a tool with this inputSchema (its required properties), or None if none were found."""
    if not isinstance(schema, dict):
        return {}
    value = example_object(schema, schema, 0, hints)
    return value if isinstance(value, dict) else None


def prompt_arguments(prompt: Mapping[str, Any], hints: Hints = ()) -> dict[str, str]:
    """A prompt's required arguments (prompts take strings), each with a value hinted by its name."""
    out: dict[str, str] = {}
    for argument in prompt.get("arguments") or []:
        if isinstance(argument, dict) and argument.get("required") and isinstance(argument.get("name"), str):
            out[argument["name"]] = _string({}, argument["name"], hints)
    return out
