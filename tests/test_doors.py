"""Every door keeps the promises (issue 40): every command, with every flag alone, with each other
flag of its command and with all of them at once, on each kind of input, keeps the command line's
contract. Table-driven like tests/fuzz/: DOORS has a row for every flag build_parser declares (a
flag without one fails `test_every_flag_has_a_door`), saying the words it is given and what shows
that it was honoured.

The contract, checked on every run (`judge`):
- the exit code is 0-4, and nothing says "Traceback" or "internal error";
- no file that was there before the run has changed (the inputs, the tapes, the config), but those a
  flag declares it writes onto (`Door.changes`: `-u` the goldens);
- an in-process run leaves the process as it found it (the garbage collector on: the Python API and
  tests run commands in-process);
- no flag is accepted and then ignored: a run that gave a verdict (exit 0, 1, 2 or 4; 3 is "could
  not run", a refusal or a missing input) shows each of its flags' declared effect (`Door.effect`),
  where that effect can show on this input (`Door.on`). A flag whose effect no file, stream or exit
  code can show says why (`Door.unseen`), and that reason is in this table for review.

Inputs: a tape (edited by hand: it does not match its seal), a sealed tape, a config, a directory of
tapes, stdin (`-`) and a missing path, each given where the command takes its subject. Everything
runs in-process through `mcptape.cli.main` with its own streams, but `rec` (it forks: a subprocess);
`ci` runs on a config whose server cannot start (fast), and once per flag on the fixture calculator
server for the effects. Servers on the network (`--listen`, `--url`, `--fallback-url`, `--upstream`,
OTLP) are other tests' (tests/integration/test_http_live.py, test_telemetry.py): here they are refused
or fail at once, which is the contract too.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcptape.cli import build_parser
from mcptape.commands.grammar import Deprecated
from mcptape.publish.telemetry import REQUEST, RESPONSE, SESSION
from tests.conftest import CALC_SERVER, FIXTURES, ROOT, mcptape_command, user_env
from tests.in_process import run_main
from tests.otlp_receiver import OtlpReceiver

GOLDEN = FIXTURES / "example" / "tapes" / "arithmetic.tape.jsonl"
INPUTS = ("tape", "sealed", "config", "dir", "stdin", "missing")


@dataclass
class Run:
    """One command run: what a person sees of it, and the files it left."""

    argv: list[str]
    code: int
    out: str
    err: str
    work: Path
    before: dict[str, str]  # path -> sha256 of every file before the run
    after: dict[str, str] = field(default_factory=dict)
    traces: int = 0  # OTLP export requests the loopback receiver got during the run
    leftover: str = ""  # process state an in-process run left changed (the Python API runs commands in-process)

    def wrote(self, name: str) -> bool:
        return name in self.after and self.after[name] != self.before.get(name)

    def said(self, text: str) -> bool:
        return text in self.out or text in self.err


Effect = Callable[[Run, Run], bool]  # (the run with the flag, the same run without it) -> honoured?


def wrote(name: str) -> Effect:
    return lambda run, _: run.wrote(name)


def said(text: str) -> Effect:
    return lambda run, _: run.said(text)


def traced(run: Run, _: Run) -> bool:
    return run.traces > 0


def json_out(run: Run, _: Run) -> bool:
    try:
        json.loads(run.out)
    except ValueError:
        return False
    return True


def differs(run: Run, base: Run) -> bool:
    """Something a person sees is not what the run without the flag gave (a timing line aside)."""
    return (run.code, _steady(run.out), _steady(run.err)) != (base.code, _steady(base.out), _steady(base.err)) \
        or set(run.after) != set(base.after)


def _steady(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if " ms" not in line and " s)" not in line)


@dataclass(frozen=True)
class Door:
    """One flag: the words it is given (each a variant), and how a run shows it honoured it."""

    words: tuple[tuple[str, ...], ...]
    effect: Effect | None = None
    on: tuple[str, ...] = INPUTS  # the inputs whose verdict can show the effect
    unseen: str = ""  # why no effect can be checked, when effect is None
    changes: tuple[str, ...] = ()  # files it is meant to write onto
    fails: bool = False  # its plain use ends "could not run" here, honestly (an unsigned tape): the effect shows anyway


def door(*words: str | tuple[str, ...], effect: Effect | None = None, on: tuple[str, ...] = INPUTS,
         unseen: str = "", changes: tuple[str, ...] = (), fails: bool = False) -> Door:
    return Door(tuple((w,) if isinstance(w, str) else w for w in words), effect, on, unseen, changes, fails)


# -- the table: command -> flag -> door ------------------------------------------------------------

DOORS: dict[str, dict[str, Door]] = {
    "diff": {
        "--config": door(("-c", "mcptape.yml"), effect=differs, on=("tape",)),  # its drift/normalize rules
        "--allow-edited": door("--allow-edited", effect=differs, on=("tape",)),  # the edited tape is read
        "--raw": door("--raw", unseen="no normalization: the sweep's tapes differ in no value a rule changes"),
        "--conformance": door("--conformance", unseen="the fixture tapes conform; tests/conformance/test_check.py shows findings"),
        "--json": door("--json", "--json=verdict.json", effect=lambda r, _: json_out(r, _) or r.wrote("verdict.json")),
        "--html": door("--html=pair.html", "--html", effect=wrote("pair.html"), on=("tape", "sealed")),
    },
    "ls": {
        "--json": door("--json", "--json=list.json", effect=lambda r, _: json_out(r, _) or r.wrote("list.json")),
    },
    "show": {
        "--full": door("--full", effect=differs, on=("tape", "sealed")),
        "--json": door("--json", "--json=events.json", effect=lambda r, _: json_out(r, _) or r.wrote("events.json")),
        "--html": door("--html=tape.html", "--html", effect=wrote("tape.html"), on=("tape", "sealed")),
    },
    "verify": {
        # The sweep's tapes are not signed: the honest outcome is exit 3, saying the signature was checked.
        "--signature": door("--signature", effect=said("signature"), on=("sealed",), fails=True),
        "--allowed-signers": door(("--allowed-signers", "allowed_signers"), effect=said("signature"), on=("sealed",),
                                  fails=True),
    },
    "sign": {
        "--key": door(("--key", "missing-key"), effect=said("missing-key")),
    },
    "fork": {
        "--at": door(("--at", "1"), ("--at", "3"), effect=differs, on=("sealed",)),
        "--result": door(("--result", '{"content":[]}'), ("--result", "@result.json"), effect=wrote("fork.tape.jsonl")),
        "--error": door(("--error", "-32603:boom"), ("--error=-32000",), effect=wrote("fork.tape.jsonl")),
        "--drop": door("--drop", effect=wrote("fork.tape.jsonl")),
        "--cut": door("--cut", effect=differs, on=("sealed",)),
        "--out": door(("-o", "other.tape.jsonl"), effect=wrote("other.tape.jsonl")),
    },
    "import": {
        "--out": door(("-o", "imported.tape.jsonl"), effect=wrote("imported.tape.jsonl")),
        "--name": door(("--name", "renamed"), effect=wrote("tapes/renamed.tape.jsonl")),
        "--session": door(("--session", "traced"), effect=wrote("tapes/traced.tape.jsonl")),
    },
    "check": {
        "--config": door(("-c", "mcptape.yml"), effect=said("mcptape.yml")),
        "--allow-unset": door("--allow-unset", unseen="the sweep's config sets every ${VAR} it names"),
        "--surface": door("--surface", effect=differs, on=("config",)),
        "--strength": door("--strength", effect=differs, on=("config",)),
        # Alone they are refused, naming what they belong to: the honest outcome (an option that needs another).
        "--json": door("--json", "--json=strength.json", effect=said("--strength"), on=("config",), fails=True),
        "--seed": door(("--seed", "3"), effect=said("--strength"), on=("config",), fails=True),
    },
    "merge": {
        "--config": door(("-c", "mcptape.yml"), unseen="orders sessions and scrubs as the config says; tests/ci/test_merge.py"),
        "--json": door("--json", "--json=merged.json", effect=lambda r, _: json_out(r, _) or r.wrote("merged.json")),
        "--summary": door("--summary", "--summary=merged.md", effect=lambda r, _: "# " in r.out or r.wrote("merged.md")),
        "--html": door("--html=merged.html", "--html", effect=wrote("merged.html")),
    },
    "comment": {
        # No GitHub here (no token): every run ends "could not run", which is the contract. The
        # comment itself is tests/publish/test_github.py's, against tests/github_fake.py.
        "--body": door(("--body", "report.json"), unseen="posting needs GitHub: tests/publish/test_github.py"),
        "--pr": door(("--pr", "7"), unseen="posting needs GitHub: tests/publish/test_github.py"),
        "--repo": door(("--repo", "acme/calc"), unseen="posting needs GitHub: tests/publish/test_github.py"),
        "--head-sha": door(("--head-sha", "abc123"), unseen="posting needs GitHub: tests/publish/test_github.py"),
        "--marker": door(("--marker", "mcptape.yml"), unseen="posting needs GitHub: tests/publish/test_github.py"),
    },
    "play": {
        "--lenient": door("--lenient", unseen="no client request misses on empty stdin; tests/commands/test_play.py"),
        "--ignore-arg": door(("--ignore-arg", "a"), ("--ignore-arg", "-x"),
                             unseen="no client request to match on empty stdin; tests/replay/test_engine.py"),
        "--match-on": door(("--match-on", "name"), unseen="no client request to match on empty stdin"),
        "--allow-reuse": door("--allow-reuse", unseen="no client request to match on empty stdin"),
        "--allow-edited": door("--allow-edited", effect=differs, on=("tape",)),
        "--keep-placeholders": door("--keep-placeholders", unseen="no placeholder is served on empty stdin; "
                                                                  "tests/test_placeholders.py"),
        "--listen": door(("--listen", "nohost"), unseen="an address that cannot listen: refused (exit 3)"),
        "--allow-host": door(("--allow-host", "example.test"), unseen="refused without --listen; "
                             "tests/integration/test_http_live.py"),
        "--fallback": door("--fallback", unseen="refused without the command after `--`; tests/commands/test_play.py"),
        "--fallback-url": door(("--fallback-url", "http://127.0.0.1:9/mcp"), unseen="starts the live side on the "
                                                                                    "first miss; none on empty stdin"),
        "--live-tools": door(("--live-tools", "add"), unseen="refused without a live server; tests/integration/test_agent_lab.py"),
        "--pace": door(("--pace", "x2"), effect=said("--pace"), on=("sealed",)),  # a golden carries no timing: said
        "--fault": door(("--fault", "tool=add,error=-32000"), unseen="no request to fault on empty stdin; "
                                                                    "tests/integration/test_agent_lab.py"),
        "--fault-seed": door(("--fault-seed", "7"), unseen="refused without --fault"),
        "--json": door("--json=replay.json", effect=wrote("replay.json")),
        "--report": door(("--report", "old.json"), effect=wrote("old.json")),
        "--otel": door("--otel", effect=traced, on=("sealed",)),
        "--otel-payloads": door("--otel-payloads", effect=traced, on=("sealed",)),
    },
    "ci": {
        "--config": door(("-c", "mcptape.yml"), unseen="every run gives it; the default is mcptape.yml"),
        "--session": door(("--session", "arithmetic"), ("--session", "nope"), effect=differs, on=("config",)),
        "--shard": door(("--shard", "1/2"), ("--shard", "3/2"), unseen="one session: every shard of it is the same run"),
        "--jobs": door(("-j", "2"), ("--jobs", "-1"), unseen="how many sessions run at once"),
        "--update-golden": door("-u", effect=said("golden tapes:"), changes=("tapes/arithmetic.tape.jsonl",)),
        "--allow-update-in-ci": door("--allow-update-in-ci", unseen="refused without -u; tests/test_ci_modes.py"),
        "--allow-edited": door("--allow-edited", unseen="the goldens match their seals; tests/integration/test_seal_e2e.py"),
        "--strength": door("--strength", effect=said("strength"), on=("config",)),
        "--baseline": door(("--baseline", "HEAD"), unseen="needs a git repository: tests/integration/test_ci_baseline.py"),
        "--against": door(("--against", "calc"), effect=said("vs `calc`"), on=("config",)),
        "--reference-runs": door(("--reference-runs", "2"), unseen="refused outside baseline/against"),
        "--latency": door(("--latency", "5"), unseen="refused outside baseline/against"),
        "--repeat": door(("--repeat", "2"), effect=said("--repeat 2"), on=("config",)),
        "--json": door("--json", "--json=r.json", effect=lambda r, _: json_out(r, _) or r.wrote("r.json")),
        "--junit": door("--junit=r.xml", effect=wrote("r.xml")),
        "--summary": door("--summary=r.md", effect=wrote("r.md")),
        "--sarif": door("--sarif=r.sarif", effect=wrote("r.sarif")),
        "--html": door("--html=r.html", "--html", effect=wrote("r.html")),
        "--out-dir": door(("--out-dir", "fresh"), effect=wrote("fresh/arithmetic.tape.jsonl")),
        "--otel": door("--otel", effect=traced, on=("config",)),
        "--otel-payloads": door("--otel-payloads", effect=traced, on=("config",)),
    },
    "init": {
        "--out": door(("-o", "new.yml"), unseen="init lists a live server: tests/integration/test_init.py"),
        "--name": door(("--name", "x"), unseen="init lists a live server: tests/integration/test_init.py"),
        "--protocol": door(("--protocol", "2025-11-25"), unseen="init lists a live server"),
        "--no-probe": door("--no-probe", unseen="init lists a live server"),
        "--safe": door("--safe", effect=said("deprecated")),
        "--no-trial": door("--no-trial", unseen="init lists a live server"),
        "--timeout": door(("--timeout", "5"), ("--timeout", "-1"), unseen="init lists a live server: "
                          "tests/integration/test_init.py"),
        "--env": door(("-e", "HOME"), unseen="init lists a live server"),
        "--url": door(("--url", "http://127.0.0.1:9/mcp"), unseen="nothing listens there: exit 3"),
        "--header": door(("-H", "X-A: b"), unseen="refused without --url"),
    },
    "comment-deprecated": {},
    "rec": {
        "--out": door(("-o", "rec.tape.jsonl"), effect=wrote("rec.tape.jsonl")),
        "--name": door(("--name", "named"), effect=wrote("tapes/named.tape.jsonl")),
        "--listen": door(("--listen", "nohost"), unseen="an address that cannot listen: refused (exit 3)"),
        "--upstream": door(("--upstream", "http://127.0.0.1:9/mcp"), unseen="refused without --listen"),
        "--allow-host": door(("--allow-host", "example.test"), unseen="refused without --listen"),
        "--otel": door("--otel", effect=traced),
        "--otel-payloads": door("--otel-payloads", effect=traced),
    },
    "schema": {},
}
DOORS["comment"]["--key"] = door(("--key", "mcptape.yml"), effect=said("deprecated"))
del DOORS["comment-deprecated"]

# Where each command takes its subject, and the rest it always needs: {input} is the input kind's path.
SUBJECT: dict[str, tuple[str, ...]] = {
    "diff": ("golden.tape.jsonl", "{input}"),
    "ls": ("{input}",),
    "show": ("{input}",),
    "verify": ("{input}",),
    "sign": ("{input}",),
    "fork": ("{input}",),
    "import": ("{input}",),
    "check": ("{input}",),
    "merge": ("{input}",),
    "comment": ("--body", "{input}"),
    "play": ("{input}",),
    "ci": ("-c", "{input}"),
    "init": ("--", sys.executable, "-c", "raise SystemExit(3)"),
    "rec": ("--", sys.executable, "-c", "import sys; sys.stdin.read()"),  # ends when its client does: no race
    "schema": (),
}
# What a command needs whatever the flags under test: given unless a flag of the same group is chosen.
REQUIRED: dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = {
    "fork": ((("--at",), ("--at", "2")), (("-o", "--out"), ("-o", "fork.tape.jsonl")),
             (("--result", "--error", "--drop"), ("--drop",))),
    "init": ((("-o", "--out"), ("-o", "init.yml")),),  # mcptape.yml is there: init never writes over it
}
INPUT_PATHS = {"tape": "edited.tape.jsonl", "sealed": "golden.tape.jsonl", "config": "mcptape.yml",
               "dir": "tapes", "stdin": "-", "missing": "missing.tape.jsonl"}
# Per command, the input its subject naturally is: effects are checked there, and pairs run there.
NATURAL = {"diff": "tape", "ls": "dir", "show": "sealed", "verify": "sealed", "sign": "sealed", "fork": "sealed",
           "import": "trace", "check": "config", "merge": "report", "comment": "report", "play": "sealed",
           "ci": "config", "init": "config", "rec": "config", "schema": "config"}
EXTRA_INPUTS = {"trace": "trace.json", "report": "report.json"}


# -- the sandbox ------------------------------------------------------------------------------------


def _trace() -> dict[str, object]:
    """An OTLP/JSON trace of one exchange, as --otel-payloads exports it (session `traced`)."""
    def attr(key: str, value: str) -> dict[str, object]:
        return {"key": key, "value": {"stringValue": value}}

    spans = [
        {"traceId": "ab" * 16, "spanId": "0000000000000001", "name": "session", "startTimeUnixNano": "1",
         "endTimeUnixNano": "9", "attributes": [attr(SESSION, "traced")]},
        {"traceId": "ab" * 16, "spanId": "0000000000000002", "parentSpanId": "0000000000000001", "name": "tools/list",
         "startTimeUnixNano": "2", "endTimeUnixNano": "3",
         "attributes": [attr(REQUEST, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'),
                        attr(RESPONSE, '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}')]},
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{command}]
sessions:
  - name: arithmetic
    server: calc
    steps:
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
      - call: echo
        arguments: {{text: "hello, tape"}}
  - name: surface
    server: calc
    steps:
      - list_tools
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The files every run starts from (copied afresh for each run)."""
    root = tmp_path_factory.mktemp("doors")
    shutil.copy(GOLDEN, root / "golden.tape.jsonl")
    (root / "edited.tape.jsonl").write_text(GOLDEN.read_text(encoding="utf-8").replace('"text":"5"', '"text":"6"'),
                                            encoding="utf-8")
    (root / "tapes").mkdir()
    shutil.copy(GOLDEN, root / "tapes" / "arithmetic.tape.jsonl")
    quoted = ", ".join(json.dumps(w) for w in ["/nonexistent/mcptape-door-server"])
    (root / "mcptape.yml").write_text(CONFIG.format(command=quoted), encoding="utf-8")
    (root / "trace.json").write_text(json.dumps(_trace()), encoding="utf-8")
    (root / "result.json").write_text('{"content":[{"type":"text","text":"forked"}]}', encoding="utf-8")
    (root / "allowed_signers").write_text("", encoding="utf-8")
    from mcptape.verdict.model import RunReport

    (root / "report.json").write_text(json.dumps(RunReport(config="mcptape.yml").to_dict()), encoding="utf-8")
    live = root.parent / f"{root.name}-live"  # the same, with the calculator server that answers
    shutil.copytree(root, live)
    (live / "mcptape.yml").write_text(CONFIG.format(command=", ".join(json.dumps(w) for w in
                                                                       [sys.executable, str(CALC_SERVER)])),
                                      encoding="utf-8")
    yield root


