"""One reading of a Jafka or MetaQ store for several verbs (``store.model.legacy.shared_reading``).

Inside the block a segment's judgement is read once: validate's reading (in-process or in its
process pool) is handed to recover's plan, which then reads no log byte; the plan is the plan made
without sharing.  A segment changed since is read again, and each reader gets a copy of its own.
"""

from __future__ import annotations

from pathlib import Path

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
    (``ops.report.one_judgement``): validate's reading serves recover's plan, stats reads the
    messages; without the block, each verb reads the store."""
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
    assert ratios[1] <= 2.1, ratios  # validate's reading and stats' walk over the messages
