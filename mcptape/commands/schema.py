"""`mcptape schema`: print the JSON Schema of mcptape.yml (config/schema.py), as schema/mcptape.schema.json holds it."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from mcptape.config.schema import schema_text


@dataclass(frozen=True)
class Options:
    """`schema` takes no options."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls()


def run(options: Options) -> int:
    sys.stdout.write(schema_text())
    return 0