def _digests(work: Path) -> dict[str, str]:
    return {p.relative_to(work).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in work.rglob("*") if p.is_file()}


def _sandbox(template: Path, live: bool, tmp: Path) -> Path:
    source = template.parent / f"{template.name}-live" if live else template
    work = tmp / f"run{next(_COUNTER)}"
    shutil.copytree(source, work)
    return work


_COUNTER = itertools.count()


def _argv(command: str, input_kind: str, flags: list[tuple[str, ...]], *, flags_first: bool = False) -> list[str]:
    """The command line: the subject, then the flags (or, as people also type, the flags first)."""
    path = INPUT_PATHS.get(input_kind) or EXTRA_INPUTS[input_kind]
    subject = [w.replace("{input}", path) for w in SUBJECT[command]]
    words = [w for f in flags for w in f]
    given = {w.split("=")[0] for w in words}
    for group, default in REQUIRED.get(command, ()):
        if not given & set(group):
            subject += default
    if command in ("rec", "init") or flags_first:  # rec's and init's command line after `--` comes last
        return [command, *words, *subject]
    return [command, *subject, *words]


_RECEIVER: list[OtlpReceiver] = []  # the sweep's loopback OTLP receiver (OTEL_EXPORTER_OTLP_ENDPOINT)


def _run(argv: list[str], work: Path) -> Run:
    before = _digests(work)
    received = len(_RECEIVER[0].requests) if _RECEIVER else 0
    if argv[0] == "rec":  # rec forks and relays the real stdio: a process of its own
        done = subprocess.run(mcptape_command(*argv), cwd=work, capture_output=True, text=True, timeout=60,
                              env=user_env(PYTHONPATH=str(ROOT)), input="")
        run = Run(argv, done.returncode, done.stdout, done.stderr, work, before)
    else:
        run = _in_process(argv, work, before)
    run.after = _digests(work)
    run.traces = (len(_RECEIVER[0].requests) if _RECEIVER else 0) - received
    return run


