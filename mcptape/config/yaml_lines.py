"""mcptape.yml's YAML, read with the line of every value; aliases and nesting bounded (ConfigError)."""

from __future__ import annotations

from typing import Any, NoReturn

import yaml

from mcptape.config.locations import Loc, field_name, one_line
from mcptape.errors import ConfigError
from mcptape.jsonrpc import MAX_DEPTH

# A hand-written mcptape.yml holds a few thousand values. Aliases are expanded, not shared, so
# nested ones multiply (a "billion laughs" file of 1 KB is a billion values): the expansion stops
# at MAX_YAML_VALUES, which costs well under a second and a few tens of MB, with a ConfigError.
MAX_YAML_VALUES = 100_000
# Counting values is not enough: one 1 MB anchored string used 200 times is 201 values but 200 MB
# that every later stage (arguments sent, recorded, redacted, compared) copies: `ci` took 26 s
# and 1.85 GB on it. So the text aliases repeat is bounded too, far above what shared
# arguments or headers take (a few KB, a few dozen times), far below what hurts.
MAX_YAML_ALIAS_BYTES = 4 * 1024 * 1024
# Nesting deeper than a message may be (jsonrpc.MAX_DEPTH) is refused: it is far beyond any
# config, and it bounds the recursion here and the depth of the `arguments` mcptape sends.
MAX_YAML_DEPTH = MAX_DEPTH


# The tags of plain data; any other (`!!python/...`, `!Ref`, `!!set`) is refused, not dropped:
# a tag the reader ignored would leave a value that is not what the writer meant.
_COLLECTION_TAGS = frozenset({"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"})
_KEPT_AS_TEXT = frozenset({"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"})


class _YamlTree:
    """Builds plain Python data from the composed YAML node tree, remembering each node's line.

    Composing (not loading) keeps the nodes' marks; scalars are constructed by the same
    SafeConstructor yaml.safe_load uses, so values mean what they mean to any YAML reader.
    Refused with a ConfigError: more than MAX_YAML_VALUES values once aliases are expanded,
    nesting deeper than MAX_YAML_DEPTH, an alias that contains itself.
    """

    def __init__(self, loader: Any, display: str) -> None:
        self.loader = loader
        self.display = display
        self.lines: dict[Loc, int] = {}  # value lines; key lines win below (where `name:` is written)
        self.key_lines: dict[Loc, int] = {}
        self._active: set[int] = set()
        self._built = 0
        self._seen: set[int] = set()  # nodes built once: building one again expands an alias
        self._alias: Loc | None = None  # where the outermost alias being expanded is used
        self._alias_bytes = 0  # the scalar text repeated by expanding aliases (MAX_YAML_ALIAS_BYTES)

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self._built += 1
        outer = self._alias is None and id(node) in self._seen
        if outer:
            self._alias = loc
        self._seen.add(id(node))
        try:
            return self._build(node, loc)
        finally:
            if outer:
                self._alias = None

    def _build(self, node: yaml.Node, loc: Loc) -> Any:
        if self._built > MAX_YAML_VALUES:
            self._too_big(loc, node, f"{MAX_YAML_VALUES} values")
        if len(loc) > MAX_YAML_DEPTH:
            raise ConfigError(
                f"{self.display}:{node.start_mark.line + 1}: {field_name(loc[:6])}…: values nested more than "
                f"{MAX_YAML_DEPTH} levels deep; mcptape.yml needs a handful: flatten this value"
            )
        self.lines[loc] = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            if self._alias is not None:
                self._alias_bytes += len(node.value)
                if self._alias_bytes > MAX_YAML_ALIAS_BYTES:
                    self._too_big(loc, node, f"{MAX_YAML_ALIAS_BYTES // (1024 * 1024)} MB of repeated text")
            return self._scalar(node, loc)
        if id(node) in self._active:
            raise ConfigError(
                f"{self.display}:{node.start_mark.line + 1}: {field_name(loc)}: "
                "a YAML alias refers to itself; mcptape.yml cannot hold recursive data"
            )
        if node.tag not in _COLLECTION_TAGS:  # `!!python/object/apply:os.system [...]` was read as a list
            self._refuse_tag(node, loc)
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            explicit = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
            try:
                self.loader.flatten_mapping(node)  # YAML merge keys (`<<: *base`): merged pairs come first
            except yaml.MarkedYAMLError as e:  # `<<: x`: a merge key's value must be a mapping or a list of them
                mark = e.problem_mark or node.start_mark
                raise ConfigError(
                    f"{self.display}:{mark.line + 1}: {field_name(loc)}: a merge key (`<<:`) takes an anchored "
                    f"mapping (`<<: *base`) or a list of them, and this one holds something else (YAML: "
                    f"{one_line(str(e.problem or e))}); merge a mapping or remove the `<<:` line"
                ) from e
            out: dict[str, Any] = {}
            explicit_seen: set[Loc] = set()
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ConfigError(
                        f"{self.display}:{line}: {field_name(loc)}: a key must be a plain name, "
                        "not a list or mapping; check the indentation"
                    )
                # The key's text, not its YAML type: `on:` or `1:` are names here, not true or 1.
                key = str(key_node.value)
                if key in out and id(key_node) in explicit and (*loc, key) in explicit_seen:
                    raise ConfigError(
                        f'{self.display}:{line}: {field_name((*loc, key))}: duplicate key "{key}" '
                        f"(first at line {self.key_lines[(*loc, key)]}); YAML keeps only one, so remove or rename one"
                    )
                if id(key_node) in explicit:
                    explicit_seen.add((*loc, key))
                self.key_lines[(*loc, key)] = line
                out[key] = self.build(value_node, (*loc, key))  # an explicit key overrides a merged one
            return out
        finally:
            self._active.discard(id(node))

    def _too_big(self, loc: Loc, node: yaml.Node, limit: str) -> NoReturn:
        where = self._alias[:-1] if self._alias else loc  # the value that holds the `*alias`
        line = self.key_lines.get(where) or self.lines.get(where) or node.start_mark.line + 1
        raise ConfigError(
            f"{self.display}:{line}: {field_name(where)}: YAML aliases (`*name`) here expand the file "
            f"to more than {limit} (anchored parts repeating parts that repeat others: "
            "an alias bomb, or a config far larger than mcptape reads); write the repeated parts out, "
            "or nest fewer aliases"
        )

    def _scalar(self, node: yaml.ScalarNode, loc: Loc) -> Any:
        tag = node.tag
        if tag in (
            "tag:yaml.org,2002:null",
            "tag:yaml.org,2002:bool",
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
            "tag:yaml.org,2002:str",
        ):
            try:
                return self.loader.construct_object(node, deep=True)
            except yaml.YAMLError as e:
                raise ConfigError(
                    f"{self.display}:{node.start_mark.line + 1}: {field_name(loc)}: "
                    f"cannot read {node.value!r} as {tag.rsplit(':', 1)[-1]} ({one_line(str(e))})"
                ) from e
        if tag in _KEPT_AS_TEXT:  # timestamps, binary: keep the text the user wrote
            return str(node.value)
        self._refuse_tag(node, loc)

    def _refuse_tag(self, node: yaml.Node, loc: Loc) -> NoReturn:
        tag = str(node.tag)
        shown = "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag
        why = (
            " (it asks a YAML reader to make a Python object; mcptape reads mcptape.yml as plain data, never code)"
            if "python/" in tag
            else ""
        )
        raise ConfigError(
            f"{self.display}:{node.start_mark.line + 1}: {field_name(loc)}: unsupported YAML tag {shown}{why}; "
            "remove it (mcptape.yml holds plain strings, numbers, lists and mappings)"
        )

    def line_map(self) -> dict[Loc, int]:
        return {**self.lines, **self.key_lines}


