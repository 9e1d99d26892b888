"""What mcptape.yml hands the operating system, checked when the file is read.

A command's arguments, an environment's or a header's names and values, a working directory, a
sandbox and the golden directory cannot hold a NUL byte (no program, environment or path can), and
a session's name is its golden tape's file name, which file systems keep short. Said by the loader
with the file, the line and the fix (translate.py reads these errors as it reads models.py's), not
as an internal error when ci starts the process or writes the tape. models.py applies them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

# A file name has 255 bytes; mcptape adds `@VERSION` (protocol: both), `.tape.timing.json` and an
# atomic write's `.PID.XXXXXXXX.tmp` to a session's name.
MAX_SESSION_NAME = 150


def no_nul(value: Any, what: str, at: tuple[str | int, ...] = ()) -> Any:
    """`value`, unless it is text holding a NUL: then the config error that says so (`at`: where in the field)."""
    if isinstance(value, str) and "\x00" in value:
        message = f"{what} holds a NUL byte (\\0), which no program, environment or path can hold; remove it"
        raise PydanticCustomError("mcptape", "{message}", {"message": message, "at": at, "key": None})
    return value


OsPath = Annotated[str, BeforeValidator(lambda v: no_nul(v, "the path"))]  # cwd, sandbox, golden_dir
