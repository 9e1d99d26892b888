"""What a command says on stderr and carries on, said by the library through `warnings` instead.

The library never prints. What a command warns about before it starts (a tape played though
edited, `pace` on a tape without timing, a config outside the repository) is an McptapeWarning,
attributed to the caller's line rather than to mcptape's own code; what it says as it serves
(each miss as it happens, the live side's notes) and what the stdio child a client spawned said
(child.py) go to the `mcptape` logger at INFO: the same facts reach the caller as values (a
report, ReplayMiss) when the block ends.
"""

from __future__ import annotations

import logging
import sys
import warnings

from mcptape.errors import McptapeWarning

LOGGER = logging.getLogger("mcptape")


def warn(text: str) -> None:
    """A line a command would say on stderr, as an McptapeWarning."""
    warnings.warn(McptapeWarning(text), stacklevel=_caller_level())


def _caller_level() -> int:
    """The stack level of the first frame outside mcptape (and contextlib), so the warning names the user's line."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in ("mcptape", "contextlib"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def tell(text: str) -> None:
    """A line a command says while it serves, to the `mcptape` logger."""
    LOGGER.info("%s", text)
