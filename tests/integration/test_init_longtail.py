"""`mcptape init` on the long tail of servers (fixtures/servers/longtail_server.py, one class each):
init → `ci -u` → `ci` is green, twice, and the server's real change still drifts, in the same test.

What each class checks on top: unannotated query tools are probed and kept, the write tool is never
called (its side file stays absent); an open-world tool is commented out; a HOME counter is not drift
(private_home); a description in random order gets a canonical-order rule, not a placeholder; epoch
seconds under an unknown key get a rule; a repository lister sees the same repository in every run;
a server that refuses every call after server/discover is named, with the fix; one that lists its tools
after server/discover but refuses their calls until `initialize` gets the legacy handshake pinned.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from mcptape.config.load import load_config
from tests.conftest import FIXTURES
from tests.integration.test_init import mcptape, ok

LONGTAIL = FIXTURES / "servers" / "longtail_server.py"


def _gate(work: Path, kind: str, env: dict[str, str] | None = None) -> str:
    """init, ci -u, ci twice (green); then the --changed server must drift. The config's text."""
    proc = ok(mcptape(work, "init", "--", sys.executable, str(LONGTAIL), "--kind", kind, env=env))
    assert "mcptape init: trial run 2 of 2" in proc.stderr  # progress, on stderr
    text = (work / "mcptape.yml").read_text(encoding="utf-8")
    ok(mcptape(work, "ci", "-u", env=env))
    ok(mcptape(work, "ci", env=env))
    ok(mcptape(work, "ci", env=env))
    return text


def _changed(work: Path, env: dict[str, str] | None = None) -> int:
    config = work / "mcptape.yml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace(f"{LONGTAIL}, --kind,", f"{LONGTAIL}, --changed, --kind,"), encoding="utf-8")
    return mcptape(work, "ci", env=env).returncode


def test_unannotated_query_tools_are_probed_and_kept_and_the_write_tool_is_never_called(tmp_path: Path) -> None:
    from tests.conftest import user_env
    writes = tmp_path / "writes.jsonl"
    env = user_env(LONGTAIL_WRITES=str(writes))
    text = _gate(tmp_path, "query", env)
    calls = [s.target for s in load_config(tmp_path / "mcptape.yml", env=env).config.sessions[0].steps
             if s.action == "call"]
    assert calls == ["get_status", "list_items", "search_docs"]
    assert "arguments: {query: install}" in text  # the description's example, not "example"
    assert "# - call: save_item" in text
    assert re.search(r"# not run: init's call with these example arguments failed \(Error: no record 'example'\)", text)
    assert not writes.exists()  # neither init's probe nor its trial runs nor ci called the write tool
    assert _changed(tmp_path, env) == 1


def test_safe_mode_probes_nothing_and_the_summary_warns_that_the_gate_calls_nothing(tmp_path: Path) -> None:
    proc = ok(mcptape(tmp_path, "init", "--no-probe", "--", sys.executable, str(LONGTAIL), "--kind", "query"))
    assert "coverage: 0 of 5 tools called; 5 commented out (4 not annotated readOnlyHint, not probed (--no-probe), " \
           "1 may write)" in proc.stdout
    assert "WARNING: the gate calls no tool at all" in proc.stderr
    assert "probing" not in proc.stderr


def test_an_open_world_tool_is_commented_out_and_the_rest_still_gates(tmp_path: Path) -> None:
    text = _gate(tmp_path, "openworld")
    assert "# not run: annotated openWorldHint" in text and "# - call: fetch_page" in text
    assert "      - call: get_version\n" in text
    assert _changed(tmp_path) == 1


