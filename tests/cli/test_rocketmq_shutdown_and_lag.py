"""Issue 29, point 4 (RocketMQ): what a store's shutdown marks say, and a lag that is unknown, through the CLI.

* ``info``'s headline counts the warnings of its own table: the abort file (RMQ-ABORT) and what
  the checkpoint says against the data are validate's findings (``store.model.rocketmq.shutdown_findings``);
* a checkpoint that says records were flushed, in a store with no CommitLog data at all, is a
  warning (RMQ-CHECKPOINT), in validate and in info;
* ``lag`` never turns an unknown lag (a queue not in the store) into 0: its summary says the lag
  is unknown, its JSON totals carry ``unknown_queues`` and a null lag when no queue's is known.

The real capture (``Shaoxubao-rocketmq-study``: abort, a checkpoint of 2019, no CommitLog, consumer
offsets of queues with no ConsumeQueue) is skipped when ``../shared/fixtures-real`` is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, copy_fixture, real_path
from tests.conftest import run_cli as mqtool

FIXTURE = FIXTURES / "rocketmq-store"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    return copy_fixture("rocketmq-store", tmp_path / "store")


def warnings_of(command: str, root: Path) -> list[tuple[str, str, int | None]]:
    code, out, err = mqtool(command, root, "--json")
    assert code == 0, err
    return sorted((f["code"], f["path"], f["position"]) for f in json.loads(out)["findings"] if f["severity"] == "warning")


def headline(root: Path) -> str:
    code, out, err = mqtool("info", root)
    assert code == 0, err
    return out.splitlines()[0]


def test_info_counts_the_unclean_shutdown_it_shows(store):
    assert headline(store).startswith("HEALTHY: 0 error(s), 0 warning(s)")
    (store / "abort").touch()
    assert headline(store).startswith("WARNINGS: 0 error(s), 1 warning(s)")
    assert warnings_of("info", store) == warnings_of("validate", store) == [("RMQ-ABORT", str(store / "abort"), None)]


def test_a_checkpoint_of_flushed_data_without_a_commitlog_is_a_warning(store):
    """The CommitLog's files gone, and the ConsumeQueues and IndexFiles with them (what is left is
    the checkpoint and the config, as in a store whose data directories were lost)."""
    for path in (store / "commitlog").iterdir():
        path.unlink()
    shutil.rmtree(store / "consumequeue")
    shutil.rmtree(store / "index")
    checkpoint = str(store / "checkpoint")
    expected = [("RMQ-CHECKPOINT", checkpoint, 0), ("RMQ-CHECKPOINT", checkpoint, 8)]
    assert warnings_of("validate", store) == expected
    code, out, _err = mqtool("validate", store, "--json")
    assert "the store has no CommitLog data" in json.loads(out)["findings"][0]["message"]
    assert warnings_of("info", store) == expected
    assert headline(store).startswith("WARNINGS: 0 error(s), 2 warning(s)")


def test_lag_of_a_queue_not_in_the_store_is_unknown_not_zero(store):
    shutil.rmtree(store / "consumequeue" / "TopicTest" / "1")
    code, out, err = mqtool("lag", store, "--json")
    assert code == 0, err
    doc = json.loads(out)
    [row] = [r for r in doc["lag"] if (r["topic"], r["queue_id"]) == ("TopicTest", 1)]
    assert row["lag_messages"] is None
    totals = [t for t in doc["totals"] if t["topic"] == "TopicTest"]
    assert totals and all(t["unknown_queues"] == 1 for t in totals)
    # the known queues' lag is summed, the unknown one is not counted
    for t in totals:
        known = [r["lag_messages"] for r in doc["lag"] if (r["group"], r["topic"]) == (t["group"], t["topic"]) and r["lag_messages"] is not None]
        assert t["lag_messages"] == sum(known)
    code, out, _err = mqtool("lag", store)
    assert "lag unknown for 1 queue(s)" in out.splitlines()[0]


def test_real_unclean_store_without_data(tmp_path):
    root = real_path("rocketmq", "Shaoxubao-rocketmq-study", "store")
    info_warnings = warnings_of("info", root)
    assert info_warnings == warnings_of("validate", root)
    assert [c for c, _p, _at in info_warnings] == ["RMQ-ABORT", "RMQ-CHECKPOINT", "RMQ-CHECKPOINT"]
    assert headline(root).startswith("WARNINGS: 0 error(s), 3 warning(s)")

    code, out, err = mqtool("lag", root, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert all(r["lag_messages"] is None for r in doc["lag"])
    assert all(t["lag_messages"] is None and t["unknown_queues"] > 0 for t in doc["totals"])
    code, out, _err = mqtool("lag", root)
    assert "0 message(s) behind" not in out and " 0 behind" not in out
    assert "lag unknown" in out.splitlines()[0]
