"""`mcptape schema`: print the JSON Schema of mcptape.yml as the package ships it (config/json_schema.py)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from mcptape.config.json_schema import shipped_schema_text


@dataclass(frozen=True)
class Options:
    """`schema` takes no options."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls()


def run(options: Options) -> int:
    sys.stdout.write(shipped_schema_text())
    return 0
