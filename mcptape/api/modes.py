"""The record modes, one enum for the library and the pytest plugin, and what each does with a tape.

Loaded with the pytest plugin in every pytest run where mcptape is installed: stdlib only.
"""

from __future__ import annotations

import enum
from typing import Literal

# What a replay does with its tape: serve it (play), record it anew (rec), or serve it and send
# what it lacks to the live server, recorded (play --fallback).
Action = Literal["play", "record", "fallback"]


class RecordMode(enum.StrEnum):
    """When a replay records instead, as vcrpy's and pytest-recording's modes.

    ``NONE`` plays only (the default): a missing tape is an error, a call the tape lacks is a miss.
    ``ONCE`` records when the tape is missing and plays it otherwise. ``NEW_EPISODES`` plays, and
    records what the tape lacks (play --fallback); a missing tape is recorded. ``ALL`` re-records.
    The values are the words `--mcptape-record-mode` takes, so a string works wherever a mode does.

    >>> import mcptape
    >>> mcptape.RecordMode("new_episodes") is mcptape.RecordMode.NEW_EPISODES
    True
    >>> [mode.value for mode in mcptape.RecordMode]
    ['none', 'once', 'new_episodes', 'all']
    >>> mcptape.RecordMode.ONCE.action(tape_exists=False), mcptape.RecordMode.ONCE.action(tape_exists=True)
    ('record', 'play')
    """

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"

    def action(self, tape_exists: bool) -> Action:
        """What this mode does with a tape that exists or not: "play", "record" or "fallback"."""
        if self is RecordMode.NONE or (self is RecordMode.ONCE and tape_exists):
            return "play"
        if self is RecordMode.NEW_EPISODES and tape_exists:
            return "fallback"
        return "record"

    @property
    def records(self) -> bool:
        """Whether this mode may go live and write the tape (refused in CI unless allowed)."""
        return self is not RecordMode.NONE
