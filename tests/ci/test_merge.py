"""mcptape/ci/merge.py on plain data: checking and combining shard reports (the CLI is in
tests/integration/test_shard_merge.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcptape.ci.merge import load_report, merge_reports, missing_shards
from mcptape.errors import McptapeError
from mcptape.verdict.model import RunReport, SessionResult


def write(path: Path, shard: str | None, *sessions: tuple[str, str], config: str = "mcptape.yml") -> str:
    report = RunReport(config=config, sessions=[SessionResult(name=n, verdict=v) for n, v in sessions], shard=shard)  # type: ignore[arg-type]
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return str(path)


def test_merge_without_config_orders_by_name_and_takes_the_worst(tmp_path: Path) -> None:
    a = load_report(write(tmp_path / "1.json", "1/2", ("zeta", "same"), ("alpha", "output")))
    b = load_report(write(tmp_path / "2.json", "2/2", ("mid", "structural")))
    merged = merge_reports([b, a])
    assert [s.name for s in merged.sessions] == ["alpha", "mid", "zeta"]
    assert merged.exit_code == 2 and merged.shard is None
    assert missing_shards([a, b], None) == []


def test_missing_shards_are_named(tmp_path: Path) -> None:
    a = load_report(write(tmp_path / "1.json", "1/3", ("a", "same")))
    c = load_report(write(tmp_path / "3.json", "3/3", ("c", "same")))
    assert [line.split(":")[0] for line in missing_shards([a, c], None)] == ["shard 2/3 is missing"]


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (("2.json", "2/2", ("a", "same")), "session a is in both"),
        (("2.json", "1/2", ("b", "same")), "shard 1/2 is given twice"),
        (("2.json", "2/3", ("b", "same")), "different splits"),
        (("2.json", None, ("b", "same")), "unsharded run"),
    ],
)
def test_overlaps_and_mixed_splits_are_refused(
    tmp_path: Path, second: tuple[str, str | None, tuple[str, str]], message: str
) -> None:
    a = load_report(write(tmp_path / "1.json", "1/2", ("a", "same")))
    name, shard, session = second
    b = load_report(write(tmp_path / name, shard, session))
    with pytest.raises(McptapeError, match=message):
        merge_reports([a, b])


def test_a_bad_verdict_or_shard_field_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    write(path, "1/2", ("a", "same"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["sessions"][0]["verdict"] = "fine"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(McptapeError, match="bad.json.*unknown verdict"):
        load_report(str(path))
    data["sessions"][0]["verdict"] = "same"
    data["shard"] = "3/2"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(McptapeError, match='bad.json: invalid "shard"'):
        load_report(str(path))
