"""Issue 18's upgrades: a golden recorded with a published release, checked against a later one.

Ten upgrades of the reference servers, installed side by side (tests/integration/real_servers.py
says which releases and why): server-filesystem, -memory and -everything from npm, two older
releases each; mcp-server-time and -git from PyPI in two older release sets with `mcp<2`. Each
old release records its golden with `mcptape ci --update-golden` (`protocol: auto`), is
checked against itself (green: nothing changed), and the current release is checked against
that golden: the verdict must carry the right exit code and a headline that names the most
severe finding (structural before output; a call the session makes before handshake metadata
such as serverInfo or capabilities). Today's releases are also recorded and checked against
themselves with the same steps (sessions current-*), in the same two runs as the old ones.

Each session makes one call that fails on purpose (an unknown zone, an unknown tool, a path
outside the allowed directory), so that a change in how a failure is reported shows too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.real_servers import (
    CURRENT,
    NPM_RELEASES,
    PYTHON_RELEASES,
    Run,
    findings,
    first_drift,
    make_files,
    make_git_repo,
    mcptape,
    need_tools,
    node_release,
    python_release,
)

pytestmark = pytest.mark.node

STEPS = {
    "time": """\
      - list_tools
      - call: get_current_time
        arguments: {timezone: Asia/Tokyo}
      - call: convert_time
        arguments: {source_timezone: UTC, time: "12:00", target_timezone: Asia/Tokyo}
      - call: get_current_time
        arguments: {timezone: Not/AZone}
      - call: get_timezone_list
""",
    "git": """\
      - list_tools
      - call: git_status
        arguments: {repo_path: repo}
      - call: git_log
        arguments: {repo_path: repo}
      - call: git_show
        arguments: {repo_path: repo, revision: HEAD}
      - call: git_status
        arguments: {repo_path: no-such-repo}
""",
    "filesystem": """\
      - list_tools
      - call: list_allowed_directories
      - call: list_directory
        arguments: {{path: "{root}/files"}}
      - call: read_file
        arguments: {{path: "{root}/files/hello.txt"}}
      - call: read_text_file
        arguments: {{path: "{root}/files/hello.txt"}}
      - call: read_file
        arguments: {{path: /etc/hostname}}
""",
    "memory": """\
      - list_tools
      - call: create_entities
        arguments: {entities: [{name: tape, entityType: thing, observations: [recorded]}]}
      - call: create_relations
        arguments: {relations: [{from: tape, to: tape, relationType: loops}]}
      - call: read_graph
      - call: search_nodes
        arguments: {query: tape}
      - call: delete_graph
""",
    "everything": """\
      - list_tools
      - list_resources
      - list_prompts
      - call: echo
        arguments: {message: hello tape}
      - call: add
        arguments: {a: 2, b: 3}
      - get_prompt: simple-prompt
""",
}
UPGRADES: tuple[tuple[str, str], ...] = (
    *((server, version) for server, versions in NPM_RELEASES.items() for version in versions),
    *((server, release) for release in PYTHON_RELEASES for server in ("time", "git")),
)
NAMES = tuple(f"{server}-{version}" for server, version in UPGRADES)


def server_entry(server: str, version: str, session: str) -> str:
    if server in ("time", "git"):
        python = python_release(version)
        args = "--local-timezone, UTC" if server == "time" else "--repository, repo"
        return f"    command: [{python}, -m, mcp_server_{server}, {args}]\n"
    entry = node_release(server, version)
    if server == "filesystem":
        return f"    command: [node, {entry}, files]\n"
    if server == "memory":  # a fresh store per run and per session: STORE is set for each run
        return f"    command: [node, {entry}]\n    env: {{MEMORY_FILE_PATH: \"${{STORE}}/{session}.json\"}}\n"
    return f"    command: [node, {entry}, stdio]\n"


def write_config(root: Path, name: str, *, old: bool, current: bool) -> None:
    """Sessions SERVER-VERSION on the old release (`old`) or on today's (not `old`) and, with
    `current`, sessions current-SERVER-VERSION on today's release with the same steps."""
    entries = [(f"{s}-{v}", s, v if old else CURRENT) for s, v in UPGRADES]
    if current:
        entries += [(f"current-{s}-{v}", s, CURRENT) for s, v in UPGRADES]
    servers = "".join(f"  {name}:\n" + server_entry(s, v, name) for name, s, v in entries)
    sessions = "".join(
        f"  - name: {name}\n    server: {name}\n    steps:\n"
        + (STEPS[s].format(root=root) if s == "filesystem" else STEPS[s])
        for name, s, _ in entries
    )
    (root / name).write_text(f"version: 1\ngolden_dir: tapes\nservers:\n{servers}sessions:\n{sessions}",
                             encoding="utf-8")


