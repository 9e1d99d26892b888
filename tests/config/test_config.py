"""mcptape.yml loading: valid files, every step shorthand, interpolation, secrets, lines, schema.

The broken files and their messages are tests/config/test_errors.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
import yaml

from mcptape.config.json_schema import json_schema, schema_text
from mcptape.config.load import load_config
from mcptape.config.models import (
    ACTIONS,
    STEP_ACTIONS,
    ClientSettings,
    Config,
    HttpServer,
    NormalizeRule,
    Session,
    StdioServer,
    Step,
    StepAction,
)
from mcptape.errors import ConfigError
from mcptape.jsonpath import parse_json_path
from tests.conftest import ROOT, mcptape_command

CONFIGS = Path(__file__).parents[1] / "configs"
VALID = CONFIGS / "valid"
BROKEN = CONFIGS / "broken"
SCHEMA_FILE = ROOT / "mcptape" / "mcptape.schema.json"
REGENERATE = "python -m mcptape.config.json_schema > mcptape/mcptape.schema.json"


def write(tmp_path: Path, text: str, name: str = "mcptape.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = """\
servers:
  calc:
    command: [python, calc.py]
    env: {ENV_VALUE}
sessions:
  - name: s
    server: calc
    steps: [list_tools]
"""


def with_env(env_value: str) -> str:
    return MINIMAL.replace("{ENV_VALUE}", env_value)


# --- the docs/design.md example ------------------------------------------------------------------


def test_design_example_loads_verbatim_with_its_variables_set() -> None:
    # tests/configs/valid/design.yml is the mcptape.yml sketch the contract (docs/design.md) started from, copied unchanged.
    loaded = load_config(VALID / "design.yml", env={"CALC_TOKEN": "calc-tok-1", "API_TOKEN": "api-tok-2"})
    cfg = loaded.config

    assert cfg.version == 1 and cfg.golden_dir == "tapes"
    calc, remote = cfg.servers["calc"], cfg.servers["remote"]
    assert isinstance(calc, StdioServer) and calc.command == ["python", "servers/calc.py"]
    assert calc.env == {"CALC_TOKEN": "calc-tok-1"}
    assert isinstance(remote, HttpServer) and remote.url == "http://127.0.0.1:8765/mcp"
    assert remote.headers == {"Authorization": "Bearer api-tok-2"}

    (session,) = cfg.sessions
    assert (session.name, session.server) == ("arithmetic", "calc")
    assert [(s.action, s.target, s.arguments) for s in session.steps] == [
        ("list_tools", None, None),
        ("call", "add", {"a": 2, "b": 3}),
        ("call", "divide", {"a": 1, "b": 0}),
        ("read_resource", "calc://constants", None),
        ("get_prompt", "explain", {"topic": "sums"}),
    ]
    assert cfg.normalize == [NormalizeRule(path="$..timestamp", replace="<TIMESTAMP>")]
    assert cfg.redact.patterns == ["ACME-[A-Z0-9]{24}"]

    # Lines as a reader counts them in the file, for messages and annotations.
    assert loaded.line_of("sessions", 0) == 11
    assert [loaded.step_line(0, i) for i in range(5)] == [14, 15, 17, 19, 20]

    assert loaded.secrets == {
        "env.CALC_TOKEN": "calc-tok-1",
        "headers.Authorization": "Bearer api-tok-2",
        "env.API_TOKEN": "api-tok-2",  # the variable alone, in case the server echoes the bare token
    }
    assert loaded.path == VALID / "design.yml"
    assert loaded.base_dir == VALID.resolve()
    assert loaded.golden_dir == VALID.resolve() / "tapes"


def test_design_example_without_its_variables_names_the_first_one() -> None:
    with pytest.raises(ConfigError) as e:
        load_config(VALID / "design.yml", env={"API_TOKEN": "x"})
    assert "design.yml:6: servers.calc.env.CALC_TOKEN: environment variable CALC_TOKEN is not set" in str(
        e.value
    )


# --- steps ----------------------------------------------------------------------------------


def test_every_step_shorthand() -> None:
    loaded = load_config(VALID / "all_steps.yml", env={})
    steps = loaded.config.sessions[0].steps

    def shape(step: Step) -> tuple[Any, ...]:
        return (
            step.action,
            step.target,
            step.arguments,
            step.params,
            step.timeout,
            step.count,
            step.duration,
        )

    completion = {
        "ref": {"type": "ref/prompt", "name": "args-prompt"},
        "argument": {"name": "city", "value": "Pa"},
    }
    assert [shape(s) for s in steps] == [
        ("list_tools", None, None, None, None, None, None),
        ("list_resources", None, None, None, None, None, None),
        ("list_resource_templates", None, None, None, None, None, None),
        ("list_prompts", None, None, None, None, None, None),
        ("ping", None, None, None, None, None, None),
        ("listen", None, None, None, None, None, None),
        ("list_tools", None, None, None, 2.5, None, None),
        ("call", "echo", {"message": "hi"}, None, 5.0, None, None),
        ("call", "get-sum", None, None, None, None, None),
        ("read_resource", "demo://resource/static/document/architecture.md", None, None, None, None, None),
        ("get_prompt", "simple-prompt", None, None, None, None, None),
        ("get_prompt", "args-prompt", {"city": "Paris"}, None, None, None, None),
        ("complete", None, None, completion, None, None, None),
        ("set_log_level", "debug", None, None, None, None, None),
        ("request", "tools/list", None, {"cursor": "abc"}, None, None, None),
        ("request", "ping", None, None, None, None, None),
        ("notify", "notifications/roots/list_changed", None, None, None, None, None),
        ("notify", "notifications/cancelled", None, {"requestId": 3}, None, None, None),
        ("listen", None, None, None, None, 2, 1.5),
        ("call", "add", {"a": 1, "b": 2}, None, None, None, None),
    ]
    assert {s.action for s in steps} == set(STEP_ACTIONS)

    session = loaded.config.sessions[0]
    assert (session.timeout, session.step_timeout) == (60.0, 10.0)
    server = loaded.config.servers["everything"]
    assert isinstance(server, StdioServer)
    assert server.command == ["node", "server-everything/dist/index.js", "stdio"]  # string split like a shell
    assert server.protocol == "2025-06-18"
    assert loaded.resolve(server.cwd or ".") == ROOT.resolve() / "fixtures" / "node"  # relative to the config file

    client = loaded.config.client_for(session)
    assert client.sampling == "decline"
    assert client.elicitation == {"action": "accept", "content": {"name": "mcptape"}}
    assert client.roots == [{"uri": "file:///tmp/project", "name": "project"}]


def test_step_models_as_code_builds_them() -> None:
    # ci/client code and their tests build steps directly; both forms give the same Step.
    assert Step(action="call", target="add", arguments={"a": 1}) == Step.model_validate(
        {"call": "add", "arguments": {"a": 1}}
    )
    assert Step.model_validate("ping") == Step(action="ping")
    session = Session(name="s", server="calc", steps=[Step(action="list_tools")])
    config = Config(servers={"calc": StdioServer(command=["python", "c.py"])}, sessions=[session])
    assert config.client_for(session) == ClientSettings()
    own = ClientSettings(protocol="2024-11-05")
    assert config.client_for(session.model_copy(update={"client": own})) is own


def test_step_action_literal_matches_the_action_table() -> None:
    assert get_args(StepAction) == STEP_ACTIONS == tuple(ACTIONS)


# --- interpolation and secrets --------------------------------------------------------------


def test_interpolation_defaults_escapes_and_secrets() -> None:
    loaded = load_config(
        VALID / "http_and_interpolation.yml", env={"API_TOKEN": "tok-abc", "SHARED_SECRET": "s3cr3t"}
    )
    cfg = loaded.config
    remote, local = cfg.servers["remote"], cfg.servers["local"]
    assert isinstance(remote, HttpServer) and isinstance(local, StdioServer)
    assert remote.url == "http://127.0.0.1:8765/mcp"
    assert remote.start == ["python", "-m", "my_server", "--port", "8765"]
    assert remote.headers["Authorization"] == "Bearer tok-abc"
    assert local.command[-1] == "--template=${NOT_A_VAR}"  # $${ is a literal ${
    assert local.env == {"PORT": "8080", "SHARED": "s3cr3t"}  # YAML numbers become strings for the process
    assert cfg.sessions[1].steps[0].arguments == {
        "name": "world",
        "nested": ["world", {"deep": "a ${literal} and x"}],
    }
    assert cfg.golden_dir == "golden" and loaded.golden_dir == VALID.resolve() / "golden"
    assert cfg.client_for(cfg.sessions[1]).protocol == "2026-07-28"
    # Secrets by redact.py's rule: a credential header, variables named like secrets. The plain
    # header, LOG and PORT are configuration (SHARED's value is known as env.SHARED_SECRET).
    assert loaded.secrets == {
        "headers.Authorization": "Bearer tok-abc",
        "env.API_TOKEN": "tok-abc",
        "env.SHARED_SECRET": "s3cr3t",
    }


def test_interpolation_takes_values_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPTAPE_TEST_TOKEN", "from-os-environ")
    monkeypatch.setenv("MCPTAPE_TEST_EMPTY", "")
    path = write(
        tmp_path,
        with_env(
            '{A: "${MCPTAPE_TEST_TOKEN}", B: "${MCPTAPE_TEST_EMPTY:-fallback}", C: "${MCPTAPE_TEST_EMPTY}"}'
        ),
    )
    server = load_config(path).config.servers["calc"]
    # ":-" uses the default for an empty variable too (as a shell does); plain ${X} keeps the empty value.
    assert server.env == {"A": "from-os-environ", "B": "fallback", "C": ""}
    # A secret by the variable's name; the fallback of a plainly named variable is configuration,
    # and empty is no secret.
    assert load_config(path).secrets == {"env.MCPTAPE_TEST_TOKEN": "from-os-environ"}


def test_same_env_name_with_different_values_keeps_both_secrets(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "servers:\n"
        "  a: {command: [python, a.py], env: {TOKEN: one}}\n"
        "  b: {command: [python, b.py], env: {TOKEN: two}}\n"
        "sessions:\n  - {name: s, server: a, steps: [ping]}\n",
    )
    assert load_config(path).secrets == {"env.TOKEN": "one", "env.TOKEN@b": "two"}


def test_yaml_keys_are_names_not_yaml_booleans(tmp_path: Path) -> None:
    # YAML 1.1 reads a bare `on`/`yes` as true; as a key in env it is the variable's name.
    path = write(tmp_path, with_env("{on: x, yes: y, 1: z}"))
    assert load_config(path).config.servers["calc"].env == {"on": "x", "yes": "y", "1": "z"}


def test_anchors_and_merge_keys() -> None:
    loaded = load_config(VALID / "anchors.yml", env={})
    sessions = loaded.config.sessions
    assert [(s.name, s.timeout, [st.action for st in s.steps]) for s in sessions] == [
        ("one", 30.0, ["list_tools", "ping"]),
        ("two", 30.0, ["list_tools", "ping"]),
        ("three", 120.0, ["list_tools", "ping"]),
    ]
    assert loaded.line_of("sessions", 1) == 11


def test_line_of_falls_back_to_the_enclosing_place() -> None:
    loaded = load_config(VALID / "design.yml", env={"CALC_TOKEN": "a", "API_TOKEN": "b"})
    assert loaded.line_of("servers", "remote", "headers", "Authorization") == 9
    assert loaded.line_of("servers", "remote", "no-such-key") == 7
    assert loaded.line_of("nothing", "here") == 1


# --- JSON paths -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$..timestamp", [("deep", "timestamp")]),
        ("$.a.b", [("key", "a"), ("key", "b")]),
        ("$.a[0]", [("key", "a"), ("index", 0)]),
        ("$.a[*].b", [("key", "a"), ("any", None), ("key", "b")]),
        ("$..a.b", [("deep", "a"), ("key", "b")]),
        ("$._meta.progressToken", [("key", "_meta"), ("key", "progressToken")]),
        ("$[\"odd.key\"]['x y']", [("key", "odd.key"), ("key", "x y")]),
    ],
)
def test_json_path_subset(path: str, segments: list[tuple[str, Any]]) -> None:
    assert parse_json_path(path) == segments


@pytest.mark.parametrize("path", ["timestamp", "$", "$.a[", "$..", "$.a[?(@.x)]", "$.a..", "$ .a"])
def test_json_path_outside_the_subset_says_what_is_supported(path: str) -> None:
    with pytest.raises(ValueError, match=r"\$"):
        parse_json_path(path)


# --- JSON Schema ----------------------------------------------------------------------------


def test_committed_schema_is_in_sync() -> None:
    committed = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
    assert committed == schema_text(), f"mcptape/mcptape.schema.json is stale; regenerate it: {REGENERATE}"


def test_schema_command_prints_the_committed_schema() -> None:
    proc = subprocess.run(
        mcptape_command("schema"), cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == SCHEMA_FILE.read_text(encoding="utf-8")


def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", sorted(p.name for p in VALID.glob("*.yml")))
def test_valid_configs_pass_the_published_schema(name: str) -> None:
    data = yaml.safe_load((VALID / name).read_text(encoding="utf-8"))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(data)]
    assert errors == []


@pytest.mark.parametrize(
    "name",
    [
        "typo_step.yml",
        "typo_step_bare.yml",
        "two_actions.yml",
        "option_not_for_action.yml",
        "typo_option.yml",
        "call_without_tool.yml",
        "unknown_top_level_key.yml",
        "unknown_server_key.yml",
        "command_and_url.yml",
        "neither_command_nor_url.yml",
        "bad_protocol.yml",
        "version_2.yml",
        "negative_timeout.yml",
        "wrong_type_timeout.yml",
        "empty_steps.yml",
        "bad_json_path.yml",
        "normalize_both_selectors.yml",
        "bad_log_level.yml",
        "drift_fail_on_typo_kind.yml",
        "drift_fail_on_typo_category.yml",
        "drift_ignore_unknown_key.yml",
        "drift_ignore_empty_rule.yml",
    ],
)
def test_published_schema_flags_what_the_loader_rejects(name: str) -> None:
    # An editor using the schema underlines these before mcptape ever runs.
    data = yaml.safe_load((BROKEN / name).read_text(encoding="utf-8"))
    assert list(validator().iter_errors(data)), f"the schema accepts {name}"


def test_schema_describes_steps_as_users_write_them() -> None:
    step = json_schema()["$defs"]["Step"]
    bare, *mappings = step["oneOf"]
    assert set(bare["enum"]) == {
        "list_tools",
        "list_resources",
        "list_resource_templates",
        "list_prompts",
        "ping",
        "listen",
    }
    by_action = {next(iter(m["required"])): m for m in mappings}
    assert set(by_action) == set(STEP_ACTIONS)
    assert set(by_action["call"]["properties"]) == {"call", "arguments", "timeout", "task"}
    assert by_action["set_log_level"]["properties"]["set_log_level"]["enum"][:2] == ["debug", "info"]
    assert all(m["additionalProperties"] is False and m["description"] for m in mappings)
    # The internal fields never leak into the published shape.
    assert not any({"action", "target"} & set(m["properties"]) for m in mappings)


def test_config_module_stays_off_the_cli_fast_path() -> None:
    # `mcptape --version` must not pay for pydantic/yaml (config.py is imported only by ci).
    code = "import sys, mcptape.cli; print(sorted(m for m in ('pydantic', 'yaml', 'mcptape.config') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
