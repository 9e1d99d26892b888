"""The JSON Schema of mcptape.yml, as editors use it and `mcptape schema` prints it.

json_schema() builds it from the pydantic models; the package ships it built, as
mcptape/mcptape.schema.json (SHIPPED: package data, so `mcptape schema` and an offline editor
need no pydantic and no network), and tests hold the two equal. SCHEMA_ID, its `$id`, is where
the file is published: the v1 tag of the repository that is also the GitHub Action, so the URL
stays stable across releases of the same major version, and the
`# yaml-language-server: $schema=...` line `mcptape init` writes points at it.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

from mcptape.config.models import ACTIONS, LOG_LEVELS, Config
from mcptape.verdict.vocabulary import drift_classes

SCHEMA_FILE_NAME = "mcptape.schema.json"
SCHEMA_ID = f"https://raw.githubusercontent.com/mcptape/action/v1/mcptape/{SCHEMA_FILE_NAME}"

# ---------------------------------------------------------------------------------------------
# JSON Schema: the file as users write it (steps in shorthand), not the internal Step model


_OPTION_SCHEMAS: dict[str, dict[str, Any]] = {
    "arguments": {
        "type": "object",
        "description": "arguments, as the tool's or prompt's input schema wants them",
    },
    "params": {"type": "object", "description": "the request's params, sent as written"},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds for this step"},
    "count": {"type": "integer", "minimum": 1, "description": "stop after this many notifications"},
    "duration": {"type": "number", "exclusiveMinimum": 0, "description": "stop after this many seconds"},
    "task": {"type": "boolean", "description": "call the tool as a task (2025-11-25), polled to its end"},
}


def _step_schema() -> dict[str, Any]:
    bare = [a for a, spec in ACTIONS.items() if not spec.target and not spec.required]
    variants: list[dict[str, Any]] = [
        {
            "type": "string",
            "enum": bare,
            "description": "a step without options: " + "; ".join(f"{a}: {ACTIONS[a].doc}" for a in bare),
        }
    ]
    for action, spec in ACTIONS.items():
        if spec.target is None:
            value: dict[str, Any] = {"type": "null", "description": f"{spec.doc} (no value)"}
        elif action == "set_log_level":
            value = {
                "type": "string",
                "enum": list(LOG_LEVELS),
                "description": f"{spec.doc}: the {spec.target}",
            }
        else:
            value = {"type": "string", "minLength": 1, "description": f"{spec.doc}: the {spec.target}"}
        variants.append(
            {
                "type": "object",
                "description": spec.doc,
                "properties": {action: value, **{o: _OPTION_SCHEMAS[o] for o in spec.options}},
                "required": [action, *spec.required],
                "additionalProperties": False,
            }
        )
    return {
        "title": "Step",
        "description": "one client action: `- list_tools`, or a mapping with one action key and its options, "
        "e.g. `- call: add` with `arguments: {a: 2, b: 3}`",
        "oneOf": variants,
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema of mcptape.yml, as published for editors."""
    schema = copy.deepcopy(Config.model_json_schema())
    defs = schema["$defs"]
    defs["Step"] = _step_schema()
    # What validators check beyond types, said where an editor can see it.
    defs["Session"]["properties"]["steps"]["minItems"] = 1
    schema["properties"]["sessions"]["minItems"] = 1
    defs["NormalizeRule"]["oneOf"] = [{"required": ["path"]}, {"required": ["pattern"]}]
    defs["RedactSettings"]["properties"]["patterns"]["items"]["format"] = "regex"
    drift = defs["DriftSettings"]["properties"]
    severity = drift["fail_on"]["additionalProperties"]
    drift["fail_on"]["properties"] = {name: severity for name in drift_classes()}
    drift["fail_on"]["additionalProperties"] = False
    drift["ignore"]["items"] = {
        "type": "object",
        "description": "a difference matching every key given is not reported; each value is a glob (* and ?)",
        "properties": {
            "path": {"type": "string", "description": "the finding's path, or anything beneath it"},
            "category": {"type": "string", "description": "category.kind, e.g. schema.cosmetic or notification*"},
            "method": {"type": "string", "description": "the call's method, e.g. tools/call"},
            "name": {"type": "string", "description": "the tool, prompt or resource URI"},
        },
        "additionalProperties": False,
        "minProperties": 1,
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "mcptape.yml"
    schema["description"] = (
        "mcptape configuration: servers, scripted sessions and how their tapes are compared. "
        "${VAR} and ${VAR:-default} are interpolated in servers, sessions, client and golden_dir; $${ is a literal ${."
    )
    return schema


def schema_text() -> str:
    """json_schema() exactly as the shipped mcptape/mcptape.schema.json holds it."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def shipped_schema_text() -> str:
    """The schema the package ships (what `mcptape schema` prints)."""
    return resources.files("mcptape").joinpath(SCHEMA_FILE_NAME).read_text(encoding="utf-8")


if __name__ == "__main__":  # regenerate the shipped file: python -m mcptape.config.json_schema > mcptape/mcptape.schema.json
    import sys

    sys.stdout.write(schema_text())
