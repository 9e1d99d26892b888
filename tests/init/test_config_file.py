"""init/config_file.py's rendering: every value it writes reads back as exactly that value.

The end-to-end runs are tests/integration/test_init.py's; this checks the one piece of YAML
writing init does by hand, on the values that trip YAML up (indicators, look-alikes of other
types, quotes, escapes, non-ASCII, invisible characters).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from mcptape.init.config_file import yaml_scalar

TRICKY: list[Any] = [
    "plain", "@modelcontextprotocol/server-everything", "-y", "--repository", "-", "~", "~/x", "yes", "No", "on",
    "null", "true", "1", "1.5", "0x10", "1e3", ".5", "a: b", "a:b", "a #b", "#x", "x:", "[x]", "{x}", "a,b", "*x",
    "&x", "!x", "|", ">", "%x", "'q'", '"q"', "back\\slash", "tab\there", "line\nbreak", "", " lead", "trail ",
    "naïve ☃", "emoji 😀", "esc\u001b[2J", "bidi\u202e", "zero\u200bwidth", "nbsp\u00a0", "\ufeffbom", "`tick`",
    "http://127.0.0.1:8765/mcp", "C:\\path", "${NAME}", "=", "+1", "2025-01-01", "12:30",
]


@pytest.mark.parametrize("value", TRICKY)
def test_a_string_reads_back_as_itself_in_a_list_and_a_mapping(value: str) -> None:
    text = yaml_scalar(value)
    assert "\n" not in text
    assert yaml.safe_load(f"k: [{text}, {text}]") == {"k": [value, value]}
    assert yaml.safe_load(f"k: {{{text}: {text}}}") == {"k": {value: value}}
    assert yaml.safe_load(f"k: {text}") == {"k": value}


def test_structures_and_other_types_read_back() -> None:
    value = {"a": [1, 2.5, True, None, "x y"], "nested": {"k": "@v", "e": []}, "n": -3}
    assert yaml.safe_load(f"v: {yaml_scalar(value)}") == {"v": value}


def test_the_plain_form_is_used_where_it_is_safe() -> None:
    """What a reader sees stays readable: plain words plain, only what needs it quoted."""
    assert [yaml_scalar(v) for v in ("python3", "-m", "--repository", "server.py", "/abs/path")] == \
        ["python3", "-m", "--repository", "server.py", "/abs/path"]
    assert yaml_scalar("@scope/pkg") == '"@scope/pkg"'