def _refused_character(text: str, display: str, e: yaml.reader.ReaderError) -> str:
    """file:line:column of the character YAML refused, named, and the fix."""
    position = e.position if 0 <= e.position < len(text) else 0
    char = text[position] if text else "\0"
    if isinstance(e.character, int) and chr(e.character) != char:  # the C reader counts otherwise: find it
        position = max(text.find(chr(e.character)), 0)
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    code = ord(text[position]) if text else 0
    name = "a NUL byte" if code == 0 else f"the control character U+{code:04X}"
    return (
        f"{display}:{line}:{column}: {name} here; YAML allows no control characters in a file: "
        "remove it (an editor or a copy from a binary file put it there)"
    )


def parse_yaml(text: str, display: str) -> tuple[Any, dict[Loc, int]]:
    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it: faster
    loader = loader_cls(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            where = f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display
            what = one_line(" ".join(p for p in (e.context, e.problem) if p))
            fix = (
                "mcptape.yml holds one document: remove the `---` separator and what follows it"
                if "single document" in what
                else "fix the syntax there (check indentation, a missing ':' or an unclosed quote or bracket)"
            )
            raise ConfigError(f"{where}: invalid YAML: {what}; {fix}") from e
        except yaml.reader.ReaderError as e:  # a character YAML refuses: not marked, only a position
            raise ConfigError(_refused_character(text, display, e)) from e
        except yaml.YAMLError as e:
            raise ConfigError(f"{display}: invalid YAML: {one_line(str(e))}") from e
        if node is None:
            raise ConfigError(
                f"{display}:1: the file is empty; start with `version: 1`, `servers:` and `sessions:` (see README)"
            )
        tree = _YamlTree(loader, display)
        data = tree.build(node, ())
        return data, tree.line_map()
    finally:
        loader.dispose()