def test_a_counter_kept_in_home_is_not_drift_and_its_label_changing_is(tmp_path: Path) -> None:
    text = _gate(tmp_path, "home")
    assert [s["private_home"] for s in yaml.safe_load(text)["servers"].values()] == [True]
    assert "\nnormalize:" not in text  # a fresh HOME each trial run: the counter says 1 every time
    assert _changed(tmp_path) == 1
    # The control: without the private HOME, the counter grows from run to run and the gate drifts.
    config = tmp_path / "mcptape.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("private_home: true", "private_home: false")
                      .replace(", --changed", ""), encoding="utf-8")
    ok(mcptape(tmp_path, "ci", "-u"))
    assert mcptape(tmp_path, "ci").returncode == 1


def test_a_description_in_random_order_gets_a_canonical_order_and_a_removed_item_still_drifts(tmp_path: Path) -> None:
    text = _gate(tmp_path, "order")
    rules = load_config(tmp_path / "mcptape.yml").config.normalize
    assert [(r.order, r.pattern) for r in rules] == [("sorted", "(?<=Allowed commands: ).+")], text
    assert "canonical order" in (rules[0].reason or "")
    assert _changed(tmp_path) == 1  # `wc` removed: a placeholder over the list would have hidden it


def test_epoch_seconds_under_an_unknown_key_get_a_rule_and_the_build_still_drifts(tmp_path: Path) -> None:
    _gate(tmp_path, "epoch")
    rules = load_config(tmp_path / "mcptape.yml").config.normalize
    assert {r.path for r in rules if r.path} == {"$..t"} and any(r.pattern for r in rules)
    assert _changed(tmp_path) == 1


def test_a_repository_lister_sees_the_same_repository_every_run_and_a_new_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n", encoding="utf-8")
    _gate(repo, "lister")  # init's draft config lives elsewhere: the lister never sees it
    assert sorted(p.name for p in repo.iterdir()) == ["README.md", "mcptape.yml", "tapes"]
    (repo / "new.txt").write_text("a real change\n", encoding="utf-8")
    assert mcptape(repo, "ci").returncode == 1


def test_calls_that_would_make_the_first_gate_red_are_commented_out_with_why(tmp_path: Path) -> None:
    # As @wonderwhy-er/desktop-commander: a call history that differs every start (no rule fits it),
    # and a directory listing of `.`, where `ci -u` writes tapes/. Both active, the first `ci` was red.
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n", encoding="utf-8")
    text = _gate(repo, "commander")
    calls = [s.target for s in load_config(repo / "mcptape.yml").config.sessions[0].steps if s.action == "call"]
    assert calls == ["get_version"]
    assert re.search(r"# not run: its answer differed between init's two trial runs where no normalize rule helps "
                     r"\(result\.content\[0\]\.text.*\n\s*# - call: get_recent_calls", text)
    assert re.search(r"# not run: its path '\.' holds tapes/, where `ci -u` writes the golden tapes.*\n"
                     r"\s*# - call: list_directory", text)
    assert _changed(repo) == 1


def test_a_reader_of_files_gets_a_file_of_its_type_and_a_file_uri(tmp_path: Path) -> None:
    # `.` for a spreadsheet reader and https://example.com for a converter cannot work offline; a file
    # of the type the tool names, under the directory the server runs in, and a `file:` URI can.
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "README.md").write_text("# hello\n", encoding="utf-8")
    (repo / "data" / "book.xlsx").write_bytes(b"PK\x03\x04 a workbook")
    text = _gate(repo, "reader")
    assert "arguments: {filepath: data/book.xlsx}" in text
    assert "arguments: {uri: file:README.md}" in text
    assert [s.target for s in load_config(repo / "mcptape.yml").config.sessions[0].steps
            if s.action == "call"] == ["read_sheet", "convert_to_markdown"]
    (repo / "data" / "book.xlsx").write_bytes(b"PK\x03\x04 a workbook, one more row")  # a real change
    assert mcptape(repo, "ci").returncode == 1


