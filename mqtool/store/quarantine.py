"""Quarantine: every byte a destructive command removes is kept, with a manifest, before it goes.

Layout: ``<quarantine root>/<UTC timestamp>-<pid>/`` holding one file per kept range or file and
``manifest.json``::

    {"version": 1, "tool": "mqtool", "command": "recover", "store": "/abs/store/root",
     "created": "2026-11-22T03:50:01Z",
     "entries": [{"kind": "range", "path": "commitlog/00000000000000000000", "position": 8084,
                  "length": 108, "crc32": 1234, "file": "0001-00000000000000000000@8084.bin",
                  "zero": false, "size_before": 1073741824}, ...]}

``kind`` is ``range`` (bytes cut from, or about to be overwritten in, a file that stays),
``file`` (a whole file removed or replaced) or ``created`` (a file or directory the command added).
``zero`` entries are all-zero bytes: only their extent is recorded.  The kept bytes
are fsynced and the manifest is rewritten atomically (temp + fsync + rename) after every entry,
*before* the store is touched, so a crash at any point leaves every removed byte recoverable.
``mqtool recover --undo MANIFEST`` puts them back.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqtool.errors import CorruptDataError, StoreIOError, StoreLayoutError
from mqtool.store.files import ReadOnlyFile
from mqtool.store.mutate import Mutator

MANIFEST = "manifest.json"


def default_quarantine_root(store_root: Path) -> Path:
    return Path(store_root).resolve().parent / "mqtool-quarantine"


@dataclass
class Kept:
    kind: str
    path: str
    position: int
    length: int
    crc32: int
    file: str | None
    zero: bool
    size_before: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Quarantine:
    """One run's quarantine directory (created on first use)."""

    def __init__(self, mutator: Mutator, store_root: Path, root: Path, command: str) -> None:
        self.mutator = mutator
        self.store_root = Path(store_root).resolve()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.directory = Path(root).resolve() / f"{stamp}-{os.getpid()}"
        self.command = command
        self.entries: list[Kept] = []
        self._created = False

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST

    def _ensure(self) -> None:
        if not self._created:
            # never share a directory with an earlier run (same pid in the same second: an
            # in-process caller, or a reused pid): its manifest would be overwritten
            base, n = self.directory, 1
            while self.directory.exists():
                n += 1
                self.directory = base.with_name(f"{base.name}-{n}")
            self.mutator.mkdir(self.directory)
            self._created = True

    def _relative(self, path: Path) -> str:
        resolved = Path(path).parent.resolve() / Path(path).name
        try:
            return resolved.relative_to(self.store_root).as_posix()
        except ValueError:
            return str(resolved)

    def keep_range(self, path: Path, position: int, length: int) -> Kept:
        """Copy ``length`` bytes at ``position`` of ``path`` into the quarantine (fsynced)."""
        self._ensure()
        size_before = Path(path).stat().st_size
        crc, zero = region_crc_and_zero(path, position, length)
        name = None
        if not zero:
            name = f"{len(self.entries) + 1:04d}-{Path(path).name}@{position}.bin"
            self.mutator.copy_file(Path(path), self.directory / name, position=position, length=length)
        kept = Kept("range", self._relative(path), position, length, crc, name, zero, size_before)
        self._add(kept)
        return kept

    def keep_file(self, path: Path) -> Kept:
        """Copy a whole file into the quarantine (all-zero files are only recorded)."""
        self._ensure()
        size = Path(path).stat().st_size
        crc, zero = region_crc_and_zero(path, 0, size)
        name = None
        if not zero:
            name = f"{len(self.entries) + 1:04d}-{Path(path).name}"
            self.mutator.copy_file(Path(path), self.directory / name)
        kept = Kept("file", self._relative(path), 0, size, crc, name, zero, size)
        self._add(kept)
        return kept

    def record_extended(self, path: Path, size_before: int, added: int) -> Kept:
        """Note that ``added`` zero bytes are appended to ``path`` (``size_before`` bytes long):
        nothing of the file goes, ``--undo`` truncates it back."""
        self._ensure()
        crc, left = 0, added
        while left:  # the CRC-32 of the zeros, as every zero entry carries
            n = min(left, 1 << 20)
            crc, left = zlib.crc32(bytes(n), crc), left - n
        kept = Kept("extended", self._relative(path), size_before, added, crc & 0xFFFFFFFF, None, True, size_before)
        self._add(kept)
        return kept

    def record_created(self, path: Path) -> Kept:
        """Note a file (or directory) the command creates, so ``--undo`` can remove it again."""
        self._ensure()
        kept = Kept("created", self._relative(path), 0, 0, 0, None, True, 0)
        self._add(kept)
        return kept

    def _add(self, kept: Kept) -> None:
        self.entries.append(kept)
        doc = {
            "version": 1,
            "tool": "mqtool",
            "command": self.command,
            "store": str(self.store_root),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "entries": [e.to_dict() for e in self.entries],
        }
        self.mutator.replace_file(self.manifest_path, (json.dumps(doc, indent=2) + "\n").encode())


