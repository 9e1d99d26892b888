"""live/sandbox.py: snapshots, per-step change events, restoring the directories after a session."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mcptape.live.sandbox import Sandbox, compare, snapshot


def test_snapshot_names_files_relative_to_the_root_with_size_and_hash(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_bytes(b"hello")
    snap = snapshot(tmp_path)
    assert snap == {"sub/a.txt": (5, hashlib.sha256(b"hello").hexdigest())}
    assert not any(str(tmp_path) in key for key in snap)  # never an absolute path
    assert snapshot(tmp_path / "missing") == {}


def test_compare_gives_created_modified_deleted_sorted_by_path() -> None:
    before = {"b.txt": (1, "x"), "gone.txt": (2, "y"), "same.txt": (3, "z")}
    after = {"a.txt": (4, "n"), "b.txt": (5, "m"), "same.txt": (3, "z")}
    assert compare(before, after) == [
        {"path": "a.txt", "change": "created", "size": 4, "sha256": "n"},
        {"path": "b.txt", "change": "modified", "size": 5, "sha256": "m"},
        {"path": "gone.txt", "change": "deleted"},
    ]


def test_steps_record_only_what_changed_since_the_last_step(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("keep", encoding="utf-8")
    box = Sandbox([tmp_path])
    box.start()
    try:
        assert box.step(1) == []
        (tmp_path / "notes.txt").write_text("one\n", encoding="utf-8")
        [event] = box.step(2)
        assert event["kind"] == "side_effect" and event["step"] == 2
        assert [(c["path"], c["change"], c["size"]) for c in event["changes"]] == [("notes.txt", "created", 4)]
        (tmp_path / "notes.txt").write_text("two!\n", encoding="utf-8")
        (tmp_path / "keep.txt").unlink()
        [event] = box.step(3)
        assert [(c["path"], c["change"]) for c in event["changes"]] == [("keep.txt", "deleted"), ("notes.txt", "modified")]
    finally:
        box.restore()


def test_restore_puts_the_sandbox_back_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("original", encoding="utf-8")
    (tmp_path / "del.txt").write_text("delete me", encoding="utf-8")
    box = Sandbox([tmp_path])
    box.start()
    (tmp_path / "keep.txt").write_text("changed", encoding="utf-8")
    (tmp_path / "del.txt").unlink()
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "made.txt").write_text("made", encoding="utf-8")
    box.restore()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["del.txt", "keep.txt"]
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8") == "original"
    assert (tmp_path / "del.txt").read_text(encoding="utf-8") == "delete me"


def test_several_roots_are_told_apart_and_labels_apply(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    box = Sandbox([one, two], label=lambda p: p.replace("2026", "<YEAR>"))
    box.start()
    try:
        (two / "log-2026.txt").write_text("x", encoding="utf-8")
        [event] = box.step(1)
        assert [c["path"] for c in event["changes"]] == ["sandbox[1]/log-<YEAR>.txt"]
    finally:
        box.restore()
    assert list(two.iterdir()) == []


def test_a_private_home_is_fresh_for_each_server_run_and_removed_after_it(tmp_path: Path) -> None:
    import json
    import sys

    from mcptape.config.models import StdioServer
    from mcptape.live.launch import open_transport

    script = ("import json, os, tempfile; print(json.dumps([os.environ['HOME'], tempfile.gettempdir(), "
              "os.path.isdir(os.environ['HOME'])]), flush=True); input()")
    server = StdioServer(command=[sys.executable, "-c", script], private_home=True)
    homes = []
    for _ in range(2):
        transport = open_transport(server, base_dir=tmp_path, env={})
        line = transport.receive(timeout=30)
        assert line is not None
        home, tmp, existed = json.loads(line)
        assert existed and home != str(Path.home()) and Path(tmp).parent == Path(home).parent
        transport.close()
        assert not Path(home).exists()  # removed with the run
        homes.append(home)
    assert homes[0] != homes[1]
    # Without it, the server gets this HOME, as before.
    transport = open_transport(server.model_copy(update={"private_home": False}), base_dir=tmp_path, env={})
    line = transport.receive(timeout=30)
    transport.close()
    assert line is not None and json.loads(line)[0] == str(Path.home())
