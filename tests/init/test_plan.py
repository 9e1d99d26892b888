"""init/plan.py: which calls init's session makes, and why the others are commented out (pure parts)."""

from __future__ import annotations

from typing import Any

from mcptape.init.plan import Coverage, plan_calls
from mcptape.init.server import Surface

SDK_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}


def tool(name: str, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **({"annotations": annotations} if annotations else {})}


def test_hints_an_sdk_wrote_alike_on_every_tool_leave_it_to_the_name() -> None:
    # mcp-go writes MCP's defaults on every tool its author did not annotate: destructiveHint true on a reader.
    listed = [tool("excel_read_sheet", SDK_DEFAULTS), tool("excel_describe_sheets", SDK_DEFAULTS),
              tool("excel_write_to_sheet", SDK_DEFAULTS), tool("excel_copy_sheet", SDK_DEFAULTS)]
    plans = plan_calls(Surface(tools=listed), ())
    assert {n: p.category for n, p in plans.items()} == {
        "excel_read_sheet": "query", "excel_describe_sheets": "query",  # probed, kept only if they answer
        "excel_write_to_sheet": "may write", "excel_copy_sheet": "may write"}
    # The control: one tool annotated otherwise, and the author's words stand for every tool.
    mixed = [*listed[:3], tool("excel_copy_sheet", {**SDK_DEFAULTS, "destructiveHint": False})]
    assert plan_calls(Surface(tools=mixed), ())["excel_read_sheet"].category == "may write"


def test_coverage_says_when_nothing_is_safe_to_call() -> None:
    writes = plan_calls(Surface(tools=[tool("delete_row"), tool("fetch", {"openWorldHint": True, "readOnlyHint": True})]), ())
    assert Coverage.of(writes).nothing_safe
    assert Coverage.of(writes).line() == "0 of 2 tools called; 2 commented out (1 may write, 1 need the network)"
    fillable = plan_calls(Surface(tools=[tool("delete_row"), tool("get_status")]), ())
    assert not Coverage.of(fillable).nothing_safe  # get_status could be probed: the user can make it run
