"""The pytest plugin (entry point `pytest11: mcptape`): tests of an agent run against a tape, offline.

Owns the marker `@pytest.mark.mcptape(tape=..., server=[...] | url=...)`, the fixture
`mcptape_server` (the argv or URL a test's MCP client connects to), the record modes
(`--mcptape-record-mode`, ini `mcptape_record_mode`, env `MCPTAPE_RECORD_MODE`, as vcrpy's and
pytest-recording's) and the end-of-session report of recordings no test used. Serving a tape is
`mcptape play`'s, recording `mcptape rec`'s, going live for what a tape lacks `play --fallback`'s:
the fixture only says which of them runs, so a test's client talks to the same processes a user
would start by hand.

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
heavy: no mcptape module at load time, the SDK only when a test asks `stdio_parameters()`.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

RECORD_MODES = ("none", "once", "new_episodes", "all")
MODE_VARIABLE = "MCPTAPE_RECORD_MODE"
ALLOW_CI_VARIABLE = "MCPTAPE_ALLOW_RECORD_IN_CI"
TAPE_SUFFIX = ".tape.jsonl"  # tape/format.py's; repeated here to keep the plugin's load free of mcptape
LISTEN_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
MARKER_ARGS = ("tape", "server", "url", "lenient", "ignore_args", "match_on", "allow_reuse", "faults", "fault_seed",
               "pace", "fork")
_UNUSED_KEY = pytest.StashKey[list[tuple[str, str, list[str]]]]()
_CALL_FAILED = pytest.StashKey[bool]()


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


def record_mode(config: pytest.Config) -> str:
    """The record mode: the option, else MCPTAPE_RECORD_MODE, else the ini setting, else none."""
    from mcptape import environment  # a few lines of stdlib: the plugin's load stays light

    mode = config.getoption("--mcptape-record-mode") or environment.get(MODE_VARIABLE) or config.getini("mcptape_record_mode")
    mode = str(mode or "none").strip()
    if mode not in RECORD_MODES:
        raise pytest.UsageError(f"mcptape record mode {mode!r}: expected one of {', '.join(RECORD_MODES)}")
    return mode


def default_tape(test_file: Path, test_name: str) -> Path:
    """`tapes/<test module>/<test name>.tape.jsonl` beside the test file (a parametrized id kept readable)."""
    safe = re.sub(r"[^\w.\-\[\]]+", "_", test_name).strip("_") or "test"
    return test_file.parent / "tapes" / test_file.stem / f"{safe}{TAPE_SUFFIX}"


def _mcptape() -> list[str]:
    return [sys.executable, "-m", "mcptape"]


@dataclass
class McptapeServer:
    """What a test's MCP client connects to: `command` (stdio argv) or `url` (streamable HTTP).

    In replay the command is `mcptape play TAPE`: no live server is needed at all.
    """

    tape: Path
    mode: str  # what this test does: "play", "record" or "fallback"
    command: list[str] = field(default_factory=list)
    url: str | None = None
    report_path: Path | None = None  # play --report, read after the test

    def stdio_parameters(self, **kwargs: Any) -> Any:
        """The official SDK's `StdioServerParameters` for `command` (needs `pip install mcp`)."""
        try:
            from mcp import StdioServerParameters
        except ImportError as e:
            raise RuntimeError("stdio_parameters() needs the official MCP SDK: pip install mcp") from e
        return StdioServerParameters(command=self.command[0], args=self.command[1:], **kwargs)


def _plan(request: pytest.FixtureRequest) -> tuple[Path, str, dict[str, Any]]:
    """The tape, what to do with it (play, record, fallback) and the marker's options."""
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
    if mode == "none" or (mode == "once" and exists):
        action = "play"
    elif mode == "new_episodes" and exists:
        action = "fallback"
    else:
        action = "record"
    if action == "play" and not exists:
        pytest.fail(
            f"mcptape: no tape at {tape} (record mode none plays only); record it with "
            "`pytest --mcptape-record-mode=once`",
            pytrace=False,
        )
    if action != "play":
        if not options.get("server") and not options.get("url"):
            pytest.fail(f"mcptape: recording {tape} needs the live server: @pytest.mark.mcptape(server=[...]) or url=...", pytrace=False)
        from mcptape import environment

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
    if action != "record":
        _check_play_options(options)
    return tape, action, options


