"""Damage that leaves a RocketMQ record's frame intact (issue 30): every framed record comes through.

On copies of the fixture store with one such defect -- a flipped body byte (RMQ-CL-BODY-CRC), a
PHYSICALOFFSET that is not the record's address (RMQ-CL-PHYS-OFFSET), a QUEUEOFFSET out of its
queue's sequence (RMQ-CL-QUEUE-OFFSET) -- dump, stats, scan and query list the same records as on
the healthy store (245), the damaged one with its finding, and the finding is stated once on
stderr.  Recover plans as before: the broker's recovery (checkCRCOnRecover) stops at a body CRC
mismatch, and so does recover's walk."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq.commitlog import PHYSICAL_OFFSET_POSITION, QUEUE_OFFSET_POSITION, RecordWalker, body_position
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"
RECORDS = 245  # the healthy fixture's records


def mqtool(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def _file(root: Path, index: int) -> Path:
    return sorted((root / "commitlog").iterdir())[index]


def body_crc(root: Path) -> tuple[Path, int]:
    """The issue's example: byte 5000 of the second file, inside the body of the record at 4867."""
    path = _file(root, 1)
    raw = bytearray(path.read_bytes())
    raw[5000] ^= 1
    path.write_bytes(bytes(raw))
    return path, 4867


def body_crc_last_file(root: Path) -> tuple[Path, int]:
    """A body byte of the fourth record of the last file holding data."""
    path = _file(root, 5)
    pos, rec = list(RecordWalker(path.read_bytes()))[3]
    raw = bytearray(path.read_bytes())
    raw[pos + body_position(rec.sys_flag) + 2] ^= 1
    path.write_bytes(bytes(raw))
    return path, pos


def phys_offset(root: Path) -> tuple[Path, int]:
    path = _file(root, 2)
    pos, rec = list(RecordWalker(path.read_bytes()))[3]
    _patch(path, pos + PHYSICAL_OFFSET_POSITION, struct.pack(">q", rec.physical_offset + 4096))
    return path, pos


def queue_offset(root: Path) -> tuple[Path, int]:
    path = _file(root, 0)
    pos, rec = list(RecordWalker(path.read_bytes()))[7]
    _patch(path, pos + QUEUE_OFFSET_POSITION, struct.pack(">q", rec.queue_offset + 1000))
    return path, pos


CASES = {
    "RMQ-CL-BODY-CRC": body_crc,
    "RMQ-CL-BODY-CRC/last": body_crc_last_file,
    "RMQ-CL-PHYS-OFFSET": phys_offset,
    "RMQ-CL-QUEUE-OFFSET": queue_offset,
}
#: the code a row carries: a queue-offset break is a fact about a queue's sequence (stated on
#: stderr), not about the record's own bytes, so its row carries none
ROW_CODE = {"RMQ-CL-BODY-CRC": "RMQ-CL-BODY-CRC", "RMQ-CL-BODY-CRC/last": "RMQ-CL-BODY-CRC", "RMQ-CL-PHYS-OFFSET": "RMQ-CL-PHYS-OFFSET"}


@pytest.fixture
def damaged(request, tmp_path):
    case = request.param
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    path, pos = CASES[case](root)
    return case, root, path, pos


def _validate_codes(capsys, root: Path) -> list[tuple[str, str, int]]:
    _code, out, _ = mqtool(capsys, "validate", root, "--json")
    return [(x["code"], Path(x["path"]).name, x["position"]) for x in json.loads(out)["findings"] if x["severity"] == "error"]


def _stderr_codes(err: str, code: str) -> list[str]:
    return [line for line in err.splitlines() if f" {code} " in line]


@pytest.mark.parametrize("damaged", list(CASES), indirect=True)
def test_dump_lists_every_framed_record(damaged, capsys):
    case, root, path, pos = damaged
    code_name = case.split("/")[0]
    (finding,) = [x for x in _validate_codes(capsys, root) if x[0] == code_name]
    for fmt in ("--jsonl", "--json"):
        code, out, err = mqtool(capsys, "dump", "commitlog", root, fmt)
        rows = [json.loads(line) for line in out.splitlines()] if fmt == "--jsonl" else json.loads(out)
        assert code == 1 and len(rows) == RECORDS, (case, fmt)
        assert len(_stderr_codes(err, code_name)) == 1, err  # one line per finding, from the one reading
        assert f"{finding[1]}:{finding[2]}" in err
        marked = [(Path(r["file"]).name, r["position"], r["finding"]) for r in rows if "finding" in r]
        expected = [(path.name, pos, ROW_CODE[case])] if case in ROW_CODE else []
        assert marked == expected, (case, fmt)
    code, out, _ = mqtool(capsys, "dump", "commitlog", root)  # the table marks the row
    if case in ROW_CODE:
        assert out.count(f"[{ROW_CODE[case]}]") == 1


