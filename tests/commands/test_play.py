"""commands/play.py's process concerns: the garbage-collector policy for the tape is the command's (TapeMemory),
and no module of the replay package touches the collector."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

from mcptape.commands.play import TAPE_MEMORY

REPLAY = Path(__file__).resolve().parents[2] / "mcptape" / "replay"


def test_tape_memory_keeps_collection_off_while_the_tape_grows_then_freezes_it() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        with TAPE_MEMORY:
            assert not gc.isenabled()
            built = [{"event": i} for i in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(built)  # out of every later collection
        gc.disable()  # a process that turned collection off keeps it off
        with TAPE_MEMORY:
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def _gc_importers(sources: dict[str, str]) -> list[str]:
    found = []
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "gc" in names or (isinstance(node, ast.ImportFrom) and node.module == "gc"):
                found.append(name)
    return found


def test_no_replay_module_controls_the_garbage_collector() -> None:
    sources = {path.name: path.read_text(encoding="utf-8") for path in sorted(REPLAY.glob("*.py"))}
    assert "engine.py" in sources and _gc_importers(sources) == []
    # The scan finds the import where there is one, at the top or inside a function.
    assert _gc_importers({"a.py": "import gc", "b.py": "def f():\n    from gc import freeze\n", "c.py": "import json"}) == [
        "a.py",
        "b.py",
    ]
