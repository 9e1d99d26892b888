"""OpenTelemetry export (mcptape/publish/telemetry.py): ci, rec and play sessions as traces, checked with the
SDK's in-memory exporter and, end to end, with a loopback OTLP/HTTP receiver (tests/otlp_receiver.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcptape.ci.session import RunContext, run_session
from mcptape.cli import main
from mcptape.config.load import load_config
from mcptape.errors import SecretLeak
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import SessionMeta, Telemetry
from mcptape.redact.redactor import make_redactor
from mcptape.tape.format import make_header, tape_bytes
from mcptape.tape.reader import read_tape
from tests.conftest import FIXTURES, ROOT, calc_command, mcptape_command, user_env
from tests.otlp_receiver import OtlpReceiver

EXAMPLE = FIXTURES / "example" / "mcptape.yml"
GOLDEN = FIXTURES / "example" / "tapes" / "arithmetic.tape.jsonl"
CLIENT_TRACE, CLIENT_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def _traced(payloads: bool = False) -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    return Telemetry(payloads=payloads, processor=SimpleSpanProcessor(exporter)), exporter


def _run_ci(config: Path, telemetry: Telemetry, session: str) -> str:
    loaded = load_config(config)
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir, telemetry=telemetry)
    [chosen] = [s for s in loaded.config.sessions if s.name == session]
    return str(run_session(ctx, chosen).result.verdict)


def echo_config(directory: Path, session: str, text: str, extra: str = "") -> Path:
    """A mcptape.yml whose one session calls the calc fixture's echo with `text` (and `extra` config)."""
    config = directory / "mcptape.yml"
    config.write_text(f"""\
version: 1
golden_dir: tapes
servers:
  calc:
    command: {json.dumps(calc_command())}
sessions:
  - name: {session}
    server: calc
    steps:
      - call: echo
        arguments: {{text: {json.dumps(text)}}}
""" + extra, encoding="utf-8")
    return config