def test_a_server_that_refuses_every_call_after_discover_is_named_with_the_fix(tmp_path: Path) -> None:
    proc = ok(mcptape(tmp_path, "init", "--", sys.executable, str(LONGTAIL), "--kind", "refuse"), 3)
    assert "answered server/discover and then refused every request" in proc.stderr
    assert "--protocol 2025-11-25" in proc.stderr
    assert list(tmp_path.iterdir()) == []
    # A config written by hand records the refusals: ci gates them, and says what they are.
    (tmp_path / "mcptape.yml").write_text(
        f"version: 1\nservers:\n  r:\n    command: [{sys.executable}, {LONGTAIL}, --kind, refuse]\n"
        "sessions:\n  - name: r\n    server: r\n    steps: [list_tools, {call: get_status}]\n", encoding="utf-8")
    ok(mcptape(tmp_path, "ci", "-u"))
    gate = ok(mcptape(tmp_path, "ci"))
    assert "refused every request (3) with -32600 Invalid Request: likely a protocol or transport mismatch" in gate.stdout
    assert "--protocol 2025-11-25" in gate.stdout


def test_a_server_that_refuses_calls_until_initialize_gets_the_legacy_handshake_pinned(tmp_path: Path) -> None:
    # As an rmcp server: server/discover and tools/list answer, every call is -32600 "initialize is
    # required". Not the example arguments' fault: init retries its calls after initialize and pins it.
    text = _gate(tmp_path, "peerless")
    assert 'protocol: "2025-11-25"' in text
    assert [s.target for s in load_config(tmp_path / "mcptape.yml").config.sessions[0].steps
            if s.action == "call"] == ["get_status", "list_items"]
    assert "failed on example arguments" not in text and "put real ones here" not in text
    assert _changed(tmp_path) == 1


def test_a_server_slow_to_start_gets_init_timeout_and_ci_waits_as_long(tmp_path: Path) -> None:
    slow = ["--", sys.executable, str(LONGTAIL), "--kind", "openworld", "--start-delay", "3"]
    failed = ok(mcptape(tmp_path, "init", "--timeout", "1", *slow), 3)
    assert "no answer from the server within the step timeout (1s)" in failed.stderr
    assert "mcptape init --timeout 90" in failed.stderr and "on the session" not in failed.stderr  # no file yet
    assert list(tmp_path.iterdir()) == []
    ok(mcptape(tmp_path, "init", "--timeout", "8", *slow))
    session = load_config(tmp_path / "mcptape.yml").config.sessions[0]
    assert session.step_timeout == 8
    assert [s.target for s in session.steps if s.action == "call"] == ["get_version"]  # probed, with time to start
    ok(mcptape(tmp_path, "ci", "-u"))
    ok(mcptape(tmp_path, "ci"))
    assert "--timeout 0: seconds one step may take" in ok(mcptape(tmp_path, "init", "--timeout", "0", *slow), 3).stderr


def test_a_probe_that_timed_out_is_a_timeout_even_in_the_handshake(tmp_path: Path) -> None:
    from mcptape.config.models import StdioServer
    from mcptape.init import probe

    server = StdioServer(command=[sys.executable, str(LONGTAIL), "--kind", "openworld", "--start-delay", "2"])
    outcomes = probe.probe_calls(server, [("get_version", {})], base_dir=tmp_path, env={}, protocol=None,
                                 start_timeout=0.5)
    assert outcomes["get_version"].kind == "timeout", outcomes
    # The control: given the time to start, the same call answers.
    assert probe.probe_calls(server, [("get_version", {})], base_dir=tmp_path, env={}, protocol=None,
                             start_timeout=6)["get_version"].ok


@pytest.mark.parametrize(("argv", "hinted"), [
    (["--", sys.executable, "-c", "import sys; sys.exit(1)"], False),  # died: --protocol would not help
    (["--", sys.executable, str(LONGTAIL), "--kind", "version"], True),  # refused the version it was offered
])
def test_the_protocol_hint_is_given_only_for_a_version_refusal(tmp_path: Path, argv: list[str], hinted: bool) -> None:
    proc = ok(mcptape(tmp_path, "init", *argv), 3)
    assert "listing the server failed" in proc.stderr
    assert ("--protocol 2025-11-25" in proc.stderr) is hinted, proc.stderr