def _in_process(argv: list[str], work: Path, before: dict[str, str]) -> Run:
    """`main(argv)` in `work` (tests/in_process.py), stdin empty."""
    ran = run_main(argv, work)
    run = Run(argv, ran.code, ran.out.decode("utf-8", "replace"), ran.err.decode("utf-8", "replace"), work, before)
    if ran.left_gc_off:
        run.leftover = "the garbage collector off"
    return run


# -- the property -----------------------------------------------------------------------------------


def judge(run: Run, doors: list[tuple[str, Door]], base: Run | None, input_kind: str) -> str | None:
    """What is wrong with `run`, or None (the module docstring's contract)."""
    if run.code not in (0, 1, 2, 3, 4):
        return f"exit {run.code}"
    for text in ("Traceback", "internal error"):
        if run.said(text):
            return f"said {text!r}: {run.err[-400:]}"
    if run.leftover:
        return f"left {run.leftover}"
    allowed = {c for _, d in doors for c in d.changes}
    changed = [p for p, digest in run.before.items() if run.after.get(p, digest) != digest and p not in allowed]
    if changed:
        return f"changed what was there before: {changed}"
    if base is None:
        return None
    if run.code == 3 and base.code != 3 and not all(d.fails for _, d in doors):
        return f"refused where it should work (alone, its plain use, on {input_kind}): {run.err.strip()[:300]}"
    for flag, d in doors:
        if (run.code != 3 or d.fails) and d.effect is not None and input_kind in d.on and not d.effect(run, base):
            return f"{flag} accepted (exit {run.code}) and not honoured"
    return None  # exit 3: could not run (a missing input), nothing was claimed