def _check_play_options(options: dict[str, Any]) -> None:
    """The marker's play options checked as `mcptape play` checks them, before play starts: a typo in
    `faults=` or `pace=` fails the test's setup naming the marker, where play's exit 3 would reach
    the test's client only as a closed connection."""
    from mcptape.errors import McptapeError  # at setup, not at the plugin's load (module docstring)
    from mcptape.replay.faults import parse_faults
    from mcptape.replay.pacing import parse_pace

    problem: tuple[str, str] | None = None  # (the argument, why): failed outside the except blocks,
    faults = options.get("faults") or ()     # so the test's error is the marker's alone, not a chain
    try:
        parse_faults([str(rule) for rule in ([faults] if isinstance(faults, str) else faults)])
    except McptapeError as e:
        problem = "faults", str(e)
    except TypeError:
        problem = "faults", "a rule (a string) or a list of rules such as ['tool=add,error=-32000:quota']"
    if problem is None and options.get("pace"):
        try:
            parse_pace(str(options["pace"]))
        except McptapeError as e:
            problem = "pace", str(e)
    seed = options.get("fault_seed")
    if problem is None and seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        problem = "fault_seed", "an integer: the seed of the faults' draws (the same seed, the same draws)"
    if problem is None and options.get("match_on") not in (None, "params", "name"):
        problem = "match_on", "'params' (the default) or 'name'"
    if problem is not None:
        argument, why = problem
        pytest.fail(f"@pytest.mark.mcptape({argument}={options[argument]!r}): {why}", pytrace=False)


def _fork(tape: Path, spec: Any, where: Path) -> Path:
    """`mcptape fork` of `tape` per the marker's `fork=` spec, into `where`; the fork's path."""
    if not isinstance(spec, dict) or not isinstance(spec.get("at"), int):
        pytest.fail('mcptape: fork= takes a dict such as {"at": 3, "error": "-32000:quota"} '
                    '(or "result": {...}, "drop": True; "cut": True)', pytrace=False)
    out = where / f"fork{TAPE_SUFFIX}"
    argv = [*_mcptape(), "fork", str(tape), "--at", str(spec["at"]), "-o", str(out)]
    if "error" in spec:
        argv.append(f"--error={spec['error']}")  # joined: a code such as -32000 would read as an option
    elif "result" in spec:
        argv.append(f"--result={json.dumps(spec['result'])}")
    elif spec.get("drop"):
        argv.append("--drop")
    if spec.get("cut"):
        argv.append("--cut")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"mcptape: fork= {spec!r}: {done.stderr.strip()}", pytrace=False)
    return out


def _play_options(options: dict[str, Any]) -> list[str]:
    argv: list[str] = []
    faults = options.get("faults") or ()
    for rule in [faults] if isinstance(faults, str) else faults:
        argv += ["--fault", str(rule)]
    if options.get("fault_seed") is not None:
        argv += ["--fault-seed", str(int(options["fault_seed"]))]
    if options.get("pace"):
        argv += ["--pace", str(options["pace"])]
    if options.get("lenient"):
        argv.append("--lenient")
    for path in options.get("ignore_args") or ():
        argv += ["--ignore-arg", str(path)]
    if options.get("match_on"):
        argv += ["--match-on", str(options["match_on"])]
    if options.get("allow_reuse"):
        argv.append("--allow-reuse")
    return argv


