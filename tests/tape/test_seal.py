"""Tape seals (tape/seal.py): a changed golden named by its line, rec tapes cut short verified up to
their last complete event, format 1 still read; `verify`, and diff and play refusing an edited tape
unless --allow-edited (which says so)."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import pytest

from mcptape.cli import main
from mcptape.tape.format import TapeWriter, make_header, serialize, tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.tape.seal import check
from tests.conftest import mcptape_command


def _events(n: int = 3, text: str = "5") -> list[dict]:
    events: list[dict] = []
    for i in range(1, n + 1):
        params = {"name": "add", "arguments": {"a": i}}
        events.append({"kind": "request", "dir": "c2s", "id": i, "method": "tools/call",
                       "msg": {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}})
        events.append({"kind": "response", "dir": "s2c", "id": i, "method": "tools/call", "params": params,
                       "msg": {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}}})
    return events


def _golden(tmp_path: Path, name: str = "g", text: str = "5") -> Path:
    path = tmp_path / f"{name}.tape.jsonl"
    path.write_bytes(tape_bytes(make_header(name), _events(text=text)))
    return path


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines)


def test_a_golden_is_sealed_and_each_kind_of_edit_names_its_line(tmp_path: Path) -> None:
    data = _golden(tmp_path).read_bytes()
    verdict = check(data)
    assert verdict.ok and verdict.state == "sealed"
    lines = _lines(data)  # 1 header, 2-7 events, 8 footer, then "" after the last newline
    assert lines[7].startswith(b'{"mcptape":"end","events":6,"sha256":"')

    changed = lines.copy()
    changed[4] = changed[4].replace(b'"text":"5"', b'"text":"6"')
    assert (check(_join(changed)).ok, check(_join(changed)).line) == (False, 5)

    inserted = [*lines[:3], lines[2], *lines[3:]]
    assert check(_join(inserted)).line == 4

    removed = [*lines[:5], *lines[6:]]
    assert check(_join(removed)).line == 6

    header = lines.copy()
    header[0] = header[0].replace(b'"name":"g"', b'"name":"h"')
    assert check(_join(header)).line == 1
    header[0] = lines[0].replace(b'"format":2', b'"format":1')  # passing for a format 1 tape: still sealed
    assert (check(_join(header)).ok, check(_join(header)).line) == (False, 1)

    footer = lines.copy()
    footer[7] = footer[7].replace(b'"sha256":"', b'"sha256":"0')
    verdict = check(_join(footer))
    assert (verdict.line, "the seal was edited" in verdict.problem) == (8, True)

    # Without its footer a golden is not a tape cut short: no seal covers its lines.
    cut = check(_join([*lines[:7], b""]))
    assert not cut.ok and cut.line == 7 and "no seal covers" in cut.problem

    appended = check(data + b'{"kind":"note","what":"after the footer"}\n')
    assert not appended.ok and appended.line == 9


def test_a_rec_tape_cut_short_verifies_up_to_its_last_complete_event(tmp_path: Path) -> None:
    path = tmp_path / "rec.tape.jsonl"
    writer = TapeWriter(path, make_header("rec"))
    events = _events()
    writer.write_line(serialize(events[0]), flush=False)
    writer.write_line(serialize(events[1]), flush=False)
    writer.flush()  # one batch: two events, then its seal line, in one write
    writer.write(events[2])
    writer.abandon()  # the recorder was killed: no footer
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"request","dir":"c2s","id":3,"met')  # and it died mid-line
    data = path.read_bytes()
    verdict = check(data)
    assert verdict.ok and verdict.state == "cut" and verdict.line == 5  # line 5: events[2]
    assert "verified up to line 5, its last complete event" in verdict.describe("rec")
    assert [ev["id"] for ev in read_tape(path).events] == [1, 1, 2]  # the seal lines are no events
    assert read_tape(path).event_lines == [2, 3, 5]

    # A line changed in a cut tape: the seal line after it names it by its fingerprint.
    lines = _lines(data)
    lines[2] = lines[2].replace(b'"text":"5"', b'"text":"6"')
    edited = check(_join(lines))
    assert not edited.ok and edited.line == 3 and "this line is not the one sealed" in edited.problem
    lines = _lines(data)
    lines[3] = lines[3].replace(b'"sha256":"', b'"sha256":"0')
    assert check(_join(lines)).line == 4 and "the seal was edited" in check(_join(lines)).problem


def test_format_1_tapes_still_read_and_their_crc32_is_checked(tmp_path: Path) -> None:
    header = {"mcptape": "tape", "format": 1, "version": "0.1.0", "name": "old", "transport": "stdio"}
    body = b"".join(serialize(line) for line in [header, *_events()])
    old = body + serialize({"mcptape": "end", "events": 6, "crc32": f"{zlib.crc32(body):08x}"})
    path = tmp_path / "old.tape.jsonl"
    path.write_bytes(old)
    assert len(read_tape(path).events) == 6
    verdict = check(old)
    assert verdict.ok and verdict.state == "unsealed" and "crc32 matches" in verdict.problem
    edited = check(old.replace(b'"text":"5"', b'"text":"6"', 1))
    assert not edited.ok and edited.line == 8 and "crc32" in edited.problem
    assert check(body).ok  # format 1 without a footer: nothing to check, read as before


def test_verify_names_the_first_line_that_does_not_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _golden(tmp_path, "good")
    bad = tmp_path / "bad.tape.jsonl"
    bad.write_bytes(good.read_bytes().replace(b'"arguments":{"a":2}', b'"arguments":{"a":20}', 1))
    assert main(["verify", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: sealed (sha256 of every line matches)\n"
    assert main(["verify", str(good), str(bad), str(tmp_path / "missing.tape.jsonl")]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{good}: sealed")
    assert out[1] == f"{bad}:4: this line is not the one sealed (changed, inserted or removed after the tape was written)"
    assert out[2].startswith(f"{tmp_path / 'missing.tape.jsonl'}: cannot verify: ")


def test_diff_refuses_an_edited_tape_unless_allowed_and_then_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = _golden(tmp_path, "golden")
    recorded = _golden(tmp_path, "recorded", text="6")  # a real change, sealed: drift, no refusal
    assert main(["diff", str(golden), str(recorded), "--json"]) == 1
    capsys.readouterr()
    edited = tmp_path / "edited.tape.jsonl"
    edited.write_bytes(golden.read_bytes().replace(b'"text":"5"', b'"text":"6"'))
    assert main(["diff", str(golden), str(edited), "--json"]) == 3
    err = capsys.readouterr().err
    assert f"{edited}:3: this line is not the one sealed" in err and "--allow-edited" in err
    assert main(["diff", str(golden), str(edited), "--json", "--allow-edited"]) == 1
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert notes == [f"--allow-edited: {edited}:3: this line is not the one sealed (changed, inserted or removed "
                     "after the tape was written); read anyway, its content not verified"]


def test_play_refuses_an_edited_tape_unless_allowed(tmp_path: Path) -> None:
    tape = tmp_path / "t.tape.jsonl"
    tape.write_bytes(_golden(tmp_path).read_bytes().replace(b'"text":"5"', b'"text":"7"'))
    request = json.dumps(_events()[0]["msg"]) + "\n"
    refused = subprocess.run(mcptape_command("play", str(tape)), input=request.encode(), capture_output=True,
                             timeout=30)
    assert refused.returncode == 3 and refused.stdout == b""
    assert f"{tape}:3: this line is not the one sealed".encode() in refused.stderr
    allowed = subprocess.run(mcptape_command("play", str(tape), "--allow-edited"), input=request.encode(),
                             capture_output=True, timeout=30)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["result"]["content"][0]["text"] == "7"
    assert f"mcptape play: --allow-edited: {tape}:3: ".encode() in allowed.stderr


def test_a_seal_never_reads_as_a_secret_to_the_verifier_that_checks_the_tape() -> None:
    """Run together, the line fingerprints were one random token: for a tape of 10 lines, 40
    characters the secret rules rightly take for an AWS secret key, which failed a real server's
    golden closed (exit 4)."""
    from mcptape.errors import SecretLeak
    from mcptape.redact.redactor import make_redactor
    from mcptape.tape.seal import Sealer

    leaked = 0
    for lines in (10, 11, 400):
        for start in range(0, 200, 10):
            sealer = Sealer()
            for i in range(lines):
                sealer.add(serialize({"kind": "notification", "dir": "s2c", "msg": {"n": start + i}}))
            footer = json.dumps({"mcptape": "end", "events": lines, **sealer.footer_fields()}).encode()
            make_redactor().verify(footer, "footer")  # raises SecretLeak if the seal looked like a secret
            if lines == 10:  # Positive control: the same fingerprints run together, as they were
                try:
                    make_redactor().verify(footer.replace(b" ", b""), "footer")
                except SecretLeak:
                    leaked += 1
    assert leaked > 0
