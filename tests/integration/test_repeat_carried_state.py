"""Issue 18: `mcptape ci --repeat` must tell state carried between runs from volatility.

server-memory keeps its store in MEMORY_FILE_PATH; here the file is the same for every run,
as a user who sets it once has it. Run 1 of `create_entities` answers the new entity, every
later run `[]`: not a volatile value but state the previous run wrote. `--repeat 5` must say
so and how to reset it (a fresh store per run), and propose no rule that hides it. Whatever it
does propose, a user who pastes every suggestion must still be told when the store really
changed (another entity in it): that is the test of the suggestions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.integration.real_servers import Run, first_drift, mcptape, need_tools, node_release

pytestmark = pytest.mark.node

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  memory:
    command: [node, {memory}]
    env:
      MEMORY_FILE_PATH: "{store}"
sessions:
  - name: memory
    server: memory
    steps:
      - list_tools
      - call: create_entities
        arguments: {{entities: [{{name: tape, entityType: thing, observations: [recorded]}}]}}
      - call: read_graph
      - call: search_nodes
        arguments: {{query: tape}}
"""
VISITOR = {"type": "entity", "name": "visitor", "entityType": "person", "observations": ["came by"]}


def suggestions(stdout: str) -> dict[str, list[dict[str, object]]]:
    """Every rule `--repeat` suggested: the pasteable `normalize:` block and each `drift: {ignore: ...}` hint."""
    out: dict[str, list[dict[str, object]]] = {"normalize": [], "ignore": []}
    block = re.search(r"^normalize:\n(?:(?:  .*)?\n)+", stdout, re.M)
    if block:
        out["normalize"] = yaml.safe_load(block.group(0))["normalize"] or []
    for hint in re.findall(r"drift: (\{ignore: \[.*?\]\})", stdout):
        out["ignore"].extend(yaml.safe_load(hint)["ignore"])
    return out


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    need_tools()
    root = tmp_path_factory.mktemp("repeat")
    (root / "mcptape.yml").write_text(CONFIG.format(memory=node_release("memory"), store=root / "store.jsonl"),
                                      encoding="utf-8")
    return root, mcptape("ci", "--repeat", "5", cwd=root)


def test_repeat_sees_the_store_change_between_runs(repeated: tuple[Path, Run]) -> None:
    _, run = repeated
    assert run.returncode in (0, 1), run.text()
    assert "create_entities" in run.stdout, run.text()  # it noticed the answer that differs


def test_repeat_calls_carried_state_state_and_proposes_no_rule_for_it(repeated: tuple[Path, Run]) -> None:
    _, run = repeated
    assert re.search(r"\bstate\b", run.stdout) and re.search(r"fresh store|reset|sandbox", run.stdout), run.stdout
    found = suggestions(run.stdout)
    assert found == {"normalize": [], "ignore": []}, found


def _accept_then_change(root: Path) -> tuple[Run, Run]:
    """Accept the golden, check it unchanged, then put a visitor in the store and check again."""
    updated = mcptape("ci", "--update-golden", cwd=root)
    assert updated.returncode == 0, updated.text()
    unchanged = mcptape("ci", cwd=root, json_report=True)
    with open(root / "store.jsonl", "a", encoding="utf-8") as store:
        store.write("\n" + json.dumps(VISITOR))
    return unchanged, mcptape("ci", cwd=root, json_report=True)


def test_without_suggestions_a_changed_store_is_caught(tmp_path: Path) -> None:
    # The control: with the store carried over, an unchanged store checks green and a
    # visitor in it is output drift naming read_graph.
    need_tools()
    (tmp_path / "mcptape.yml").write_text(CONFIG.format(memory=node_release("memory"), store=tmp_path / "store.jsonl"),
                                          encoding="utf-8")
    mcptape("ci", "--update-golden", cwd=tmp_path)  # run 1 writes the store; its golden is replaced below
    unchanged, changed = _accept_then_change(tmp_path)
    assert unchanged.returncode == 0, unchanged.text()
    assert changed.returncode == 1, changed.text()
    assert (first_drift(changed.session("memory")) or "").startswith("tools/call read_graph"), changed.text()


def test_following_every_suggestion_still_catches_a_changed_store(repeated: tuple[Path, Run]) -> None:
    root, run = repeated
    config = root / "mcptape.yml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    found = suggestions(run.stdout)
    data["normalize"] = [*data.get("normalize", []), *found["normalize"]]
    if found["ignore"]:
        data["drift"] = {"ignore": found["ignore"]}
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    unchanged, changed = _accept_then_change(root)
    assert unchanged.returncode == 0, unchanged.text()
    assert changed.returncode == 1, (found, changed.text())
    assert "visitor" in json.dumps(changed.session("memory")["diff"]), changed.text()
