"""The RocksDB ConsumeQueue of a RocketMQ 5.2+ store, opened read-only (the filesystem part).

``RocksDBConsumeQueueStore`` keeps its database in ``<root>/consumequeue`` itself
(``StorePathConfigHelper.getStorePathConsumeQueue``), with the column families ``default`` (units)
and ``offset`` (``ConsumeQueueRocksDBStorage.postLoad``); a RocksDB directory is told by its
``CURRENT`` file.  Its bytes are decoded by ``formats.rocketmq.rocksdb_cq``.

RocksDB is read through ``rocksdict`` (the ``rocksdb`` extra: a wheel bundling RocksDB); without
it every reader raises ``UnsupportedFormatError`` naming the extra (exit 4).

Read-only, and the store is never written: the database is opened with RocksDB's read-only mode
(``DB::OpenForReadOnly``: no lock, no flush, no compaction, no new log or MANIFEST) from a private
temporary directory holding symbolic links to the database's files, because ``rocksdict`` 0.3
writes its own ``rocksdict-config.json`` into the directory it opens, read-only or not.  Only the
store's regular files with RocksDB's names are linked; ``LOCK`` and ``LOG*`` are not needed.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from mqtool.errors import CorruptDataError, MqError, StoreLayoutError, UnsupportedFormatError
from mqtool.formats.rocketmq import rocksdb_cq as rcq
from mqtool.store.files import is_regular_file

#: what ``pip`` installs to read a RocksDB ConsumeQueue
INSTALL_HINT = "the RocksDB ConsumeQueue (storeType=defaultRocksDB) needs rocksdict: pip install 'mqtool[rocksdb]'"

#: The files a RocksDB database reads when opened read-only.
_DB_FILE = re.compile(r"^(CURRENT|IDENTITY|MANIFEST-\d+|OPTIONS-\d+|\d+\.(sst|log|blob))$")


def db_dir(root: Path) -> Path:
    return Path(root) / "consumequeue"


def is_rocksdb_cq(root: Path) -> bool:
    """Whether the store at ``root`` holds a RocksDB ConsumeQueue (``consumequeue/CURRENT``)."""
    return is_regular_file(db_dir(root) / "CURRENT")


def find_db(path: Path) -> Path | None:
    """The RocksDB ConsumeQueue directory ``path`` names (a store root or its ``consumequeue``
    directory), or None."""
    path = Path(path)
    for cand in (path / "consumequeue", path):
        if is_regular_file(cand / "CURRENT"):
            return cand
    return None


def require_rocksdict() -> Any:
    """The ``rocksdict`` module; ``UnsupportedFormatError`` (exit 4) naming the extra without it."""
    try:
        import rocksdict
    except ImportError:
        raise UnsupportedFormatError(INSTALL_HINT, expected="rocksdict installed", found="not installed") from None
    return rocksdict


class RocksCq:
    """A RocksDB ConsumeQueue opened read-only: raw keys and values of its two column families,
    in key order.  Use as a context manager; ``close`` removes the private link directory."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        rocksdict = require_rocksdict()
        self._tmp = Path(tempfile.mkdtemp(prefix="mqtool-rocksdb-cq-"))
        self._db: Any = None
        #: bytes of the database's files (its SST, log, MANIFEST ... files)
        self.size = 0
        try:
            for entry in sorted(self.path.iterdir()):
                if _DB_FILE.match(entry.name) and is_regular_file(entry):
                    (self._tmp / entry.name).symlink_to(entry.resolve())
                    self.size += entry.stat().st_size
            raw = rocksdict.Options(raw_mode=True)
            try:
                families = rocksdict.Rdict.list_cf(str(self._tmp), raw)
            except Exception as exc:  # rocksdict raises plain Exception for RocksDB's status
                raise CorruptDataError("cannot read the RocksDB ConsumeQueue's MANIFEST", path=self.path, expected="a RocksDB database", found=self._ours(exc)) from None
            self.column_families: list[str] = list(families)
            extra = {name: rocksdict.Options(raw_mode=True) for name in self.column_families if name != rcq.UNITS_COLUMN_FAMILY}
            try:
                self._db = rocksdict.Rdict(str(self._tmp), options=raw, column_families=extra, access_type=rocksdict.AccessType.read_only())
            except Exception as exc:
                raise CorruptDataError("cannot open the RocksDB ConsumeQueue read-only", path=self.path, expected="a RocksDB database", found=self._ours(exc)) from None
        except BaseException:
            self.close()
            raise

    def has_offsets(self) -> bool:
        return rcq.OFFSET_COLUMN_FAMILY in self.column_families

    def units(self, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` of the ``default`` column family from ``start`` (the first key) on."""
        yield from self._items(self._db, start)

    def offsets(self) -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` of the ``offset`` column family (nothing when it is absent)."""
        if self.has_offsets():
            yield from self._items(self._db.get_column_family(rcq.OFFSET_COLUMN_FAMILY), None)

    def unit(self, key: bytes) -> bytes | None:
        try:
            value = self._db.get(key)
        except Exception as exc:
            raise CorruptDataError("cannot read a RocksDB key", path=self.path, expected="a readable database", found=self._ours(exc)) from None
        return value if isinstance(value, bytes) else None

    def _items(self, table: Any, start: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        # rocksdict's items() ends silently where RocksDB's iterator stops on an error (a block
        # checksum mismatch): the iterator's status is checked at the end, so a damaged SST is an
        # error, never a shorter table
        try:
            it = table.iter()
            if start is not None:
                it.seek(start)
            else:
                it.seek_to_first()
            while it.valid():
                yield bytes(it.key()), bytes(it.value())
                it.next()
            it.status()
        except MqError:
            raise
        except Exception as exc:
            raise CorruptDataError("cannot read the RocksDB ConsumeQueue", path=self.path, expected="readable SST and log files", found=self._ours(exc)) from None

    def _ours(self, exc: BaseException) -> str:
        """RocksDB's message, naming the store's files rather than the private link directory."""
        return str(exc).strip().replace(str(self._tmp), str(self.path))

    def close(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            finally:
                self._db = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> RocksCq:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def open_rocksdb_cq(path: Path) -> RocksCq:
    """Open the RocksDB ConsumeQueue ``path`` names (a store root or its ``consumequeue``
    directory) read-only; ``StoreLayoutError`` when there is none."""
    found = find_db(Path(path))
    if found is None:
        raise StoreLayoutError(expected="a RocksDB ConsumeQueue (consumequeue/CURRENT)", found="none", path=path)
    return RocksCq(found)
