"""One reading of a Jafka or MetaQ store for several verbs (``store.model.legacy.shared_reading``).

Inside the block a segment's judgement is read once: validate's reading (in-process or in its
process pool) is handed to recover's plan, which then reads no log byte; the plan is the plan made
without sharing.  A segment changed since is read again, and each reader gets a copy of its own.
A reader's fold of the messages (``shared_reading(fold=...)``: stats' count) is fed by that same
reading, in validate's worker processes too, and handed to ``read_folded`` without a reading.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import pytest

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops.recover.legacy import plan_jafka, plan_metaq
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.legacy import validate_jafka, validate_metaq
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.files import count_reads
from mqtool.store.model import legacy as lm

#: bytes of the segment it cuts the plan reads beyond a reading (the tail it cuts)
FIXED = 4096

LAYOUTS = {
    "jafka": (validate_jafka, plan_jafka, segnames.jafka_file_name, sj.open_jafka),
    "metaq": (validate_metaq, plan_metaq, segnames.metaq_file_name, sm.open_metaq),
}


def _message(layout: str, i: int) -> bytes:
    payload = b"message %05d " % i * 8
    return jf.encode_message(jf.Message(payload)) if layout == "jafka" else mq.encode_message(mq.make_message(1000 + i, payload, None))


def _store(root: Path, layout: str) -> list[Path]:
    """Two partitions of three segments; the last segment of the first ends in a torn message."""
    paths = []
    for partition in range(2):
        part = root / f"orders-{partition}"
        part.mkdir(parents=True)
        start = 0
        for seg in range(3):
            blob = b"".join(_message(layout, 100 * seg + i) for i in range(40))
            if partition == 0 and seg == 2:
                blob += _message(layout, 999)[:30]
            path = part / LAYOUTS[layout][2](start)
            path.write_bytes(blob)
            paths.append(path)
            start += len(blob)
    return paths


def _log_bytes(reads: dict[str, int]) -> int:
    return sum(n for path, n in reads.items() if path.endswith((".jafka", ".meta")))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_recover_plan_takes_validate_reading(tmp_path: Path, layout: str, jobs: int) -> None:
    validate, plan, _name, _open = LAYOUTS[layout]
    _store(tmp_path / "store", layout)
    root = tmp_path / "store"
    alone = plan(root).to_dict()
    with lm.shared_reading():
        report = validate(root, ValidateOptions(jobs=jobs))
        with count_reads() as reads:
            shared = plan(root).to_dict()
    assert report.failed is False and report.files
    # the plan reads no segment, but the bytes past the cut of the one it cuts (what the cut drops)
    torn = tmp_path / "store" / "orders-0"
    assert all(Path(path).parent == torn for path in reads) and _log_bytes(reads) <= FIXED, dict(reads)
    assert shared == alone
    assert shared["steps"], "the torn tail is cut"


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_changed_segment_is_read_again(tmp_path: Path, layout: str) -> None:
    validate, plan, _name, _open = LAYOUTS[layout]
    paths = _store(tmp_path / "store", layout)
    root = tmp_path / "store"
    with lm.shared_reading():
        validate(root, ValidateOptions(jobs=1))
        last = paths[-1]  # the healthy last segment of the second partition: torn now
        last.write_bytes(last.read_bytes() + _message(layout, 998)[:25])
        with count_reads() as reads:
            shared = plan(root).to_dict()
    assert last.stat().st_size <= _log_bytes(reads) <= last.stat().st_size + 2 * FIXED
    assert shared == plan(root).to_dict()
    assert len(shared["steps"]) == 2


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_each_reader_gets_its_own_copy(tmp_path: Path, layout: str) -> None:
    _store(tmp_path / "store", layout)
    data = LAYOUTS[layout][3](tmp_path / "store")
    with lm.shared_reading():
        first = [item for item in lm.read_store(data, layout) if isinstance(item, lm.SegmentRead)]
        expected = [[f.to_dict() for f in item.result.findings] for item in first]
        for item in first:
            item.result.findings.clear()
        with count_reads() as reads:
            again = [item for item in lm.read_store(data, layout) if isinstance(item, lm.SegmentRead)]
    assert _log_bytes(reads) == 0
    assert [[f.to_dict() for f in item.result.findings] for item in again] == expected
    assert any(expected)


def test_outside_the_block_nothing_is_kept(tmp_path: Path) -> None:
    _store(tmp_path / "store", "metaq")
    data = sm.open_metaq(tmp_path / "store")
    with lm.shared_reading():
        list(lm.read_store(data, "metaq"))
    with count_reads() as reads:
        list(lm.read_store(data, "metaq"))
    assert _log_bytes(reads) >= sum(p.stat().st_size for p in (tmp_path / "store").rglob("*.meta"))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_report_inside_the_block_reads_the_judgement_once(tmp_path: Path, layout: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``report`` (validate, recover's plan, clean's plan, stats) runs inside the block
    (``ops.report.one_judgement``): validate's reading serves recover's plan and stats (its count
    of each segment, ``ops.stats.legacy.counter``, rides on that reading); without the block,
    each verb reads the store."""
    import contextlib
    import io

    import mqtool.ops.report as ops_report
    from mqtool.cli.app import run

    paths = _store(tmp_path / "store", layout)
    total = sum(p.stat().st_size for p in paths)
    args = ["report", str(tmp_path / "store"), "-j", "1", "--out", str(tmp_path / "report.html"), "--overwrite"]
    ratios = []
    for shared in (False, True):
        with contextlib.ExitStack() as stack:
            if not shared:  # the report without its block: every verb reads the store
                monkeypatch.setattr(ops_report, "one_judgement", lambda _layout: contextlib.nullcontext())
            else:
                monkeypatch.undo()
            reads = stack.enter_context(count_reads())
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            err = stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
            assert run(args) == 0, err.getvalue()
        ratios.append(_log_bytes(reads) / total)
    assert ratios[0] >= 2.9, ratios  # validate, recover's plan and stats: three readings
    assert ratios[1] <= 1.1, ratios  # validate's reading only


