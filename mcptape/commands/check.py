"""`mcptape check [-c mcptape.yml]`: validate a config fully without starting any server.

The checks are the ones `ci` makes before it starts a server, from the same functions:
config.load_config (schema and the cross-section rules of the models, with file:line errors)
and config.semantics.check_config (the paths the config names). Exit 0 with
`ok: N sessions, M servers`, or 3 with the first problem: file:line, field, the fix.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from mcptape.config.load import load_config
from mcptape.config.semantics import check_config


@dataclass(frozen=True)
class Options:
    config: str

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(config=args.config)


def run(options: Options) -> int:
    loaded = load_config(options.config)
    check_config(loaded)
    config = loaded.config
    sessions, servers = len(config.sessions), len(config.servers)
    print(f"ok: {sessions} session{'s' * (sessions != 1)}, {servers} server{'s' * (servers != 1)} ({loaded.path})")
    return 0
