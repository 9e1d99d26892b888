"""Agents built with published frameworks, driven offline through the library: pydantic-ai (its MCP
toolset is FastMCP's client) and the OpenAI Agents SDK (its MCP server classes are the official
SDK's ClientSession). Neither calls any LLM: a scripted model (pydantic-ai's FunctionModel and
TestModel, a Model of the Agents SDK's interface) decides the tool calls.

Each agent is the README's (fixtures/example/frameworks/*.py, included there verbatim, so these
tests keep the README's sections true). Each runs against `mcptape.replay` of the bundled example's
golden tape, where a forked answer reaches the agent (a real change is seen), and against
`mcptape.record` of a live reference server (the npm server-everything), whose recording then
replays to the same answer with nothing left unanswered.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import mcptape
from tests.conftest import CALC_SERVER, CI_MODE_VARIABLES, FIXTURES, ROOT, node_server

FRAMEWORKS = FIXTURES / "example" / "frameworks"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, FRAMEWORKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled example's golden tapes and calc server, copied: the working directory."""
    shutil.copytree(FIXTURES / "example" / "tapes", tmp_path / "tapes", ignore=shutil.ignore_patterns("*.txt"))
    shutil.copy(CALC_SERVER, tmp_path / "calc_server.py")
    for name in CI_MODE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def everything() -> list[str]:
    return ["node", str(node_server("everything")), "stdio"]


def replayed(tape: str, ask: Any, *args: Any, **options: Any) -> tuple[str, list[mcptape.PlayReport]]:
    with mcptape.replay(tape, **options) as endpoint:
        said = asyncio.run(ask(endpoint, *args))
    return said, endpoint.reports


def test_the_readme_shows_the_framework_examples_as_committed() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in sorted(FRAMEWORKS.glob("*.py")):
        assert "```python\n" + path.read_text(encoding="utf-8") + "```" in readme, path.name


def test_a_pydantic_ai_agent_on_a_golden_tape(project: Path) -> None:
    agent = example("pydantic_ai_agent")
    said, reports = replayed("tapes/arithmetic.tape.jsonl", agent.ask)
    assert said == "2 + 3 = 5"
    assert [r.clean for r in reports] == [True]
    # A real change reaches the agent: the same tape with add's answer forked says something else.
    six = {"at": 3, "result": {"content": [{"type": "text", "text": "6"}]}}
    assert replayed("tapes/arithmetic.tape.jsonl", agent.ask, fork=six)[0] == "2 + 3 = 6"
    golden = (FIXTURES / "example" / "tapes" / "arithmetic.tape.jsonl").read_bytes()
    assert (project / "tapes" / "arithmetic.tape.jsonl").read_bytes() == golden  # the fork is a copy


@pytest.mark.node
def test_a_pydantic_ai_agent_recorded_against_a_reference_server_replays_the_same(project: Path) -> None:
    from pydantic_ai.models.test import TestModel

    agent = example("pydantic_ai_agent")
    tape = project / "everything.tape.jsonl"
    with mcptape.record(tape, everything()) as endpoint:
        live = asyncio.run(agent.ask(endpoint, TestModel(call_tools=["echo"])))
    assert "Echo:" in live
    # The server announces tools/list_changed right after initialize. Whether pydantic-ai's toolset
    # lists its tools again depends on whether its handler of that notification runs before or after
    # the list's answer is cached (asyncio's task order), when recording as when replaying: a second
    # tools/list gets the recorded list again (allow_reuse), as it got the same list live.
    said, reports = replayed(str(tape), agent.ask, TestModel(call_tools=["echo"]), allow_reuse=True)
    assert said == live and [r.problems() for r in reports] == [[]] and reports[0].answered >= 3
    # The control: an agent that asks what was not recorded gets no answer from the tape.
    with pytest.raises(mcptape.ReplayMiss) as missed:
        replayed(str(tape), _swallowing(agent.ask), TestModel(call_tools=["get-sum"]), allow_reuse=True)
    assert "tools/call get-sum" in missed.value.misses[0]


def _swallowing(ask: Any) -> Any:
    """The agent, with the error of a call the tape lacks swallowed (as a retrying agent would)."""

    async def run(endpoint: mcptape.Endpoint, model: Any) -> str:
        try:
            return str(await ask(endpoint, model))
        except Exception as e:  # noqa: BLE001 - the framework's own error for the miss, whatever its type
            return type(e).__name__

    return run


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_openai_agents_sdk_agent_on_a_golden_tape(project: Path, transport: str) -> None:
    agent = example("openai_agents_agent")
    said, reports = replayed("tapes/arithmetic.tape.jsonl", agent.ask, transport=transport)
    assert said == "5"
    assert all(r.clean for r in reports) and sum(r.answered for r in reports) >= 3
    six = {"at": 3, "result": {"content": [{"type": "text", "text": "6"}]}}
    assert replayed("tapes/arithmetic.tape.jsonl", agent.ask, transport=transport, fork=six)[0] == "6"


@pytest.mark.node
def test_an_openai_agents_sdk_agent_recorded_against_a_reference_server_replays_the_same(project: Path) -> None:
    agent = example("openai_agents_agent")
    echo = agent.Calculator("echo", {"message": "hello, tape"})
    tape = project / "everything.tape.jsonl"
    with mcptape.record(tape, everything()) as endpoint:
        live = asyncio.run(agent.ask(endpoint, echo))
    assert live == "Echo: hello, tape"
    for transport in ("stdio", "http"):
        said, reports = replayed(str(tape), agent.ask, echo, transport=transport)
        assert said == live and all(r.clean for r in reports), transport
