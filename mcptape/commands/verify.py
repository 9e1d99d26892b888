"""`mcptape verify TAPE... [--signature] [--allowed-signers FILE]`: check that each tape is what mcptape
wrote (its seal, tape/seal.py) and, with --signature (or --allowed-signers, which implies it), who
signed it (commands/sign.py).

One line per tape on stdout: sealed; cut short and verified up to its last complete event; format 1
(a crc32 only, not a seal); or the first line that does not match; with --signature, then, the
principal of allowed_signers whose key signed it, or why none did. Exit 0 when every tape passes,
3 when one does not or cannot be read (each tape is still checked and reported).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from mcptape.commands.sign import allowed_signers_file, check_signature, signature_path
from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_OK, McptapeError, TapeError
from mcptape.logsafe import safe_log
from mcptape.tape.reader import TapeStream
from mcptape.tape.seal import check


@dataclass(frozen=True)
class Options:
    tapes: tuple[str, ...]
    signature: bool = False
    allowed_signers: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        # Naming the allowed signers asks for signatures: --allowed-signers implies --signature (a
        # tape with no signature must not pass because --signature was left out).
        return cls(tapes=tuple(args.tapes), signature=args.signature or args.allowed_signers is not None,
                   allowed_signers=args.allowed_signers)


def run(options: Options) -> int:
    code = EXIT_OK
    signers = allowed_signers_file(options.allowed_signers) if options.signature else None
    for path in options.tapes:
        try:
            # A file that is no tape this mcptape reads: the reader's message. The stream checks the
            # header without parsing the events (read_tape would triple the cost of a big tape).
            TapeStream(path)
            verdict = check(Path(path).read_bytes())
        except (TapeError, OSError) as e:
            print(safe_log(f"{path}: cannot verify: {e}"))
            code = EXIT_COULD_NOT_RUN
            continue
        print(safe_log(verdict.describe(path)))
        if not verdict.ok:
            code = EXIT_COULD_NOT_RUN
        elif signers is None and signature_path(Path(path)).exists():
            # A pass says the seal only: the signature beside the tape was not looked at, and said so.
            print(safe_log(f"{path}: signature not checked ({signature_path(Path(path)).name}; add --signature)"))
        elif signers is not None:
            try:
                principal = check_signature(Path(path), signers)
            except McptapeError as e:
                print(safe_log(f"{path}: signature: {e}"))
                code = EXIT_COULD_NOT_RUN
                continue
            print(safe_log(f"{path}: signed by {principal} (allowed in {signers})"))
    return code
