"""The store's byte helpers for commands that compare or copy bytes without judging them."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from mqtool.errors import PlanChangedError
from mqtool.store.files import copy_out, file_holds, read_range


def test_copy_out_hands_every_byte_and_its_crc(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    data = bytes(range(256)) * 40_000  # several pieces
    path.write_bytes(data)
    out: list[bytes] = []
    assert copy_out(path, len(data), out.append) == zlib.crc32(data)
    assert b"".join(out) == data and len(out) > 1


def test_copy_out_refuses_a_file_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    path.write_bytes(b"abc")
    with pytest.raises(PlanChangedError):
        copy_out(path, 4, lambda _b: None)


def test_file_holds_and_read_range(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    path.write_bytes(b"0123456789")
    assert file_holds(path, b"0123456789")
    assert not file_holds(path, b"012345678")
    assert not file_holds(path, b"0123456780")
    assert not file_holds(tmp_path / "missing", b"")
    assert read_range(path, 3, 4) == b"3456" and read_range(path, 8, 10) == b"89"
