"""Hostile filesystems for the Kafka, Jafka and MetaQ layouts (RocketMQ: tests/test_hostile_fs.py).

Links out of the root and link loops, FIFOs and devices named like segments, permission
denied, files vanishing mid-scan, zero-byte and sparse files, 10,000 segment files: every
command ends with a documented exit code and findings or a one-line error, never a traceback
or a hang, never reads through a link out of the root and never modifies anything outside it.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats import segment_names as segnames
from tests.conftest import FIXTURES


@dataclass(frozen=True)
class Layout:
    name: str
    fixture: str
    partition: str  # a partition directory of the fixture
    suffix: str  # segment file suffix
    dump: tuple[str, ...]  # dump sub-command for one segment
    prefix: str  # finding-code prefix


LAYOUTS = [
    Layout("kafka", "kafka-logs", "orders-0", ".log", ("dump", "kafka-log"), "KAFKA-"),
    Layout("jafka", "jafka-data", "orders-0", ".jafka", ("dump", "jafka"), "JAFKA-"),
    Layout("metaq", "metaq-data", "trade-0", ".meta", ("dump", "metaq"), "METAQ-"),
]
FUTURE = str(4_000_000_000_000)  # "now" for clean: everything has expired


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def read_only_commands(layout: Layout, root: Path, segment: Path) -> list[tuple]:
    return [
        ("validate", root, "--jobs", "1", "--json"),
        ("info", root, "--json"),
        (*layout.dump, segment, "--jsonl"),
        ("recover", root, "--json"),
        ("stats", root, "--json"),
        ("clean", root, "--json", "--now", FUTURE),
    ]


def codes(root: Path) -> set[str]:
    code, out, _ = cli("validate", root, "--jobs", "1", "--json")
    assert code in (0, 1)
    return {f["code"] for f in json.loads(out)["findings"]}


def segments(part: Path, suffix: str) -> list[Path]:
    return sorted(p for p in part.iterdir() if p.name.endswith(suffix) and p.name[:20].isdigit())


def layout_segment_name(offset: int, suffix: str) -> str:
    """The name of the segment starting at ``offset`` in the layout whose files end in ``suffix``."""
    return {".log": lambda o: segnames.kafka_file_name(o, "log"), ".jafka": segnames.jafka_file_name, ".meta": segnames.metaq_file_name}[suffix](offset)


def next_name(part: Path, suffix: str) -> str:
    last = int(segments(part, suffix)[-1].name[:20])
    return layout_segment_name(last + 10_000_000, suffix)


@pytest.fixture(params=LAYOUTS, ids=lambda lay: lay.name)
def case(request, tmp_path):
    layout: Layout = request.param
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / layout.fixture, root)
    return layout, root, root / layout.partition


def test_link_loops_are_not_followed(case):
    layout, root, part = case
    (root / "loop-0").symlink_to(root)
    (part / "loop").symlink_to(part)
    seg = segments(part, layout.suffix)[0]
    for command in read_only_commands(layout, root, seg):
        code, _, _ = cli(*command)
        assert code in (0, 1), command


def test_segment_link_out_of_the_root_is_not_read(case, tmp_path):
    layout, root, part = case
    outside = tmp_path / "outside-secret"
    outside.write_bytes(b"secret!!" * 2000)
    (part / next_name(part, layout.suffix)).symlink_to(outside)
    found = codes(root)
    assert any(c.startswith(layout.prefix) and ("LINK" in c or "UNREADABLE" in c) for c in found), found
    for command in read_only_commands(layout, root, segments(part, layout.suffix)[0]):
        code, out, _ = cli(*command)
        assert code in (0, 1), command
        assert "secret!!" not in out and "c2VjcmV0" not in out  # nor its base64


def test_fifo_and_device_named_like_segments(case):
    layout, root, part = case
    os.mkfifo(part / next_name(part, layout.suffix))
    first = segments(part, layout.suffix)[0]
    (part / (first.name[:20] + ".index" if layout.name == "kafka" else "00000000000099999999" + layout.suffix)).unlink(missing_ok=True)
    (part / ("00000000000099999999" + (".index" if layout.name == "kafka" else layout.suffix))).symlink_to("/dev/zero")
    found = codes(root)
    assert any(c.startswith(layout.prefix) and ("UNREADABLE" in c or "LINK" in c) for c in found), found
    for command in read_only_commands(layout, root, first):
        code, _, _ = cli(*command)
        assert code in (0, 1, 3), command


def test_recover_and_clean_never_touch_files_outside(case, tmp_path):
    layout, root, part = case
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"\xff" * 5000)
    (part / next_name(part, layout.suffix)).symlink_to(outside)
    outside_dir = tmp_path / "outside-dir"
    shutil.copytree(part, outside_dir)
    before = {p.name: p.read_bytes() for p in outside_dir.iterdir()}
    (root / (layout.partition.rsplit("-", 1)[0] + "-77")).symlink_to(outside_dir)
    for command in (("recover", root, "--apply", "--force", "--full"), ("clean", root, "--apply", "--now", FUTURE, "--interval-ms", "0")):
        if layout.name != "kafka":
            command = tuple(a for a in command if a != "--full")
        code, _, _ = cli(*command)
        assert code in (0, 1, 3), command
        assert outside.read_bytes() == b"\xff" * 5000
        assert {p.name: p.read_bytes() for p in outside_dir.iterdir()} == before


def test_permission_denied_is_a_finding_or_a_clear_error(case, monkeypatch):
    """EACCES injected at open() (root reads whatever the permission bits say)."""
    import mqtool.store.files as files

    layout, root, part = case
    target = segments(part, layout.suffix)[0]
    real_open = os.open

    def guarded(path, flags, *args):
        if Path(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(files.os, "open", guarded)
    found = codes(root)
    assert any(c.startswith(layout.prefix) and "UNREADABLE" in c for c in found), found
    code, _, err = cli(*layout.dump, target, "--jsonl")
    assert code == 3 and "Permission denied" in err and str(target) in err
    assert len(err.strip().splitlines()) == 1


def test_file_vanishing_between_listing_and_reading(case, monkeypatch):
    layout, root, part = case
    target = segments(part, layout.suffix)[-1]
    real_open = os.open
    import mqtool.store.files as files

    def vanishing(path, flags, *args):
        if Path(path) == target:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(files.os, "open", vanishing)
    for command in read_only_commands(layout, root, segments(part, layout.suffix)[0]):
        code, _, _ = cli(*command)
        assert code in (0, 1, 3), command


def test_zero_byte_and_sparse_files(case):
    layout, root, part = case
    (part / next_name(part, layout.suffix)).write_bytes(b"")
    with open(part / layout_segment_name(int(next_name(part, layout.suffix)[:20]) + 1, layout.suffix), "wb") as f:
        f.truncate(1 << 20)  # sparse, all zeros
    for command in read_only_commands(layout, root, segments(part, layout.suffix)[-1]):
        code, _, _ = cli(*command)
        assert code in (0, 1), command


def test_ten_thousand_segment_files(tmp_path):
    """10,000 segments in one partition of each layout: validate and info finish, memory bounded."""
    script = f"""
import resource, shutil, sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from mqtool.cli.app import run
from mqtool.formats import segment_names as segnames
for fixture, part, name in (
    ("kafka-logs", "many-0", lambda o: segnames.kafka_file_name(o, "log")),
    ("jafka-data", "many-0", segnames.jafka_file_name),
    ("metaq-data", "many-0", segnames.metaq_file_name),
):
    root = Path({str(tmp_path)!r}) / fixture
    shutil.copytree(Path({str(FIXTURES)!r}) / fixture, root)
    pdir = root / part
    pdir.mkdir()
    for i in range(10_000):
        (pdir / name(i * 1000)).write_bytes(b"")
    for cmd in (["validate", str(root), "--jobs", "1", "--jsonl"], ["info", str(root), "--json"]):
        code = run(cmd)
        assert code in (0, 1), (fixture, cmd, code)
print("peak", next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) // 1024 if sys.platform == "linux" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)  # VmHWM: this image only (ru_maxrss counts the forking parent too)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split("peak")[-1]) < 500
