"""`mcptape check --strength [--json[=FILE]] [--seed N]`: how much of a real change the gate would catch.

Offline, like the rest of `check`: no server starts. The mutants of every session's golden tape are
judged as `ci` judges a fresh tape (mcptape/strength/), and the report says the score per session,
per tool and for the gate, every change that would pass with the config line that let it through
(or the fact that no session calls that tool), and what the config hides on purpose. `--json=FILE`
writes the same as JSON (`--json` alone: stdout, the text then on stderr).

Exit 0: measured, and at least `drift.min_strength` when the config sets one. Exit 3: a gate under
its minimum, or nothing to measure (no golden tape yet, a golden that fails against its own config):
3 is "could not run" — the gate cannot give the assurance it was configured to give — and never 1 or
2, which say the server changed (docs/strength.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcptape.commands.grammar import STDOUT, Output, check_outputs
from mcptape.commands.output import report_stream, write_output
from mcptape.config.load import LoadedConfig
from mcptape.errors import EXIT_OK, ConfigError
from mcptape.logsafe import safe_log
from mcptape.publish.outlet import Outlet
from mcptape.strength.measure import measure_config
from mcptape.strength.report import (
    SHOWN,
    Tally,
    below_minimum,
    render_json,
    render_text,
    summary_line,
    survivor_lines,
)
from mcptape.tape.format import Tape


def run_strength(loaded: LoadedConfig, *, json_report: str | None = None, seed: int = 0) -> int:
    check_outputs([Output("--json", json_report)], reads=[loaded.path])
    if json_report is not None and json_report != STDOUT:
        target = Path(json_report).resolve()
        if target.is_relative_to(loaded.golden_dir.resolve()):
            raise ConfigError(f"--json={json_report}: that is among the golden tapes, which the check reads",
                              hint="write the report elsewhere, e.g. --json=strength.json")
    measured = measure_config(loaded, seed=seed)
    minimum = loaded.config.drift.min_strength
    outlet = Outlet.for_config(loaded)
    stream = report_stream(json_report)
    outlet.show(render_text(measured), "strength report", escape=True, file=stream)
    if json_report is not None:
        write_output(json_report, render_json(measured, minimum), what="strength report", outlet=outlet)
    if Tally.of(measured.judged).score is None:
        raise ConfigError(f"{loaded.path}: no change could be derived from the golden tapes, so the gate's "
                          "strength cannot be measured",
                          hint="record the golden tapes with `mcptape ci --update-golden`, then check again")
    if minimum is not None:
        weak = below_minimum(measured, minimum, loaded.line_of("drift", "min_strength"))
        if weak is not None:
            raise ConfigError(weak)  # exit 3, said by cli.py as every config error is
    return EXIT_OK


def gate_strength(loaded: LoadedConfig, *, asked: bool) -> tuple[str | None, str | None]:
    """ci's part: the one line its report, summary and comment carry (None unless `--strength` or
    `drift.min_strength` asks for it), and what a gate under its minimum says (None if it is not)."""
    minimum = loaded.config.drift.min_strength
    if not asked and minimum is None:
        return None, None
    measured = measure_config(loaded)
    weak = below_minimum(measured, minimum, loaded.line_of("drift", "min_strength")) if minimum is not None else None
    return summary_line(measured), weak


def init_summary(loaded: LoadedConfig, recorded: list[dict[str, Any]] | None) -> str:
    """init's lines: the strength of the gate it just wrote, measured on its trial run's recording
    (the golden `ci --update-golden` will write), and the changes that would pass."""
    if recorded is None or not loaded.config.sessions:
        return "gate strength: not measured (no trial run recorded the session)\n"
    session = loaded.config.sessions[0]
    golden = Tape(header={"name": session.name}, events=recorded, event_lines=[i + 2 for i in range(len(recorded))])
    measured = measure_config(loaded, goldens={session.name: golden})
    survivors = survivor_lines(measured, limit=SHOWN)  # a server's words among them: escaped for the terminal
    return "".join(f"{safe_log(line)}\n" for line in [summary_line(measured), *(f"  passes: {s}" for s in survivors)])