def region_crc(path: Path, position: int, length: int) -> int:
    return region_crc_and_zero(path, position, length)[0]


def region_crc_and_zero(path: Path, position: int, length: int) -> tuple[int, bool]:
    """CRC-32 of ``[position, position+length)`` of ``path`` and whether it is all zeros."""
    crc = 0
    zero = True
    with ReadOnlyFile(path) as f:
        pos, end = position, min(position + length, f.size)
        while pos < end:
            data = f.pread(pos, min(1 << 20, end - pos))
            crc = zlib.crc32(data, crc)
            if zero and data.count(0) != len(data):
                zero = False
            pos += len(data)
    return crc & 0xFFFFFFFF, zero


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise StoreIOError.from_os_error(exc, path) from None
    except ValueError as exc:  # not the kind of file --undo takes: exit 3, as --from-plan's plan file
        raise StoreLayoutError(path=path, expected="an mqtool quarantine manifest (JSON)", found=f"not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "mqtool" or "entries" not in doc or "store" not in doc:
        raise StoreLayoutError(path=path, expected="an mqtool quarantine manifest", found=f"another JSON document ({type(doc).__name__})")
    return doc


@dataclass(frozen=True)
class Restored:
    path: str
    position: int
    length: int
    kind: str


def undo(manifest_path: Path, mutator_factory: Callable[[Path, Path], Mutator]) -> list[Restored]:
    """Put every quarantined byte back where it came from (last removed, first restored).

    Each kept file's CRC is checked before it is used; a range goes back over the bytes the
    command wrote (zeros), a file is recreated (or replaced) atomically."""
    manifest_path = Path(manifest_path).resolve()
    doc = load_manifest(manifest_path)
    qdir = manifest_path.parent
    store = Path(doc["store"])
    mutator: Mutator = mutator_factory(store, qdir)
    restored = []
    for entry in reversed(doc["entries"]):
        target = Path(entry["path"])
        target = target if target.is_absolute() else store / target
        data = None
        if not entry["zero"] and entry["kind"] != "extended":
            source = qdir / entry["file"]
            try:
                data = source.read_bytes()
            except OSError as exc:
                raise StoreIOError.from_os_error(exc, source) from None
            if zlib.crc32(data) & 0xFFFFFFFF != entry["crc32"] or len(data) != entry["length"]:
                raise CorruptDataError(
                    "quarantined bytes changed since they were kept",
                    path=source,
                    expected=f"{entry['length']} bytes with CRC-32 {entry['crc32']}",
                    found=f"{len(data)} bytes with CRC-32 {zlib.crc32(data) & 0xFFFFFFFF}",
                )
        if entry["kind"] == "created":
            if target.is_dir() and not target.is_symlink():
                if not any(target.iterdir()):  # a directory keeps what others put in it
                    mutator.rmdir(target)
            elif target.exists():
                mutator.delete(target)
        elif entry["kind"] == "extended":  # only zeros were appended: cut them off again
            if target.exists() and target.stat().st_size > entry["size_before"]:
                mutator.truncate(target, entry["size_before"])
        elif entry["kind"] == "file":
            mutator.mkdir(target.parent)
            tmp = target.with_name(f".mqtool-tmp-{target.name}")
            mutator.create_file(tmp, data or b"", size=entry["length"])
            mutator.rename(tmp, target)
        else:
            if not target.exists():
                mutator.create_file(target, b"", size=entry["size_before"])
            if data is not None:
                mutator.write_at(target, entry["position"], data)
            elif entry["length"]:
                mutator.zero_range(target, entry["position"], entry["length"])
            if target.stat().st_size < entry["size_before"]:
                mutator.truncate(target, entry["size_before"])
        restored.append(Restored(str(target), entry["position"], entry["length"], entry["kind"]))
    return restored