@dataclass
class Upgrades:
    recorded: Run  # every old release and today's, --update-golden
    self_check: Run  # each of them against its own golden
    new_vs_old: Run  # today's releases against the old releases' goldens


@pytest.fixture(scope="module")
def upgrades(tmp_path_factory: pytest.TempPathFactory) -> Upgrades:
    need_tools()
    root = tmp_path_factory.mktemp("upgrades")
    make_files(root / "files")
    make_git_repo(root / "repo")
    write_config(root, "releases.yml", old=True, current=True)
    write_config(root, "upgraded.yml", old=False, current=False)

    def run(config: str, *args: str) -> Run:
        store = root / f"store-{len(list(root.glob('store-*')))}"
        store.mkdir()
        return mcptape("ci", "-c", config, "-j", "4", *args, cwd=root, env={"STORE": str(store)}, json_report=True)

    return Upgrades(
        recorded=run("releases.yml", "--update-golden"),
        self_check=run("releases.yml"),
        new_vs_old=run("upgraded.yml"),
    )


def test_every_old_and_current_release_is_recorded(upgrades: Upgrades) -> None:
    everyone = (*NAMES, *(f"current-{n}" for n in NAMES))
    assert upgrades.recorded.verdicts() == dict.fromkeys(everyone, "updated"), upgrades.recorded.text()


SELF_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize("session", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=SELF_XFAIL[n])) if n in SELF_XFAIL else n
    for n in NAMES
])
def test_an_old_release_checked_against_itself_is_green(upgrades: Upgrades, session: str) -> None:
    s = upgrades.self_check.session(session)
    assert s["verdict"] == "same", first_drift(s)


def test_the_current_releases_checked_against_themselves_are_green(upgrades: Upgrades) -> None:
    verdicts = {n: v for n, v in upgrades.self_check.verdicts().items() if n.startswith("current-")}
    assert verdicts == {f"current-{n}": "same" for n in NAMES}, upgrades.self_check.text()


@dataclass(frozen=True)
class Expected:
    exit_code: int
    headline: str  # a regex the first drifted call must match
    why: str  # what a reviewer must read first, and why


# What each upgrade must report. A headline never names handshake metadata (serverInfo,
# capabilities, instructions) while a structural finding exists elsewhere, and its severity is
# the verdict's.
EXPECTED: dict[str, Expected] = {
    "filesystem-2025.7.1": Expected(2, r"^(tools/list|tools/call read_text_file) ",
                                    "read_text_file and read_media_file added; read_text_file now answers"),
    "filesystem-2025.8.21": Expected(2, r"^tools/list ", "every inputSchema gained its type and required properties"),
    "memory-2025.8.4": Expected(2, r"^initialize · result\.protocolVersion ",
                                "protocol 2024-11-05 → 2025-06-18 is the one structural change"),
    "memory-2026.1.26": Expected(1, r"^tools/list ",
                                 "annotations added (delete_* restate the default destructiveHint), outputs same"),
    "everything-2025.9.25": Expected(2, r"`add`|^tools/call add ", "tool add removed; the session's call to it breaks"),
    "everything-2026.1.26": Expected(1, r"^tools/list ", "annotations added, inputSchemas relaxed"),
    "time-2024-12": Expected(2, r"^(protocol |tools/call get_timezone_list )",
                             "legacy → 2026-07-28; the unknown tool is now a JSON-RPC error"),
    "time-2026-01": Expected(2, r"^(protocol |tools/call get_timezone_list )",
                             "legacy → 2026-07-28; the unknown tool is now a JSON-RPC error"),
    "git-2024-12": Expected(2, r"^(tools/list |protocol |tools/call git_show )",
                            "git_diff, git_checkout, git_show, git_branch added; git_show now answers"),
    "git-2026-01": Expected(2, r"^(tools/list |protocol )", "git_add's files gained minItems; legacy → 2026-07-28"),
}
UPGRADE_XFAIL: dict[str, str] = {}


def headline_of(s: dict[str, Any]) -> str:
    return first_drift(s) or ""