@pytest.mark.parametrize("damaged", list(CASES), indirect=True)
def test_stats_counts_every_framed_record(damaged, capsys):
    case, root, _path, _pos = damaged
    code, out, err = mqtool(capsys, "stats", root, "--json")
    totals = json.loads(out)["totals"]
    assert code == 1
    assert totals["messages"] == RECORDS
    assert totals["damaged_messages"] == (1 if case in ROW_CODE else 0)
    assert len(_stderr_codes(err, case.split("/")[0])) == 1, err


@pytest.mark.parametrize("damaged", list(CASES), indirect=True)
def test_query_finds_the_damaged_record(damaged, capsys):
    case, root, path, pos = damaged
    rec = dict(RecordWalker(path.read_bytes(), check_crc=False))[pos]
    key = rec.keys[0]
    address = int(path.name) + pos
    for args in (("--key", key), ("--key", key, "--scan")):
        code, out, _err = mqtool(capsys, "query", root, *args, "--jsonl")
        rows = [json.loads(line) for line in out.splitlines()]
        hits = [r for r in rows if r["commitlog_offset"] == address]
        assert len(hits) == 1, (case, args, rows)
        assert hits[0].get("finding") == ROW_CODE.get(case), (case, args)
    if case != "RMQ-CL-QUEUE-OFFSET":  # the unit of that queue offset points at the record
        code, out, _err = mqtool(capsys, "query", root, "--topic", rec.topic, "--queue-id", rec.queue_id, "--queue-offset", rec.queue_offset, "--jsonl")
        (row,) = [json.loads(line) for line in out.splitlines()]
        assert row["commitlog_offset"] == address and row.get("finding") == ROW_CODE.get(case)


@pytest.mark.parametrize("damaged", list(CASES), indirect=True)
def test_scan_exports_every_framed_record(damaged):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark")
    from mqtool.pipeline import sources as S

    case, root, path, pos = damaged
    for reader in (S.read_commitlog, S.read_commitlog_records):
        for options in ({"withProblems": "true"}, {"withProblems": "true", "splitSize": "3000"}):
            opts = S.parse_options({"path": str(root), **options})
            schema = S.arrow_schema(S._columns(S.COMMITLOG_COLUMNS, opts, "commitlog"))
            table = pa.Table.from_batches([b for part in S.plan_commitlog(opts) for b in reader(part, opts, schema)], schema=schema)
            kinds = table["row_kind"].to_pylist()
            assert kinds.count("record") == RECORDS, (case, reader.__name__, options)
            records = {(Path(f).name, p) for f, p, k in zip(table["file"].to_pylist(), table["position"].to_pylist(), kinds) if k == "record"}
            assert (path.name, pos) in records


@pytest.mark.parametrize("case", ["RMQ-CL-BODY-CRC", "RMQ-CL-BODY-CRC/last"])
def test_recover_plans_as_before(case, tmp_path, capsys):
    """Recover keeps the broker's recovery: with checkCRCOnRecover it stops at a body CRC
    mismatch.  In a file before the last (not scanned by a normal recovery) the damage is
    unfixable and nothing is cut; in the last file the cut is at the damaged record, dropping it
    and every record after it (the plan recover made before issue 30)."""
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    path, pos = CASES[case](root)
    code, out, _err = mqtool(capsys, "recover", root, "--json")
    plan = json.loads(out)
    if case == "RMQ-CL-BODY-CRC":
        assert (plan["has_work"], plan["valid_end"], plan["records_dropped"], plan["steps"]) == (False, 86399, 0, [])
        assert [(x["code"], x["position"]) for x in plan["unfixable"]] == [("RMQ-CL-BODY-CRC", 4875)]
    else:
        assert (plan["has_work"], plan["valid_end"], plan["records_dropped"], plan["bytes_cut"]) == (True, int(path.name) + pos, 9, 3437)