# --- a reader's fold riding on the reading (stats' count in report) -----------------------------------------


@dataclass(frozen=True)
class _Folder:
    """A fold that records every message the walk hands it: (position, size on disk, code)."""

    tag: str = "a"

    def __call__(self, task: lm.SegmentTask) -> _Fold:
        return _Fold(task.path)


class _Fold:
    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: list[tuple[int, int, str | None]] = []

    def add(self, scanned: lm.ScannedMessage) -> None:
        self.seen.append((scanned.position, lm.message_size(scanned.message), scanned.code))

    def finish(self, result: lm.SegmentResult, error: object) -> tuple[str, list[tuple[int, int, str | None]], int, bool]:
        return (self.path, self.seen, result.size, error is None)


def _maker(task: lm.SegmentTask, part: object) -> _Folder:
    return _Folder()


def _damaged(root: Path, layout: str) -> None:
    """``_store`` with a flipped payload byte (a CRC mismatch whose frame holds) in a middle segment."""
    paths = _store(root, layout)
    data = bytearray(paths[1].read_bytes())
    size = len(_message(layout, 0))  # every message of ``_store`` has this size
    data[20 * size + size - 5] ^= 0xFF  # in the payload of the 21st message
    paths[1].write_bytes(bytes(data))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_fold_rides_on_validate_reading(tmp_path: Path, layout: str, jobs: int) -> None:
    """Inside ``shared_reading(fold=...)`` validate's reading (in-process or in its pool) also feeds
    each segment's fold, and ``read_folded`` hands its answer over without reading the segment:
    the answer a reading of the segment outside the block makes, the damaged message included."""
    validate = LAYOUTS[layout][0]
    root = tmp_path / "store"
    _damaged(root, layout)
    data = LAYOUTS[layout][3](root)
    tasks = lm.plan_reading(data, layout).tasks
    alone = [lm.read_segment(replace(task, fold=_Folder())).folded for task, _ in tasks]
    with lm.shared_reading(fold=_maker):
        validate(root, ValidateOptions(jobs=jobs))
        with count_reads() as reads:
            shared = [lm.read_folded(task, _Folder()) for task, _ in tasks]
    assert _log_bytes(reads) == 0, dict(reads)
    assert [res.folded for res in shared] == alone
    assert any(code is not None for _path, seen, _size, _ok in alone for _p, _n, code in seen)  # the damaged message


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_fold_is_not_taken_from_a_changed_file_or_another_folder(tmp_path: Path, layout: str) -> None:
    validate = LAYOUTS[layout][0]
    paths = _store(tmp_path / "store", layout)
    root = tmp_path / "store"
    data = LAYOUTS[layout][3](root)
    with lm.shared_reading(fold=_maker):
        validate(root, ValidateOptions(jobs=1))
        last = paths[-1]
        last.write_bytes(last.read_bytes() + _message(layout, 998))
        tasks = {task.path: task for task, _ in lm.plan_reading(data, layout).tasks}
        with count_reads() as reads:
            changed = lm.read_folded(tasks[str(last)], _Folder())
            other = lm.read_folded(tasks[str(paths[0])], _Folder("b"))  # not the folder of the reading
    assert _log_bytes(reads) == last.stat().st_size + paths[0].stat().st_size
    assert changed.folded == lm.read_segment(replace(tasks[str(last)], fold=_Folder())).folded
    assert len(cast(tuple[str, list[object], int, bool], changed.folded)[1]) == 41
    assert other.folded_by == _Folder("b") and other.folded == lm.read_segment(replace(tasks[str(paths[0])], fold=_Folder("b"))).folded


def test_readers_of_the_judgement_get_no_fold(tmp_path: Path) -> None:
    """A kept reading handed to a reader of the judgement (recover's plan) leaves the fold's answer
    out; the fold's reader gets it."""
    _store(tmp_path / "store", "metaq")
    data = sm.open_metaq(tmp_path / "store")
    with lm.shared_reading(fold=_maker):
        first = [item.result for item in lm.read_store(data, "metaq") if isinstance(item, lm.SegmentRead)]
        again = [item.result for item in lm.read_store(data, "metaq") if isinstance(item, lm.SegmentRead)]
    assert all(res.folded is not None and res.folded_by == _Folder() for res in first)
    assert all(res.folded is None for res in again)