@pytest.fixture
def mcptape_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McptapeServer]:
    """The MCP server of this test, served from its tape (see the module docstring for the modes)."""
    tape, action, options = _plan(request)
    server = [str(word) for word in options.get("server") or ()]
    url = options.get("url")
    scratch = tmp_path_factory.mktemp("mcptape")
    report = scratch / "play-report.json"
    played = _fork(tape, options["fork"], scratch) if options.get("fork") is not None else tape
    if action == "record":
        tape.parent.mkdir(parents=True, exist_ok=True)
        tape.unlink(missing_ok=True)  # `all` re-records: a run that fails midway leaves no stale tape
    if url:
        yield from _http(played, action, str(url), options, report)
    else:
        if action == "record":
            command = [*_mcptape(), "rec", "--out", str(tape), "--name", tape.name.removesuffix(TAPE_SUFFIX), "--", *server]
        elif action == "fallback":
            command = [*_mcptape(), "play", str(tape), *_play_options(options), "--report", str(report), "--fallback", "--", *server]
        else:
            command = [*_mcptape(), "play", str(played), *_play_options(options), "--report", str(report)]
        yield McptapeServer(tape, action, command, report_path=None if action == "record" else report)
    if action != "record":
        _after_replay(request, tape, report)


def _http(tape: Path, action: str, url: str, options: dict[str, Any], report: Path) -> Iterator[McptapeServer]:
    """A streamable HTTP endpoint for the test: play --listen of the tape (with --fallback-url `url` in
    new_episodes), or rec --listen in front of `url`."""
    if action == "record":  # the recording proxy forwards each path as it is: the client asks the server's
        argv = [*_mcptape(), "rec", "--listen", "127.0.0.1:0", "--upstream", url, "--out", str(tape),
                "--name", tape.name.removesuffix(TAPE_SUFFIX)]
        path = urlsplit(url).path or "/"
    else:
        argv = [*_mcptape(), "play", str(tape), *_play_options(options), "--report", str(report), "--listen", "127.0.0.1:0"]
        if action == "fallback":
            argv += ["--fallback-url", url]
        path = "/mcp"
    with _Listening(argv, path) as endpoint:
        yield McptapeServer(tape, action, [], url=endpoint, report_path=None if action == "record" else report)


class _Listening:
    """Run an `mcptape ... --listen 127.0.0.1:0` process; its URL (the port it says, `path`) read off
    its stderr; SIGINT to stop, so it writes its tape's footer or its report."""

    def __init__(self, argv: list[str], path: str) -> None:
        self.argv = argv
        self.path = path
        self.stderr: list[str] = []
        self._found = threading.Event()
        self.url = ""

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + LISTEN_TIMEOUT
        while not self._found.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                pytest.fail(f"mcptape: {' '.join(self.argv[2:4])} did not start listening: {''.join(self.stderr)}", pytrace=False)
        return self.url

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            found = re.search(r"http://127\.0\.0\.1:\d+", line)  # the first URL is its own
            if found and not self.url:
                self.url = found.group(0) + self.path
                self._found.set()

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


def _after_replay(request: pytest.FixtureRequest, tape: Path, report: Path) -> None:
    """After a replayed test that passed: a miss the client swallowed still fails it; unused recordings
    are noted. A test that failed already said what went wrong (a miss is an error its client saw)."""
    if not report.exists() or request.node.stash.get(_CALL_FAILED, True):
        return  # the test never started its client, or it failed (its unused recordings say nothing)
    sessions = json.loads(report.read_text(encoding="utf-8")).get("sessions", [])
    misses = [m for s in sessions for m in s.get("misses", [])]
    unused = sorted({u for s in sessions for u in s.get("unused", [])}) if sessions else []
    if len(sessions) > 1:  # HTTP: a recording used by any session was used
        unused = sorted(set.intersection(*(set(s.get("unused", [])) for s in sessions)))
    if unused:
        request.config.stash[_UNUSED_KEY].append((request.node.nodeid, str(tape), unused))
    if misses:
        lines = "\n".join(f"  {m['call']}: {m['why']}" for m in misses)
        pytest.fail(f"mcptape: {len(misses)} request(s) the tape {tape} could not answer:\n{lines}", pytrace=False)


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
