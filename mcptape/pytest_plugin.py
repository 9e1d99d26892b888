"""The pytest plugin (entry point `pytest11: mcptape`): tests of an agent run against a tape, offline.

Owns the marker `@pytest.mark.mcptape(tape=..., server=[...] | url=...)`, the fixture
`mcptape_server` (the argv or URL a test's MCP client connects to), the record modes
(`--mcptape-record-mode`, ini `mcptape_record_mode`, env `MCPTAPE_RECORD_MODE`, as vcrpy's and
pytest-recording's; the library's RecordMode, api/modes.py) and the end-of-session report of
recordings no test used. Serving and recording are the library's `mcptape.replay` (api/serving.py),
which runs `mcptape play`, `mcptape rec` and `play --fallback` themselves: the fixture reads the
marker and the mode, and turns what the replay found into a test's outcome.

Record modes:
    none          play only (the default): a missing tape fails the test; a call the tape lacks
                  fails it with play's near-miss explanation.
    once          record when the tape is missing, play otherwise.
    new_episodes  play, and record what the tape lacks (play --fallback); a missing tape is recorded.
    all           re-record every tape.
Agent lab (replay only, `mcptape play`'s options): `faults=["tool=add,error=-32000:boom", ...]`
with `fault_seed=N` (play --fault, --fault-seed), `pace="recorded"` or `"x2"` (play --pace), and
`fork={"at": 3, "error": "-32000:quota"}` (or `"result": {...}`, `"drop": True`, `"cut": True`):
the test plays a fork of its tape made by `mcptape fork` into a temporary directory, so the tape
itself is never changed. A fork needs a recorded tape: in a mode that records, `fork=` fails the test.
A test records one client session per tape: a test that opens two sessions while recording keeps
the last (give the second its own test, or its own `tape=`).
Recording in CI (environment.in_ci: CI=true, 1, yes ...) is refused unless `--mcptape-allow-record-in-ci` (or env
MCPTAPE_ALLOW_RECORD_IN_CI=1) says so, as `mcptape ci --update-golden` is.

Loaded in every pytest run of an environment mcptape is installed in, so it imports nothing
heavy: of mcptape only the record modes (stdlib) at load time, the library when a test uses the
fixture, the SDK only when a test asks `stdio_parameters()`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mcptape.api.modes import Action, RecordMode
from mcptape.errors import McptapeError

if TYPE_CHECKING:
    from mcptape.api.endpoint import PlayReport

RECORD_MODES = tuple(mode.value for mode in RecordMode)
MODE_VARIABLE = "MCPTAPE_RECORD_MODE"
ALLOW_CI_VARIABLE = "MCPTAPE_ALLOW_RECORD_IN_CI"
TAPE_SUFFIX = ".tape.jsonl"  # tape/format.py's; repeated here to keep the plugin's load free of mcptape
MARKER_ARGS = ("tape", "server", "url", "lenient", "ignore_args", "match_on", "allow_reuse", "faults", "fault_seed",
               "pace", "fork")
_UNUSED_KEY = pytest.StashKey[list[tuple[str, str, list[str]]]]()
_CALL_PASSED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcptape", "MCP tapes (mcptape)")
    group.addoption(
        "--mcptape-record-mode",
        choices=RECORD_MODES,
        default=None,
        help="none (default): replay only; once: record missing tapes; new_episodes: replay and record "
        "what a tape lacks; all: re-record. Also ini mcptape_record_mode and env MCPTAPE_RECORD_MODE.",
    )
    group.addoption(
        "--mcptape-allow-record-in-ci",
        action="store_true",
        help="allow recording when CI=true (refused otherwise, like `mcptape ci --update-golden`)",
    )
    group.addoption(
        "--mcptape-fail-unused",
        action="store_true",
        help="fail the run when a replayed tape holds recordings its test never used",
    )
    parser.addini("mcptape_record_mode", "default record mode for mcptape tapes (none|once|new_episodes|all)", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mcptape(tape=None, server=None, url=None, lenient=False, ignore_args=(), match_on='params', "
        "allow_reuse=False, faults=(), fault_seed=0, pace=None, fork=None): serve the MCP session of this test "
        "from a tape (mcptape_server fixture)",
    )
    config.stash[_UNUSED_KEY] = []
    record_mode(config)  # a mode that is none of the four stops the run at once, not at its first test


def record_mode(config: pytest.Config) -> RecordMode:
    """The record mode: the option, else MCPTAPE_RECORD_MODE, else the ini setting, else none."""
    import mcptape.environment as environment  # a few lines of stdlib: the plugin's load stays light

    mode = config.getoption("--mcptape-record-mode") or environment.get(MODE_VARIABLE) or config.getini("mcptape_record_mode")
    mode = str(mode or "none").strip()
    if mode not in RECORD_MODES:
        raise pytest.UsageError(f"mcptape record mode {mode!r}: expected one of {', '.join(RECORD_MODES)}")
    return RecordMode(mode)


def default_tape(test_file: Path, test_name: str) -> Path:
    """`tapes/<test module>/<test name>.tape.jsonl` beside the test file (a parametrized id kept readable)."""
    safe = re.sub(r"[^\w.\-\[\]]+", "_", test_name).strip("_") or "test"
    return test_file.parent / "tapes" / test_file.stem / f"{safe}{TAPE_SUFFIX}"


@dataclass
class McptapeServer:
    """What a test's MCP client connects to: `command` (stdio argv) or `url` (streamable HTTP).

    In replay the command is `mcptape play TAPE`: no live server is needed at all.
    """

    tape: Path
    mode: Action  # what this test does: "play", "record" or "fallback"
    command: list[str] = field(default_factory=list)
    url: str | None = None

    def stdio_parameters(self, **kwargs: Any) -> Any:
        """The official SDK's `StdioServerParameters` for `command` (needs `pip install mcp`)."""
        try:
            from mcp import StdioServerParameters
        except ImportError as e:
            raise RuntimeError("stdio_parameters() needs the official MCP SDK: pip install mcp") from e
        return StdioServerParameters(command=self.command[0], args=self.command[1:], **kwargs)


