"""Properties of the readers and the output escapes, over generated hostile input (Hypothesis).

In-process and fast, so many more cases than the process-level campaign (campaign.py) runs;
derandomized, so `make test` tries the same cases on every machine and a failure reproduces
(Hypothesis prints the smallest failing example it shrank to).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcptape.config.load import load_config
from mcptape.config.os_text import MAX_SESSION_NAME
from mcptape.diff.compare import diff_tapes
from mcptape.errors import ConfigError, McptapeError, TapeError
from mcptape.logsafe import escape_controls, inert_json, utf8
from mcptape.tape.reader import read_tape

PROPERTY = settings(max_examples=300, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Text with what hurts: lone surrogates, controls, bidi marks, workflow-command prefixes.
hostile_text = st.lists(st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\x1b", "\u202e", "::", "##[",
                                                                     "\x00", "\n"])), max_size=12).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=12,
)
HEADER = b'{"mcptape":"tape","format":1,"version":"0.1.0","name":"t","transport":"stdio"}'
KINDS = ["request", "response", "notification", "error", "stderr", "garbage", "exit", "note", "x"]


def _event_line(kind: str, direction: str, msg: Any, extra: dict[str, Any]) -> bytes:
    return json.dumps({"kind": kind, "dir": direction, **extra, "msg": msg}).encode()


event_lines = st.builds(_event_line, st.sampled_from(KINDS), st.sampled_from(["c2s", "s2c", 1, None]), json_values,
                        st.dictionaries(st.sampled_from(["id", "method", "params", "raw", "step", "text"]), json_values,
                                        max_size=3))
raw_lines = st.one_of(event_lines, st.binary(max_size=40), st.just(b'{"mcptape":"end","events":2}'))


@PROPERTY
@given(lines=st.lists(raw_lines, max_size=8), header=st.booleans(), cut=st.booleans())
def test_reading_any_tape_is_a_tape_or_a_tape_error(tmp_path: Path, lines: list[bytes], header: bool, cut: bool) -> None:
    path = tmp_path / "t.tape.jsonl"
    data = b"\n".join([HEADER, *lines] if header else lines)
    path.write_bytes(data if cut else data + b"\n")
    try:
        tape = read_tape(path)
    except TapeError as e:
        assert str(path) in e.message
        return
    for event in tape.events:
        if event.get("kind") in ("request", "response", "notification", "error"):
            assert isinstance(event.get("msg"), dict)  # what play would send is a message


yaml_bits = st.sampled_from(["version: 1\n", "servers:\n", "  calc:\n", "    command: [python, x.py]\n", "sessions:\n",
                             "  - name: a\n", "    server: calc\n", "    steps: [list_tools]\n", "&a ", "*a", "!!python/name:os.system ",
                             "<<: *a\n", "{", "}", "[", "]", "- ", ": ", "\t", "\x00", "'", '"', "\n", "  ", "${X}", "?",
                             # what once passed check and crashed ci, or crashed both: a merge key holding a
                             # scalar, a NUL escaped in a command, an env value or a cwd, a name no file can have
                             "    <<: x\n", "<<: [1]\n", '    command: ["py\\0", x.py]\n', '    env: {A: "b\\0"}\n',
                             '    cwd: "d\\0"\n', "  - name: " + "n" * 3000 + "\n"])


@PROPERTY
@given(parts=st.lists(yaml_bits | hostile_text, max_size=20))
def test_loading_any_config_is_a_config_or_a_config_error(tmp_path: Path, parts: list[str]) -> None:
    path = tmp_path / "mcptape.yml"
    path.write_bytes("".join(parts).encode("utf-8", "surrogatepass"))
    try:
        loaded = load_config(path, env={})
    except ConfigError as e:
        assert str(path) in e.message
        return
    # What a config that loads gives the OS can be given to it: ci would otherwise end in an internal error.
    for server in loaded.config.servers.values():
        argv = getattr(server, "command", None) or getattr(server, "start", None) or []
        os_texts = [*argv, server.cwd or "", *server.env, *server.env.values()]
        assert not any("\x00" in text for text in os_texts), server
    assert all(len(session.name) <= MAX_SESSION_NAME for session in loaded.config.sessions)


list_events = st.builds(
    _event_line, st.sampled_from(["request", "response"]), st.sampled_from(["c2s", "s2c"]),
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers(0, 3)},
                          optional={"method": st.sampled_from(["tools/list", "prompts/list"]) | json_values,
                                    "params": st.fixed_dictionaries({}, optional={"cursor": json_values}) | json_values,
                                    "result": st.fixed_dictionaries({"tools": st.lists(json_values, max_size=2)},
                                                                    optional={"nextCursor": json_values}) | json_values}),
    st.fixed_dictionaries({"id": st.integers(0, 3)}, optional={"method": st.sampled_from(["tools/list"]) | json_values}),
)


@settings(PROPERTY, max_examples=100)  # a diff costs more than a read: fewer cases, the same doors
@given(golden=st.lists(list_events | raw_lines, max_size=5), fresh=st.lists(list_events | raw_lines, max_size=5))
def test_diffing_any_two_readable_tapes_is_a_verdict(tmp_path: Path, golden: list[bytes], fresh: list[bytes]) -> None:
    # What `diff --allow-edited` reads: tapes edited anyhow, past their seal. A list walk's pages are
    # merged before calls pair (diff/pages.py): an edited `method` that is an array once crashed it.
    tapes = []
    for name, lines in (("golden", golden), ("fresh", fresh)):
        path = tmp_path / f"{name}.tape.jsonl"
        path.write_bytes(b"\n".join([HEADER, *lines]) + b"\n")
        try:
            tapes.append(read_tape(path))
        except TapeError:
            return
    try:
        result = diff_tapes(tapes[0], tapes[1])
    except McptapeError:
        return
    assert result.verdict in ("same", "output", "structural")


@PROPERTY
@given(value=json_values)
def test_json_for_stdout_is_valid_utf8_inert_and_the_same_value(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2)
    # A high surrogate right before a low one cannot come from a JSON reader (it joins the pair).
    assume(re.search("[\ud800-\udbff][\udc00-\udfff]", text) is None)
    data = utf8(inert_json(text))
    decoded = data.decode("utf-8")  # strict: every byte is UTF-8
    assert json.loads(decoded) == value
    assert "\x1b" not in decoded and "\u202e" not in decoded


@PROPERTY
@given(text=hostile_text)
def test_escaped_text_always_has_a_utf8_form(text: str) -> None:
    shown = escape_controls(text)
    shown.encode("utf-8")  # strict: a lone surrogate would raise here
    assert "\x1b" not in shown
