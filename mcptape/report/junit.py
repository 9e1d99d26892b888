"""JUnit XML rendering of a RunReport: sessions as test cases, so any CI system lists them.

Reads verdict/model.py and surface_notes.py. Drifted sessions are <failure> (message: the headline,
the drift that decided the exit), sessions that could not run or leaked a secret are <error>; each
server's context cost and coverage are the suite's <properties>. `mcptape ci` writes it through
the outlet (publish/outlet.py), which verifies it first. Every text from a tape or a server passes
logsafe.escape_controls: a control character is not even allowed in XML 1.0 (a CI system would
reject the whole file), and a hidden one would hide in the CI system's test view.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from mcptape.logsafe import escape_controls
from mcptape.report import surface_notes
from mcptape.verdict.model import RunReport, SessionResult

_FAILING = ("output", "structural")
_ERRORS = ("error", "secret")


def _text(text: str) -> str:
    return escape_controls(text)


def _line(text: str) -> str:
    """An attribute: one line, every control and hidden character an escape."""
    return escape_controls(text.splitlines()[0] if text else "", lines=False)


def _case(suite: ET.Element, session: SessionResult, classname: str) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        name=_line(session.name),
        classname=classname,
        time=f"{session.duration_s or 0:.3f}",
    )
    first = session.first_drift_line() or ""
    if session.verdict in _FAILING:
        details = []
        if session.diff is not None:
            details = [d.one_line(session.name) for d in session.diff.drifts]
        details += session.notes
        failure = ET.SubElement(
            case,
            "failure",
            message=_line(first) if first else f"{session.verdict} drift",
            type=f"{session.verdict}_drift",
        )
        failure.text = _text("\n".join(details) + ("\naccept with: mcptape ci --update-golden" if details else ""))
    elif session.verdict in _ERRORS:
        error = ET.SubElement(
            case,
            "error",
            message=_line(session.error or session.verdict),
            type="secret_leak" if session.verdict == "secret" else "could_not_run",
        )
        error.text = _text(session.error or "")
    if session.notes and session.verdict not in _FAILING:
        ET.SubElement(case, "system-out").text = _text("\n".join(session.notes))


def junit_xml(report: RunReport) -> str:
    """The report as a JUnit XML document (one <testsuite> named after the config file)."""
    suites = ET.Element("testsuites", name="mcptape")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"mcptape ci ({report.config})" + (f" shard {report.shard}" if report.shard else ""),
        tests=str(len(report.sessions)),
        failures=str(sum(s.verdict in _FAILING for s in report.sessions)),
        errors=str(sum(s.verdict in _ERRORS for s in report.sessions)),
        skipped="0",
        time=f"{sum(s.duration_s or 0 for s in report.sessions):.3f}",
    )
    surface = surface_notes.costs(report), surface_notes.coverage(report)
    if surface[0] or surface[1]:  # what every report gives: each server's context cost and coverage
        properties = ET.SubElement(suite, "properties")
        for cost in surface[0]:
            ET.SubElement(properties, "property", name=_line(f"mcptape.context_cost.{cost.server}"),
                          value=_line(surface_notes.cost_words(cost)))
        for cov in surface[1]:
            ET.SubElement(properties, "property", name=_line(f"mcptape.coverage.{cov.server}"),
                          value=_line(surface_notes.coverage_words(cov)))
    classname = "mcptape." + report.config.rsplit(".", 1)[0].replace(" ", "_")
    for session in report.sessions:
        _case(suite, session, classname)
    if report.orphans:
        ET.SubElement(suite, "system-out").text = _text("golden tapes without a session: " + ", ".join(report.orphans))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
