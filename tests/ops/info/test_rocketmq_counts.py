"""info and stats count a RocketMQ store's messages alike, torn tail or not.

info counts the messages the ConsumeQueues hold, less the units that point at or past the
CommitLog's valid end (upstream ``ConsumeQueue.truncateDirtyLogicFiles`` cuts them at the next
start); stats counts the CommitLog's records before it.  The two differ only by the records no
ConsumeQueue holds (a transactional PREPARED record), on the healthy fixture and on a copy whose
newest records were torn away alike.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq import commitlog as cl

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    run([*args, "--json"])
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _tear(root: Path, records: int) -> None:
    """Zero the newest CommitLog file from 50 bytes before the end of its ``records``-th last
    record: a torn record and the records after it gone, their units still queued."""
    newest = max((root / "commitlog").iterdir())
    data = newest.read_bytes()
    pos, rec = list(cl.RecordWalker(data, 0))[-records]
    start = pos + rec.total_size - 50
    end = len(data.rstrip(b"\x00"))
    with open(newest, "r+b") as f:
        f.seek(start)
        f.write(bytes(end - start))


@pytest.mark.parametrize("torn", [0, 1, 7])
def test_info_and_stats_agree_on_the_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str], torn: int) -> None:
    healthy_info = _json(capsys, "info", str(FIXTURE))
    healthy_stats = _json(capsys, "stats", str(FIXTURE))
    not_queued = healthy_stats["totals"]["messages"] - sum(q["log_end_offset"] - q["log_start_offset"] for q in healthy_info["queues"])
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    if torn:
        _tear(root, torn)
    info = _json(capsys, "info", str(root))
    stats = _json(capsys, "stats", str(root))
    queued = sum(q["log_end_offset"] - q["log_start_offset"] for q in info["queues"])
    past = sum(q["units_past_end"] for q in info["queues"])
    assert past == torn  # the torn record's unit and the units of the records after it
    assert queued - past + not_queued == stats["totals"]["messages"]
    assert queued == sum(q["log_end_offset"] - q["log_start_offset"] for q in healthy_info["queues"])  # nothing cut yet
