"""The text of mcptape.yml as init writes it, and writing it once: never over a file, never unchecked.

Owns the file's words: the header, the server entry, one session listing the surface with each planned
call (active, or commented out with why: plan.py's Plan), the resources and prompts, and the
`normalize:` block the trial found (trial.py's Trial). Values are written as YAML flow text that reads
back as exactly that value (yaml_scalar); server text in comments is one line, escaped (one_line);
what the server listed is written with `${` escaped, since ci interpolates the file.

A file is written only if it loads with config.load_config and passes `mcptape check`'s checks
(config/semantics.py): `verified`; and never over an existing one (os.link refuses, with no race):
`link_new`. What goes into the entry and the plans is the planning's (server.py, plan.py); reading
options and printing are commands/init.py's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from mcptape.config.interpolate import escape_refs
from mcptape.config.json_schema import SCHEMA_ID
from mcptape.config.load import LoadedConfig, load_config
from mcptape.config.semantics import check_config
from mcptape.errors import ConfigError, McptapeError, WriteError
from mcptape.init.plan import Plan, plan_calls
from mcptape.init.scaffold import Hints, prompt_arguments
from mcptape.init.server import LIST_STEPS, Surface, key_attr
from mcptape.init.text import one_line
from mcptape.init.trial import Trial
from mcptape.logsafe import escape_controls
from mcptape.publish.outlet import terminal

MAX_RESOURCES = 10  # a server may list thousands; the first few show the shape, the comment says so
GOLDEN_DIR = "tapes"  # the file's golden_dir, beside it
STEP_TIMEOUT = 30.0  # ci's default step_timeout: written only when init was given another (--timeout)
SESSION_TIMEOUT = 120.0  # ci's default session timeout

# A plain scalar starts with no YAML indicator (@ ` ~ & * ! | > ' " % # ...; a dash only before a word).
_PLAIN = re.compile(r"(?:[A-Za-z_./]|-(?=[A-Za-z0-9_-]))[A-Za-z0-9_./@:+=~-]*")
_NOT_PLAIN = re.compile(r"(?i)(y|n|yes|no|true|false|on|off|null|~)")


def yaml_scalar(value: Any) -> str:
    """A value as YAML flow text that reads back as exactly this value (JSON is valid YAML flow).

    A string is written plain when that reads back as the same string (not a number, a boolean,
    a date...: YAML's own resolver decides), else double-quoted with every character that is not
    printable escaped (\\u or \\U: YAML has both; JSON's surrogate pairs would read back as two).
    """
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and not _NOT_PLAIN.fullmatch(value) and _reads_back(value):
            return value
        # logsafe's escapes (\\x, \\u, \\U) are YAML's too: what acts or hides first, then what YAML cannot hold.
        text = escape_controls(json.dumps(value, ensure_ascii=False))
        return "".join(c if c.isprintable() or c == "\t" else
                       f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_scalar(str(k))}: {yaml_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(yaml_scalar(v) for v in value) + "]"
    return json.dumps(value)


def _reads_back(plain: str) -> bool:
    try:
        return bool(yaml.safe_load(f"[{plain}]") == [plain])
    except yaml.YAMLError:
        return False


def escaped_surface(surface: Surface) -> Surface:
    """What the server listed, `${` escaped where ci would interpolate it (config/interpolate.py)."""
    lists = ("tools", "resources", "resource_templates", "prompts")
    return replace(surface, **{k: escape_refs(getattr(surface, k)) for k in lists})


def render_config(name: str, server: Mapping[str, Any], surface: Surface, trial: Trial | None = None,
                  *, hints: Hints = (), plans: Mapping[str, Plan] | None = None, config_arg: str = "",
                  step_timeout: float | None = None) -> str:
    """The commented mcptape.yml for `surface` (see the module docstring). `config_arg`: ` -c FILE`
    when the file is not the default one, for the commands its header gives."""
    plans = plans if plans is not None else plan_calls(surface, hints)
    # What the server listed is written with `${` escaped (escaped_surface): its names, and the
    # arguments planned from its examples, under the names as written.
    surface = escaped_surface(surface)
    plans = {escape_refs(name): replace(plan, arguments=escape_refs(plan.arguments)) for name, plan in plans.items()}
    lines = [
        f"# yaml-language-server: $schema={SCHEMA_ID}",
        f"# Written by `mcptape init` from what {name} listed. Review it, then record the golden tapes:",
        f"#   mcptape ci{config_arg} --update-golden",
        f"# and gate: `mcptape ci{config_arg}`. Each golden tape gets a .tape.view.txt beside it: the same tape,",
        "# one line per value, for reviewing its diff (see the README).",
        "version: 1",
        f"golden_dir: {GOLDEN_DIR}                # one golden tape per session; commit them",
        "servers:",
        f"  {name}:",
    ]
    for key, value in server.items():
        if key == "env":
            lines.append("    env:                         # the only variables the server gets (besides PATH, HOME, ...)")
            lines.extend(f"      {k}: {yaml_scalar(v)}" for k, v in value.items())
        elif key == "private_home":
            lines.append(f"    private_home: {yaml_scalar(value)}            # a fresh HOME and temp dir each run: "
                         "what the server keeps there is not drift")
        else:
            lines.append(f"    {key}: {yaml_scalar(value)}")
    lines += ["sessions:", f"  - name: {name}", f"    server: {name}"]
    if step_timeout is not None:
        lines.append(f"    step_timeout: {step_timeout:g}                # seconds one step may take (init --timeout)")
        if 4 * step_timeout > SESSION_TIMEOUT:
            lines.append(f"    timeout: {4 * step_timeout:g}                    # seconds for the whole session")
    lines.append("    steps:")
    for action in LIST_STEPS:
        items = getattr(surface, key_attr(action))
        if items is None:
            reason = surface.refused.get(action, "")
            lines.append(f"      # - {action}        # not offered: the server answered {one_line(reason, 60)!r}")
        else:
            lines.append(f"      - {action}")
    for tool in surface.tools or []:
        plan = plans.get(str(tool.get("name")))
        if plan is not None:
            lines += _call_lines(tool, plan)
    resources = surface.resources or []
    for resource in resources[:MAX_RESOURCES]:
        uri = resource.get("uri")
        if isinstance(uri, str) and uri:
            lines.append(f"      - read_resource: {yaml_scalar(uri)}")
    if len(resources) > MAX_RESOURCES:
        lines.append(f"      # {len(resources) - MAX_RESOURCES} more resources are listed; init reads the first "
                     f"{MAX_RESOURCES}. Add a read_resource step for any other you want gated.")
    for template in surface.resource_templates or []:
        lines.append(f"      # - read_resource: {yaml_scalar(str(template.get('uriTemplate', '')))}"
                     "   # a template: fill in its {parameters} to read one")
    for prompt in surface.prompts or []:
        pname = prompt.get("name")
        if not isinstance(pname, str) or not pname:
            continue
        lines.append(f"      - get_prompt: {yaml_scalar(pname)}")
        arguments = prompt_arguments(prompt, hints)
        if arguments:
            lines.append(f"        arguments: {yaml_scalar(arguments)}   # example values: put real ones here")
    if not any(line.startswith("      - ") for line in lines):  # a session needs a step
        lines.append("      - ping                       # the server lists nothing: its answer to ping is gated")
    return "\n".join(lines + _normalize_lines(trial)) + "\n"


def _normalize_lines(trial: Trial | None) -> list[str]:
    """The `normalize:` block: the rules the trial runs call for, or a commented example."""
    lines = []
    if trial is not None and trial.errors:
        lines.append("# init's trial run of the session failed; fix the step it names before recording:")
        lines += [f"#   {one_line(e, 200)}" for e in trial.errors]
    if trial is not None and trial.unfixable:
        lines.append("# init's two trial runs differed where no normalize rule helps (see `mcptape ci --repeat 3`):")
        lines += [f"#   {one_line(u, 200)}" for u in trial.unfixable]
    if trial is None or not trial.rules:
        return lines + [
            "# Volatile values (times, ids) that are not drift: `mcptape ci --repeat 3` suggests rules.",
            "# normalize:",
            '#   - path: "$..timestamp"',
            '#     replace: "<TIMESTAMP>"',
        ]
    lines.append("normalize:                         # values that differed between init's two trial runs")
    for rule in trial.rules:
        key = "path" if rule.get("path") else "pattern"
        lines.append(f"  - {key}: {json.dumps(rule[key], ensure_ascii=False)}")
        if rule.get("order"):
            lines.append(f"    order: {rule['order']}")
        else:
            lines.append(f"    replace: {json.dumps(rule['replace'], ensure_ascii=False)}")
        if rule.get("reason"):
            lines.append(f"    reason: {json.dumps(one_line(rule['reason'], 200), ensure_ascii=False)}")
    return lines


def _call_lines(tool: Mapping[str, Any], plan: Plan) -> list[str]:
    tname = str(tool.get("name"))
    step = [f"- call: {yaml_scalar(tname)}"]
    if plan.arguments:
        step.append(f"  arguments: {yaml_scalar(plan.arguments)}")
    about = one_line(tool.get("description"))
    head = [f"      # {one_line(tname, 60)}: {about}"] if about else []
    if plan.active:
        note = [f"      # runs: {plan.why}"] if plan.why else []
        return head + note + [f"      {s}" for s in step]
    return head + [f"      # not run: {plan.why}; uncomment to record it"] + [f"      # {s}" for s in step]


def verified(temp: Path, text: str, env: Mapping[str, str]) -> LoadedConfig:
    """`text` written to `temp`, loaded and checked as `mcptape check` does; a failure is init's bug."""
    try:
        terminal().write(temp, text, what="config")  # checked like everything mcptape writes
    except WriteError as e:
        raise WriteError(f"{temp.parent}: cannot write the config: {e}") from e
    try:
        loaded = load_config(temp, env={**os.environ, **env})
        check_config(loaded)
    except McptapeError as e:
        raise McptapeError(f"init built a config that does not load ({e.message}); nothing was written",
                           hint="please report it with the server's tools/list answer") from e
    return loaded


def link_new(temp: Path, out: Path) -> None:
    """Put the verified file at `out` unless something is there: link, unlike rename, never replaces."""
    try:
        os.link(temp, out)
    except FileExistsError as e:
        raise ConfigError(f"{out} already exists; init never overwrites a config",
                          hint=f"write elsewhere with -o, or move {out} away first") from e
    except OSError as e:
        raise WriteError(f"{out}: cannot write the config: {e.strerror or e}") from e