# -- the sweep ------------------------------------------------------------------------------------


def _flags(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: dict[str, argparse.Action] = {}
    for action in sub.choices[command]._actions:
        if action.option_strings and "-h" not in action.option_strings:
            long = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
            found[long] = action
    return found


def test_every_flag_has_a_door() -> None:
    """A flag added to build_parser without its row here fails: the sweep covers every door there is."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [(c, f) for c in sub.choices for f in _flags(c) if f not in DOORS.get(c, {})]
    assert missing == []
    assert all(d.effect is not None or d.unseen for flags in DOORS.values() for d in flags.values())
    assert any(isinstance(a, Deprecated) for a in _flags("init").values())  # the old spellings are doors too


@dataclass
class Tally:
    runs: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    codes: dict[int, int] = field(default_factory=dict)


def _sweep_command(command: str, template: Path, tmp: Path, tally: Tally) -> None:
    doors = DOORS[command]
    flags = list(doors)
    natural = NATURAL[command]
    inputs = list(INPUTS) + ([natural] if natural not in INPUTS else [])
    if command in ("rec", "init", "schema"):  # their subject is a server command, not a path
        inputs = [natural]
    # (input kind, flags chosen, whether the effects are checked (against the run without flags), on the
    # live server, flags before the subject). A flag's first variant is its plain use: where its effect
    # can show, it must show; the other variants are tries (a value with a dash, a bad value, a file).
    Item = tuple[str, list[tuple[str, tuple[str, ...]]], bool, bool, bool]
    plan: list[Item] = []
    for flag in flags:  # alone, each variant, on every input
        for number, words in enumerate(doors[flag].words):
            for kind in inputs:
                checked = number == 0 and doors[flag].effect is not None and kind in doors[flag].on
                plan.append((kind, [(flag, words)], checked, command in LIVE and kind == natural, False))
    for mode in MODES.get(command, ()):  # each flag in each mode: its effect, or a refusal naming it
        for flag in flags:
            if flag != mode and doors[flag].effect is not None and natural in doors[flag].on:
                plan.append((natural, [(mode, doors[mode].words[0]), (flag, doors[flag].words[0])], True, True, False))
    for a, b in itertools.combinations(flags, 2):  # with each other flag (first variants), on the natural input
        plan.append((natural, [(a, doors[a].words[0]), (b, doors[b].words[0])], False, False, True))
    for kind in inputs:  # all at once, before the subject as people also type them (`ls --json tapes/*`)
        plan.append((kind, [(f, doors[f].words[0]) for f in flags], False, False, True))

    def execute(kind: str, chosen: list[tuple[str, tuple[str, ...]]], live: bool, first: bool = False) -> Run:
        argv = _argv(command, kind, [words for _, words in chosen], flags_first=first)
        return _run(argv, _sandbox(template, live, tmp))

    def base_of(chosen: list[tuple[str, tuple[str, ...]]]) -> list[tuple[str, tuple[str, ...]]]:
        return [c for c in chosen if c[0] in MODES.get(command, ())][:1] if len(chosen) == 2 else []

    bases: dict[tuple[str, bool, str], Run] = {}
    for kind, chosen, checked, live, _ in plan:  # the runs without the flag under test (a mode's alone), once each
        key = (kind, live, "".join(f for f, _ in base_of(chosen)))
        if checked and key not in bases:
            bases[key] = execute(kind, base_of(chosen), live)
    tally.runs += len(bases)
    if command == "rec":  # processes of their own: side by side
        with ThreadPoolExecutor(max_workers=4) as pool:
            runs = list(pool.map(lambda item: execute(item[0], item[1], item[3], item[4]), plan))
    else:
        runs = [execute(kind, chosen, live, first) for kind, chosen, _, live, first in plan]
    for (kind, chosen, checked, live, _), run in zip(plan, runs, strict=True):
        moded = base_of(chosen)
        base = bases.get((kind, live, "".join(f for f, _ in moded))) if checked else None
        if moded:  # in a mode: refused with the flag named (exit 3), or honoured
            tested = [c for c in chosen if c not in moded]
            problem = judge(run, [], None, kind) or (
                None if run.code == 3 and tested[0][0] in run.err else judge(run, [(f, doors[f]) for f, _ in tested], base, kind))
        else:
            problem = judge(run, [(f, doors[f]) for f, _ in chosen], base, kind)
        tally.runs += 1
        tally.codes[run.code] = tally.codes.get(run.code, 0) + 1
        if problem is not None:
            tally.failures.append(f"mcptape {' '.join(run.argv)}  [{kind}]: {problem}")


# ci's modes other than golden: every flag with an effect is tried in each (issue 39: options accepted
# and ignored under --baseline/--against). --baseline needs git: tests/integration/test_ci_baseline.py.
MODES = {"ci": ("--against", "--repeat")}
LIVE = {"ci", "check"}  # on their natural input, these run the fixture calculator server (the effects need it)
SWEPT = ["diff", "ls", "show", "verify", "sign", "fork", "import", "check", "merge", "comment", "play", "ci",
         "init", "schema", "rec"]


@pytest.fixture
def sweep_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    """No CI, no GitHub, no machine's git config; --otel's traces to a loopback receiver, never the network."""
    for name in ("CI", "GITHUB_ACTIONS", "GITHUB_TOKEN", "MCPTAPE_GITHUB_TOKEN", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # the SDK's batch: sent at once, not after 5 s
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        _RECEIVER[:] = [receiver]
        try:
            yield receiver
        finally:
            _RECEIVER.clear()


@pytest.mark.parametrize("command", SWEPT)
def test_every_flag_alone_in_pairs_and_all_at_once_keeps_the_contract(
    command: str, template: Path, tmp_path: Path, sweep_env: OtlpReceiver
) -> None:
    tally = Tally()
    started = time.monotonic()
    _sweep_command(command, template, tmp_path, tally)
    tally.seconds = time.monotonic() - started
    print(f"\ndoors of {command}: {tally.runs} runs in {tally.seconds:.1f} s; exit codes {dict(sorted(tally.codes.items()))}")
    assert tally.failures == [], "\n".join(tally.failures[:40])
    assert set(tally.codes) <= {0, 1, 2, 3, 4}
    if DOORS[command]:
        assert 3 in tally.codes  # some combination was refused, or met a missing input: the sweep sees refusals


def test_the_property_catches_what_it_is_for(template: Path, tmp_path: Path) -> None:
    """judge() fails each way a door can break: a crash, an input written over, a flag ignored."""
    work = _sandbox(template, False, tmp_path)
    base = _run(["ls", "tapes"], work)
    assert judge(base, [], base, "dir") is None
    crashed = Run(["ls"], 3, "", "mcptape: internal error in ls: KeyError", work, {})
    assert judge(crashed, [], None, "dir") is not None
    overwritten = Run(["ls"], 0, "", "", work, {"golden.tape.jsonl": "a"}, {"golden.tape.jsonl": "b"})
    assert judge(overwritten, [], None, "dir") is not None
    ignored = _run(["ls", "tapes"], _sandbox(template, False, tmp_path))  # as if --json had been dropped
    assert judge(ignored, [("--json", DOORS["ls"]["--json"])], base, "dir") is not None
    honoured = _run(["ls", "tapes", "--json"], _sandbox(template, False, tmp_path))
    assert judge(honoured, [("--json", DOORS["ls"]["--json"])], base, "dir") is None
    refused = Run(["fork"], 3, "", "mcptape fork: error: argument --error: expected one argument", work, {})
    worked = Run(["fork"], 0, "", "", work, {})
    assert judge(refused, [("--error", DOORS["fork"]["--error"])], worked, "sealed") is not None  # typed as people do