def _by_name(spans: Any) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def test_a_ci_session_is_a_trace_of_steps_and_exchanges_with_the_conventions_attributes() -> None:
    telemetry, exporter = _traced()
    assert _run_ci(EXAMPLE, telemetry, "arithmetic") == "same"
    telemetry.close()
    spans = _by_name(exporter.get_finished_spans())
    session, step1, add, divide = (spans[n] for n in ("mcptape ci arithmetic", "step 1", "tools/call add",
                                                       "tools/call divide"))
    assert session.parent is None and dict(session.attributes or {}) == {
        "mcptape.command": "ci", "mcptape.session": "arithmetic", "network.transport": "pipe",
        "mcp.protocol.version": "2025-11-25", "mcptape.verdict": "same", "mcptape.server": "calc"}
    assert step1.parent is not None and step1.parent.span_id == session.context.span_id
    assert add.parent is not None and add.parent.span_id == step1.context.span_id
    assert spans["step 2"].context.span_id == divide.parent.span_id if divide.parent else False
    assert add.kind == SpanKind.CLIENT and add.status.status_code == StatusCode.UNSET
    assert dict(add.attributes or {}) == {
        "mcp.method.name": "tools/call", "jsonrpc.request.id": "3", "jsonrpc.protocol.version": "2.0",
        "network.transport": "pipe", "mcptape.dir": "c2s", "mcp.protocol.version": "2025-11-25",
        "mcptape.step": 1, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add"}  # no payload
    assert divide.status.status_code == StatusCode.ERROR
    assert (divide.attributes or {})["error.type"] == (divide.attributes or {})["rpc.response.status_code"] == "-32602"
    # Times are the wire's: each exchange lies within its step, each step within the session.
    for child, parent in ((add, step1), (step1, session), (divide, session)):
        assert parent.start_time <= child.start_time <= child.end_time <= parent.end_time  # type: ignore[operator]
    assert spans["initialize"].parent.span_id == session.context.span_id  # type: ignore[union-attr]


def test_payloads_only_when_asked_and_redacted_as_the_tape_is(tmp_path: Path) -> None:
    secret = "ACME-" + "K" * 24
    config = echo_config(tmp_path, "echo", f"token {secret}", 'redact:\n  patterns: ["ACME-[A-Z0-9]{24}"]\n')
    telemetry, exporter = _traced(payloads=True)
    _run_ci(config, telemetry, "echo")
    telemetry.close()
    echo = _by_name(exporter.get_finished_spans())["tools/call echo"]
    attrs = dict(echo.attributes or {})
    assert json.loads(str(attrs["mcptape.request"]))["params"]["name"] == "echo"
    assert json.loads(str(attrs["gen_ai.tool.call.result"]))["content"][0]["text"].startswith("token <REDACTED")
    assert not any(secret in str(v) for span in exporter.get_finished_spans() for v in (span.attributes or {}).values())


def test_a_payload_holding_a_known_secret_sends_nothing() -> None:
    secret = "s3cr3t-" + "q7" * 12
    telemetry, exporter = _traced(payloads=True)
    events = [(1_000, {"kind": "request", "dir": "c2s", "id": 1, "method": "tools/call",
                       "msg": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "t", "arguments": {"k": secret}}}}),
              (2_000, {"kind": "response", "dir": "s2c", "id": 1, "method": "tools/call",
                       "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}})]
    outlet = Outlet(make_redactor({"TOKEN": secret}))
    with pytest.raises(SecretLeak):
        telemetry.export(SessionMeta("ci", "leaky"), events, outlet)
    telemetry.close()
    assert exporter.get_finished_spans() == ()
    clean, exporter = _traced(payloads=False)  # the control: no payload, no leak
    clean.export(SessionMeta("ci", "leaky"), events, outlet)
    clean.close()
    assert {s.name for s in exporter.get_finished_spans()} == {"mcptape ci leaky", "tools/call t"}


def test_ci_exports_over_otlp_http_where_the_otel_variables_say(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        env = user_env(PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                       OTEL_SERVICE_NAME="calc-gate", OTEL_EXPORTER_OTLP_HEADERS="x-team=mcp")
        done = subprocess.run(mcptape_command("ci", "-c", str(EXAMPLE), "--otel"), capture_output=True, text=True,
                              env=env, timeout=120, cwd=EXAMPLE.parent)
        assert done.returncode == 0, done.stdout + done.stderr
        spans = receiver.spans()
    assert set(receiver.paths) == {"/v1/traces"} and receiver.headers[0]["x-team"] == "mcp"
    roots = {s["name"] for s in spans if not s.get("parentSpanId")}
    assert roots == {"mcptape ci surface", "mcptape ci arithmetic", "mcptape ci resources-and-prompts"}
    assert {s["resource"]["service.name"] for s in spans} == {"calc-gate"}
    prompt = next(s for s in spans if s["name"] == "prompts/get explain")
    assert prompt["attrs"]["gen_ai.prompt.name"] == "explain" and "mcptape.request" not in prompt["attrs"]
    read = next(s for s in spans if s["name"] == "resources/read")
    assert read["attrs"]["mcp.resource.uri"] == "calc://constants"


def _client_lines(tape: Path, traceparent: str | None) -> str:
    """The client requests of a tape, one `_meta.traceparent` added to each tools/call when given."""
    lines = []
    for ev in read_tape(tape).events:
        if ev.get("kind") in ("request", "notification") and ev.get("dir") == "c2s":
            msg = json.loads(json.dumps(ev["msg"]))
            if traceparent and msg.get("method") == "tools/call":
                msg["params"]["_meta"] = {"traceparent": traceparent}
            lines.append(json.dumps(msg))
    return "".join(line + "\n" for line in lines)


def test_play_keeps_a_clients_traceparent_as_the_parent_and_answers_as_recorded(tmp_path: Path) -> None:
    traceparent = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
    plain = subprocess.run(mcptape_command("play", str(GOLDEN)), input=_client_lines(GOLDEN, None),
                           capture_output=True, text=True, timeout=60, env=user_env(PYTHONPATH=str(ROOT)))
    with OtlpReceiver() as receiver:
        env = user_env(PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{receiver.endpoint}/custom/traces")
        traced = subprocess.run(mcptape_command("play", str(GOLDEN), "--otel"), input=_client_lines(GOLDEN, traceparent),
                                capture_output=True, text=True, timeout=60, env=env)
        spans = receiver.spans()
    # The context in _meta is no miss: every call answered, the same answers as without it.
    assert traced.returncode == plain.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    assert set(receiver.paths) == {"/custom/traces"}
    add = next(s for s in spans if s["name"] == "tools/call add")
    assert add["traceId"] != "" and add["kind"] == "SPAN_KIND_SERVER"
    session = next(s for s in spans if s["name"] == "mcptape play arithmetic")
    # Protobuf's JSON mapping writes ids as base64: the client's ids, decoded, are the parent's.
    import base64

    assert base64.b64decode(add["traceId"]).hex() == CLIENT_TRACE
    assert base64.b64decode(add["parentSpanId"]).hex() == CLIENT_SPAN
    assert [base64.b64decode(link["spanId"]).hex() for link in add["links"]] == [base64.b64decode(session["spanId"]).hex()]
    initialize = next(s for s in spans if s["name"] == "initialize")  # sent no context: in play's own trace
    assert initialize["traceId"] == session["traceId"] and initialize["parentSpanId"] == session["spanId"]


def test_a_clients_traceparent_is_no_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tape = read_tape(GOLDEN)

    def variant(name: str, meta: dict[str, Any] | None, b: int = 3) -> Path:
        events = json.loads(json.dumps(tape.events))
        for ev in events:
            if ev.get("kind") == "request" and ev.get("method") == "tools/call":
                params = ev["msg"]["params"]
                if meta is not None:
                    params["_meta"] = meta
                if params["name"] == "add":
                    params["arguments"]["b"] = b
        path = tmp_path / f"{name}.tape.jsonl"
        path.write_bytes(tape_bytes(make_header("arithmetic"), events))
        return path

    traced = variant("traced", {"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01", "tracestate": "k=v"})
    assert main(["diff", str(GOLDEN), str(traced), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_drift"] is None
    changed = variant("changed", {"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}, b=4)  # the control
    assert main(["diff", str(GOLDEN), str(changed), "--json"]) == 1
    capsys.readouterr()


def test_rec_exports_the_session_it_recorded(tmp_path: Path) -> None:
    from tests.integration.test_rec import RawClient, call, initialize, rec_command

    tape = tmp_path / "three.tape.jsonl"
    with OtlpReceiver() as receiver:
        client = RawClient(rec_command(tape, calc_command(), "--otel"),
                           extra_env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"})
        initialize(client)
        for i in range(1, 4):
            call(client, i, "add", a=i, b=i)
            assert client.message()["id"] == i
        client.close_stdin()
        assert client.wait() == 0
        spans = receiver.spans()  # the writer exported before rec exited
    names = [s["name"] for s in spans]
    assert names.count("tools/call add") == 3 and "mcptape rec calc_server" in names
    adds = [s for s in spans if s["name"] == "tools/call add"]
    assert {s["attrs"]["jsonrpc.request.id"] for s in adds} == {"1", "2", "3"}
    assert all(s["kind"] == "SPAN_KIND_CLIENT" and int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) for s in adds)


def test_without_the_extra_the_flag_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("opentelemetry.sdk", "opentelemetry.sdk.trace", "opentelemetry.sdk.resources",
                   "opentelemetry.exporter.otlp.proto.http.trace_exporter"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed: importing it raises ImportError
    assert main(["ci", "-c", str(EXAMPLE), "--otel"]) == 3
    err = capsys.readouterr().err
    assert "OpenTelemetry SDK is not installed" in err and "pip install 'mcptape[otel]'" in err
    assert main(["rec", "--otel", "--out", "x.tape.jsonl", "--", *calc_command()]) == 3
    assert "pip install 'mcptape[otel]'" in capsys.readouterr().err
