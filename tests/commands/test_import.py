"""`mcptape import` (commands/import_.py): a trace exported with --otel-payloads, received over
OTLP/HTTP by a loopback receiver and saved as OTLP/JSON, becomes a tape that replays to the same
answers; redacted as rec redacts; refused, with what to do, when it carries no messages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcptape.tape.reader import read_tape
from mcptape.tape.seal import check
from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env
from tests.otlp_receiver import OtlpReceiver
from tests.publish.test_telemetry import _client_lines, echo_config

EXAMPLE = FIXTURES / "example" / "mcptape.yml"


def _export(config: Path, tmp_path: Path, *flags: str) -> Path:
    """Run `mcptape ci` on `config` with --otel flags into a loopback receiver; the trace as OTLP/JSON lines."""
    with OtlpReceiver() as receiver:
        env = user_env(PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
        done = subprocess.run(mcptape_command("ci", "-c", str(config), *flags), capture_output=True, text=True,
                              env=env, timeout=120, cwd=config.parent)
        assert done.returncode in (0, 2), done.stdout + done.stderr
        documents = receiver.as_json()
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return trace


def _import(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command("import", *args), capture_output=True, text=True, timeout=60,
                          env=user_env(PYTHONPATH=str(ROOT), **(env or {})))


def _play(tape: Path, client: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command("play", str(tape)), input=client, capture_output=True, text=True,
                          timeout=60, env=user_env(PYTHONPATH=str(ROOT)))


def test_an_exported_trace_imports_to_a_tape_that_replays_the_same_answers(tmp_path: Path) -> None:
    trace = _export(EXAMPLE, tmp_path, "--otel-payloads")
    several = _import(str(trace), "--out", str(tmp_path / "x.tape.jsonl"))
    assert several.returncode == 3 and "--session" in several.stderr and "arithmetic" in several.stderr

    for session in ("arithmetic", "resources-and-prompts"):
        out = tmp_path / f"{session}.tape.jsonl"
        done = _import(str(trace), "--session", session, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert check(out.read_bytes()).state == "sealed"
        imported, golden = read_tape(out), read_tape(FIXTURES / "example" / "tapes" / f"{session}.tape.jsonl")
        assert imported.header["imported"]["from"] == "otlp" and imported.protocol == golden.protocol
        # The same messages in the same order as the golden tape ci wrote of the same run.
        assert [e["msg"] for e in imported.events] == [e["msg"] for e in golden.events if "msg" in e]
        client = _client_lines(golden.path, None)  # type: ignore[arg-type]
        replayed, recorded = _play(out, client), _play(golden.path, client)  # type: ignore[arg-type]
        assert replayed.returncode == recorded.returncode == 0, replayed.stderr
        assert replayed.stdout == recorded.stdout and replayed.stdout.count("\n") >= 3


def test_a_trace_without_payloads_is_refused_with_what_to_do(tmp_path: Path) -> None:
    trace = _export(EXAMPLE, tmp_path, "--otel")
    done = _import(str(trace), "--session", "arithmetic", "--out", str(tmp_path / "t.tape.jsonl"))
    assert done.returncode == 3 and "no MCP messages" in done.stderr and "--otel-payloads" in done.stderr
    assert not (tmp_path / "t.tape.jsonl").exists()
    not_json = tmp_path / "not.json"
    not_json.write_text("{\n", encoding="utf-8")
    assert _import(str(not_json)).returncode == 3


def test_import_redacts_as_rec_does(tmp_path: Path) -> None:
    """A secret of the environment (rec's rule) in a production trace never reaches the tape."""
    secret = "hunter2-" + "Zq9" * 8
    config = echo_config(tmp_path, "incident", secret)
    trace = _export(config, tmp_path, "--otel-payloads")
    assert secret in trace.read_text(encoding="utf-8")  # the control: ci did not know it was one
    out = tmp_path / "incident.tape.jsonl"
    done = _import(str(trace), "--out", str(out), env={"INCIDENT_API_TOKEN": secret})
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert secret not in text and "<REDACTED" in text
    assert read_tape(out).events[-1]["msg"]["result"]["content"][0]["text"].startswith("<REDACTED")


def test_a_rec_session_imported_back_diffs_equal_to_the_recording_and_keeps_its_timing(tmp_path: Path) -> None:
    """rec --otel-payloads, then import: the same tape for diff (the server's exit included), and the
    same timing footer, so `play --pace recorded` and `show` read the same latencies off it."""
    from tests.conftest import calc_command
    from tests.integration.test_rec import RawClient, call, initialize, rec_command

    recorded = tmp_path / "incident.tape.jsonl"
    with OtlpReceiver() as receiver:
        client = RawClient(rec_command(recorded, calc_command(), "--otel-payloads"),
                           extra_env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"})
        initialize(client)
        call(client, 1, "add", a=2, b=3)
        assert client.message()["id"] == 1
        call(client, 2, "slow", ms=50)
        assert client.message()["id"] == 2
        client.close_stdin()
        assert client.wait() == 0
        documents = receiver.as_json()
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    imported = tmp_path / "imported.tape.jsonl"
    done = _import(str(trace), "--out", str(imported))
    assert done.returncode == 0, done.stderr

    def diff(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(mcptape_command("diff", str(a), str(b)), capture_output=True, text=True, timeout=60,
                              env=user_env(PYTHONPATH=str(ROOT)))

    same = diff(recorded, imported)
    assert same.returncode == 0, same.stdout + same.stderr
    assert [e["kind"] for e in read_tape(imported).events][-1] == "exit"  # the server's exit came back too
    # The recording's times, to the footer's 0.01 ms (the trace carries nanoseconds from the same clock).
    got, want = (read_tape(p).footer["timing"]["at"] for p in (imported, recorded))  # type: ignore[index]
    assert len(got) == len(want) and all((a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 0.011)
                                         for a, b in zip(got, want, strict=True)), (got, want)
    # The control: the recording with one answer changed is not the same.
    fork = tmp_path / "fork.tape.jsonl"
    forked = subprocess.run(mcptape_command("fork", str(recorded), "--at", "2", "--result", '{"content": []}',
                                            "-o", str(fork)), capture_output=True, text=True, timeout=60,
                            env=user_env(PYTHONPATH=str(ROOT)))
    assert forked.returncode == 0, forked.stderr
    assert diff(fork, imported).returncode == 1
