"""`mcptape sign TAPE... [--key KEY]`: sign tapes with an SSH key, as git signs commits, so a team can
require signed goldens (`mcptape verify --signature`).

The signature of `x.tape.jsonl` is `x.tape.jsonl.sig` beside it, made by `ssh-keygen -Y sign -n
mcptape` over the tape's bytes (which its seal, tape/seal.py, already pins line by line): an SSH
signature a reviewer can also check by hand with `ssh-keygen -Y verify`. The key is `--key`, else
git's `user.signingkey` (a key file: git's ssh signing key). Checking (`verify --signature`) uses an
`allowed_signers` file as git does (`--allowed-signers`, else git's `gpg.ssh.allowedSignersFile`):
`principal namespaces="mcptape" ssh-ed25519 AAAA...` lines. Only a tape that matches its seal is
signed. Exit codes: 0 every tape signed, 3 a tape could not be signed (unsealed, no key, ssh-keygen
failed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mcptape.commands.grammar import Output, check_outputs
from mcptape.commands.output import say
from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_OK, McptapeError
from mcptape.logsafe import safe_log
from mcptape.tape.atomic import write_atomic
from mcptape.tape.seal import check

NAMESPACE = "mcptape"  # ssh-keygen -n: a signature for mcptape tapes is no signature of anything else
SUFFIX = ".sig"


@dataclass(frozen=True)
class Options:
    tapes: tuple[str, ...]
    key: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(tapes=tuple(args.tapes), key=args.key)


def run(options: Options) -> int:
    key = options.key or _git_config("user.signingkey")
    if not key:
        raise McptapeError("no signing key: give --key FILE (an SSH private key)",
                           hint="or set git's: git config user.signingkey ~/.ssh/id_ed25519.pub")
    # A signature lands beside its tape: never onto a file being signed (`sign a.tape.jsonl a.tape.jsonl.sig`).
    check_outputs([Output("signature", str(signature_path(Path(t)))) for t in options.tapes], reads=options.tapes)
    code = EXIT_OK
    for tape in options.tapes:
        try:
            signature = sign(Path(tape), Path(os.path.expanduser(key)))
        except McptapeError as e:
            print(safe_log(f"{tape}: not signed: {e}"))
            code = EXIT_COULD_NOT_RUN
            continue
        say(f"mcptape sign: {tape} -> {signature}")
    return code


def signature_path(tape: Path) -> Path:
    return tape.with_name(tape.name + SUFFIX)


def sign(tape: Path, key: Path) -> Path:
    """Sign a tape that matches its seal; its signature is written atomically beside it."""
    try:
        data = tape.read_bytes()
    except OSError as e:
        raise McptapeError(f"cannot read it: {e.strerror or e}") from e
    verdict = check(data)
    if not verdict.ok:
        raise McptapeError(f"{verdict.describe(str(tape))}: sign only what mcptape wrote",
                           hint="re-record it, then sign it")
    # A public key names its private key beside it, as git's user.signingkey may.
    private = key.with_suffix("") if key.suffix == ".pub" and key.with_suffix("").exists() else key
    done = _ssh_keygen(["-Y", "sign", "-f", str(private), "-n", NAMESPACE], data)
    if done.returncode != 0 or not done.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        raise McptapeError(f"ssh-keygen could not sign with {key}: {_said(done)}")
    out = signature_path(tape)
    write_atomic(out, done.stdout, what="signature")
    return out


def check_signature(tape: Path, allowed_signers: Path) -> str:
    """Who signed the tape (its principal in `allowed_signers`), else a McptapeError saying why not."""
    sig = signature_path(tape)
    if not sig.exists():
        raise McptapeError(f"no signature ({sig.name} beside it)", hint=f"sign it: mcptape sign {tape}")
    if not allowed_signers.exists():
        raise McptapeError(f"allowed signers file {allowed_signers} does not exist")
    found = _ssh_keygen(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)], b"")
    principals = [p for p in found.stdout.decode("utf-8", "replace").splitlines() if p.strip()]
    if found.returncode != 0 or not principals:
        raise McptapeError(f"signed by a key that is not in {allowed_signers}")
    data = tape.read_bytes()
    for principal in principals:
        done = _ssh_keygen(["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE,
                            "-s", str(sig)], data)
        if done.returncode == 0:
            return principal
    raise McptapeError(f"the signature does not match the tape (changed after it was signed, by "
                       f"{', '.join(principals)}'s key)", hint=f"re-sign it: mcptape sign {tape}")


def allowed_signers_file(given: str | None) -> Path:
    path = given or _git_config("gpg.ssh.allowedSignersFile")
    if not path:
        raise McptapeError("verify --signature needs an allowed_signers file: --allowed-signers FILE",
                           hint="or git's: git config gpg.ssh.allowedSignersFile FILE (lines: "
                           'principal namespaces="mcptape" ssh-ed25519 AAAA...)')
    return Path(os.path.expanduser(path))


def _ssh_keygen(args: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    program = shutil.which("ssh-keygen")
    if program is None:
        raise McptapeError("ssh-keygen is not installed (OpenSSH 8.2 or newer signs and verifies)")
    try:
        return subprocess.run([program, *args], input=data, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise McptapeError(f"ssh-keygen failed: {e}") from e


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    lines = [line for line in done.stderr.decode("utf-8", "replace").splitlines()
             if line.strip() and not line.startswith("Signing data")]
    return lines[-1] if lines else f"exit {done.returncode}"


def _git_config(name: str) -> str | None:
    if shutil.which("git") is None:
        return None
    try:
        done = subprocess.run(["git", "config", "--get", name], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value and not value.startswith("key::") else None