@pytest.mark.parametrize("session", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=UPGRADE_XFAIL[n])) if n in UPGRADE_XFAIL else n
    for n in NAMES
])
def test_an_upgrade_gives_the_right_exit_code_and_headline(upgrades: Upgrades, session: str) -> None:
    s = upgrades.new_vs_old.session(session)
    expected = EXPECTED[session]
    headline = headline_of(s)
    assert (s["exit_code"], headline) == (expected.exit_code, headline) and re.search(expected.headline, headline), (
        f"{session}: want exit {expected.exit_code} and a headline matching {expected.headline!r} "
        f"({expected.why}); got exit {s['exit_code']}: {headline}")
    verdict = {1: "output", 2: "structural"}[expected.exit_code]
    assert headline.endswith(f"({verdict})"), headline


def test_annotations_are_compared_after_the_mcp_defaults(upgrades: Upgrades) -> None:
    for session in ("memory-2026.1.26", "filesystem-2025.8.21", "git-2026-01"):
        restated = [f["message"] for f in findings(upgrades.new_vs_old.session(session))
                    if f["path"].endswith("annotations.destructiveHint") and "became destructive" in f["message"]]
        assert restated == [], (session, restated)


def test_paginated_lists_are_compared_as_one_list(upgrades: Upgrades) -> None:
    s = upgrades.new_vs_old.session("everything-2025.9.25")
    found = findings(s)
    removed = {f["message"] for f in found if f["category"] == "surface" and f["kind"] == "removed"}
    # server-everything 2025.9.25 lists 100 resources, 10 a page; today's release lists 7 documents.
    for n in (1, 10, 11, 57, 100):
        assert f"resource `test://static/resource/{n}` removed" in removed, sorted(removed)[:12]
    assert [f for f in found if f["category"] == "call" and f["kind"] == "removed"] == []
    assert "test://static/resource/100" in json.dumps(s["diff"]["surface"]["removed"])


def test_an_error_that_became_an_is_error_result_is_named_with_both_forms(upgrades: Upgrades) -> None:
    # server-memory 2025.8.4 answers an unknown tool with JSON-RPC -32603 "Unknown tool: delete_graph",
    # today's release with an isError result "MCP error -32602: Tool delete_graph not found";
    # mcp-server-time on mcp 1.x with an isError result, today's with JSON-RPC -32602.
    cases = {"memory-2025.8.4": ("delete_graph", "-32603"), "time-2024-12": ("get_timezone_list", "-32602")}
    for session, (tool, code) in cases.items():
        call = [f for f in findings(upgrades.new_vs_old.session(session)) if (f["call"] or {}).get("name") == tool]
        assert call, (session, findings(upgrades.new_vs_old.session(session)))
        text = " ".join(f["message"] for f in call)
        assert ("isError" in text or "error result" in text) and code in text, (session, text)


def test_capability_changes_are_named_under_a_protocol_change(upgrades: Upgrades) -> None:
    # mcp-server-time 0.6.2 (mcp 1.x) declares only tools; today's release also prompts and resources.
    s = upgrades.new_vs_old.session("time-2024-12")
    kinds = {(f["category"], f["kind"]) for f in findings(s)}
    assert ("protocol", "changed") in kinds
    capabilities = [f["message"] for f in findings(s) if f["category"] == "session" and "capabilit" in (f["kind"] or "")]
    assert any("prompts" in m for m in capabilities) and any("resources" in m for m in capabilities), capabilities


# Issue 31: the security review on real upgrades. The reference servers reword descriptions,
# add tools and annotations between releases: none of that may read as poisoning. What it does
# report is listed here with the reason, (session, kind, path) -> why.
SECURITY_EXPECTED: dict[tuple[str, str, str], str] = {
    ("everything-2025.9.25", "url", "result.tools[gzip-file-as-resource].inputSchema.properties.data.default"):
        "a new tool whose `data` defaults to a raw.githubusercontent.com URL the server fetches: a host the "
        "surface never named before, which is what a reviewer should see (relax with security.url)",
}


def test_real_upgrades_raise_no_security_finding_but_the_justified_ones(upgrades: Upgrades) -> None:
    found = {(name, f["kind"], f["path"]): f["message"]
             for name in NAMES for f in findings(upgrades.new_vs_old.session(name)) if f["category"] == "security"}
    assert set(found) == set(SECURITY_EXPECTED), "\n".join(f"{k}: {m}" for k, m in sorted(found.items()))
    # the review ran: today's releases checked against themselves have no finding of any kind
    assert all(not findings(upgrades.self_check.session(f"current-{n}")) for n in NAMES)