def _plan(request: pytest.FixtureRequest) -> tuple[Path, RecordMode, Action, dict[str, Any]]:
    """The tape, the record mode, what it does with the tape (play, record, fallback) and the
    marker's options; what the mode cannot do here fails the test, in the plugin's words."""
    marker = request.node.get_closest_marker("mcptape")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    unknown = set(options) - set(MARKER_ARGS)
    if unknown:
        pytest.fail(
            f"@pytest.mark.mcptape: unknown argument(s) {', '.join(sorted(unknown))}; it takes {', '.join(MARKER_ARGS)}",
            pytrace=False,
        )
    test_file = Path(str(request.node.path))
    tape = Path(options["tape"]) if options.get("tape") else default_tape(test_file, request.node.name)
    if not tape.is_absolute():
        tape = test_file.parent / tape
    mode = record_mode(request.config)
    exists = tape.exists()
    action = mode.action(exists)
    if action == "play" and not exists:
        pytest.fail(
            f"mcptape: no tape at {tape} (record mode none plays only); record it with "
            "`pytest --mcptape-record-mode=once`",
            pytrace=False,
        )
    if action != "play":
        if not options.get("server") and not options.get("url"):
            pytest.fail(f"mcptape: recording {tape} needs the live server: @pytest.mark.mcptape(server=[...]) or url=...", pytrace=False)
        import mcptape.environment as environment

        if environment.in_ci() and not (
            request.config.getoption("--mcptape-allow-record-in-ci") or environment.flag(ALLOW_CI_VARIABLE)
        ):
            pytest.fail(
                f"mcptape: CI={environment.get('CI')}: refusing to record {tape} (record mode {mode}); in CI tapes are played, "
                f"not re-recorded. Commit the tape, or pass --mcptape-allow-record-in-ci (or {ALLOW_CI_VARIABLE}=1) "
                "if recording here is meant",
                pytrace=False,
            )
    if options.get("fork") is not None and action != "play":
        pytest.fail(f"mcptape: fork= plays a fork of a recorded tape; record mode {mode} would record {tape} "
                    "instead (record it first, then play the fork with record mode none)", pytrace=False)
    return tape, mode, action, options


@pytest.fixture
def mcptape_server(request: pytest.FixtureRequest) -> Iterator[McptapeServer]:
    """The MCP server of this test, served from its tape (see the module docstring for the modes)."""
    from mcptape.api.serving import replay  # the library: only a test that uses the fixture loads it

    tape, mode, action, options = _plan(request)
    if action == "record":
        tape.parent.mkdir(parents=True, exist_ok=True)
        tape.unlink(missing_ok=True)  # `all` re-records: a run that fails midway leaves no stale tape
    lab = {key: value for key, value in options.items() if key != "tape" and value is not None}
    if isinstance(lab.get("faults"), str):
        lab["faults"] = [lab["faults"]]
    if "server" in lab:
        lab["server"] = [str(word) for word in lab["server"]]
    served = None
    try:
        # Recording in CI was refused above, in the plugin's words (the option that allows it).
        with replay(tape, record_mode=mode, allow_record_in_ci=True, **lab) as served:
            yield McptapeServer(tape, served.action, served.argv, url=served.url)
    except McptapeError as e:
        # Before the test: the marker asks what play cannot do (a bad fault rule, an unreadable tape).
        # After it: what the replay found (a miss the client swallowed, a recording that failed),
        # which a test that did not pass has said already, or caused.
        if served is None or request.node.stash.get(_CALL_PASSED, False):
            pytest.fail(f"mcptape: {e}", pytrace=False)
    if served is not None and action != "record" and request.node.stash.get(_CALL_PASSED, False):
        _note_unused(request, tape, served.reports)


def _note_unused(request: pytest.FixtureRequest, tape: Path, reports: list[PlayReport]) -> None:
    """Recordings a passing test never asked for, for the end of the run (HTTP: a recording used by
    any client session was used)."""
    if not reports:
        return  # the test never started its client
    unused = sorted(set.intersection(*(set(r.unused) for r in reports)))
    if unused:
        request.config.stash[_UNUSED_KEY].append((request.node.nodeid, str(tape), unused))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    unused = config.stash.get(_UNUSED_KEY, [])
    if not unused:
        return
    terminalreporter.section("mcptape: recordings no test used")
    for nodeid, tape, calls in unused:
        terminalreporter.write_line(f"{nodeid}: {tape}: {len(calls)} recorded call(s) never asked")
        for call in calls:
            terminalreporter.write_line(f"    {call}")
    if config.getoption("--mcptape-fail-unused"):
        terminalreporter.write_line("mcptape: failing the run (--mcptape-fail-unused)")
    else:
        terminalreporter.write_line("mcptape: re-record with --mcptape-record-mode=all, or --mcptape-fail-unused to fail on them")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    unused = session.config.stash.get(_UNUSED_KEY, [])
    if session.config.getoption("--mcptape-fail-unused") and unused and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
