"""`mcptape sign` / `mcptape verify --signature` (commands/sign.py): a real SSH signature round trip
with a key the test makes (ssh-keygen), an allowed_signers file as git's, and what fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mcptape.cli import main
from mcptape.tape.format import make_header, tape_bytes
from tests.tape.test_seal import _events

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")


def _key(tmp_path: Path, name: str) -> Path:
    key = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@example.com", "-f", str(key)],
                   check=True, capture_output=True)
    return key


def _allowed(tmp_path: Path, *keys: Path) -> Path:
    path = tmp_path / "allowed_signers"
    path.write_text("".join(f'{k.name}@example.com namespaces="mcptape" {k.with_suffix(".pub").read_text()}'
                            for k in keys), encoding="utf-8")
    return path


def test_a_signed_golden_verifies_and_a_changed_or_foreign_one_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alice, mallory = _key(tmp_path, "alice"), _key(tmp_path, "mallory")
    allowed = _allowed(tmp_path, alice)
    tape = tmp_path / "g.tape.jsonl"
    tape.write_bytes(tape_bytes(make_header("g"), _events()))

    assert main(["verify", str(tape), "--signature", "--allowed-signers", str(allowed)]) == 3
    assert "no signature (g.tape.jsonl.sig beside it)" in capsys.readouterr().out  # not signed yet

    assert main(["sign", str(tape), "--key", str(alice)]) == 0
    sig = tmp_path / "g.tape.jsonl.sig"
    assert sig.read_text(encoding="utf-8").startswith("-----BEGIN SSH SIGNATURE-----")
    capsys.readouterr()
    assert main(["verify", str(tape), "--signature", "--allowed-signers", str(allowed)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"{tape}: signed by alice@example.com (allowed in {allowed})"
    # The signature is a plain SSH one: ssh-keygen checks it by hand too.
    by_hand = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "alice@example.com",
                              "-n", "mcptape", "-s", str(sig)], input=tape.read_bytes(), capture_output=True)
    assert by_hand.returncode == 0, by_hand.stderr

    # Re-recorded (sealed again, so the seal passes) but not re-signed: the signature no longer matches.
    tape.write_bytes(tape_bytes(make_header("g"), _events(text="6")))
    assert main(["verify", str(tape), "--signature", "--allowed-signers", str(allowed)]) == 3
    assert "signature: the signature does not match the tape" in capsys.readouterr().out

    # Signed by a key no allowed signer holds.
    assert main(["sign", str(tape), "--key", str(mallory)]) == 0
    capsys.readouterr()
    assert main(["verify", str(tape), "--signature", "--allowed-signers", str(allowed)]) == 3
    assert "signed by a key that is not in" in capsys.readouterr().out


def test_only_a_tape_that_matches_its_seal_is_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")):
        monkeypatch.setenv(name, value)  # no allowed signers from this machine's git config
    monkeypatch.chdir(tmp_path)
    key = _key(tmp_path, "alice")
    tape = tmp_path / "edited.tape.jsonl"
    tape.write_bytes(tape_bytes(make_header("e"), _events()).replace(b'"text":"5"', b'"text":"7"', 1))
    assert main(["sign", str(tape), "--key", str(key)]) == 3
    assert "not signed" in capsys.readouterr().out and not (tmp_path / "edited.tape.jsonl.sig").exists()
    assert main(["verify", str(tape), "--signature"]) == 3  # and no allowed signers anywhere: said
    assert "allowed_signers" in capsys.readouterr().err
