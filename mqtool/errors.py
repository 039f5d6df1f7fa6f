"""The one exception hierarchy of mqtool.

Every error that reaches a user names *where* (file path and byte position) and
says what was *expected* and what was *found*::

    commitlog/00000000000000000000:8084: expected magic code 0xDAA320A7, found 0x00000000

Format decoders (``mqtool.formats``) know no files: they raise with a position
relative to the buffer they were given.  The store layer rebases the error onto
the file (``err.at(path, base)``) before it travels further up.

What broke is data, not words: ``kind`` names it from a small vocabulary (``KINDS``), set where
the error is raised, kept by ``at()`` and ``to_dict()``.  Finding codes are chosen from
``kind`` (and the error's class), never from the message text.
"""

from __future__ import annotations

import os
from typing import Any, Literal, get_args

#: What an error says broke.  ``magic``: a magic/version byte; ``size``: a length or size field
#: (TOTALSIZE, an entry size, batch_length); ``crc``: a stored checksum; ``encoding``: text that
#: is not what its charset says (UTF-8); ``truncated``: a structure claims more bytes than are
#: present; ``compression``: a compressed payload that does not decompress; ``offset-order``: an
#: offset that does not increase; ``records``: the records inside a batch or wrapper;
#: ``unsupported``: well-formed data mqtool cannot handle.
ErrorKind = Literal["magic", "size", "crc", "encoding", "truncated", "compression", "offset-order", "records", "unsupported"]
KINDS: frozenset[str] = frozenset(get_args(ErrorKind))


class MqError(Exception):
    """Base of every error mqtool raises on purpose.

    ``message`` is a short description; ``expected``/``found`` are rendered as
    ``expected X, found Y``.  ``path`` and ``position`` locate the problem.  ``kind`` (one of
    ``KINDS``) names what broke; without one the class's ``default_kind`` applies.
    """

    #: The ``kind`` of an error raised without one.
    default_kind: ErrorKind | None = None

    def __init__(
        self,
        message: str = "",
        *,
        path: str | os.PathLike[str] | None = None,
        position: int | None = None,
        expected: str | None = None,
        found: str | None = None,
        kind: ErrorKind | None = None,
    ) -> None:
        if kind is not None and kind not in KINDS:
            raise ValueError(f"error kind {kind!r} is not one of {sorted(KINDS)}")
        self.message = message
        self.path = os.fspath(path) if path is not None else None
        self.position = position
        self.expected = expected
        self.found = found
        self.kind: ErrorKind | None = kind if kind is not None else self.default_kind
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.position is not None:
                where += f":{self.position}"
            where += ": "
        elif self.position is not None:
            where = f"byte {self.position}: "
        parts = []
        if self.message:
            parts.append(self.message)
        if self.expected is not None or self.found is not None:
            parts.append(f"expected {self.expected}, found {self.found}")
        return where + ": ".join(parts) if parts else where.rstrip(": ")

    @property
    def reason(self) -> str:
        """The message without its location: ``message: expected X, found Y`` (the text of a
        finding about this error, which carries the path and position itself)."""
        parts = []
        if self.message:
            parts.append(self.message)
        if self.expected is not None or self.found is not None:
            parts.append(f"expected {self.expected}, found {self.found}")
        return ": ".join(parts)

    def at(self, path: str | os.PathLike[str] | None, base: int = 0) -> MqError:
        """Return a copy located in ``path`` with ``position`` shifted by ``base``."""
        clone = self.__class__.__new__(self.__class__)
        clone.__dict__.update(self.__dict__)
        if path is not None and self.path is None:
            clone.path = os.fspath(path)
        if self.position is not None and self.path is None:
            clone.position = self.position + base
        Exception.__init__(clone, str(clone))
        return clone

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": type(self).__name__,
            "message": self.message,
            "path": self.path,
            "position": self.position,
            "expected": self.expected,
            "found": self.found,
            "kind": self.kind,
        }


class CorruptDataError(MqError):
    """Bytes that cannot be what the format says they must be."""


class ChecksumError(CorruptDataError):
    """A stored checksum does not match the bytes it covers."""

    default_kind = "crc"


class TruncatedDataError(CorruptDataError):
    """A structure claims more bytes than are present."""

    default_kind = "truncated"


class UnsupportedFormatError(MqError):
    """Well-formed data that mqtool cannot handle (a codec not installed, RocksDB CQ...)."""

    default_kind = "unsupported"


class StoreLayoutError(MqError):
    """A path that is not a store (or not the kind of file a command expects)."""


class StoreIOError(MqError):
    """An operating-system error while reading or writing a store."""

    @classmethod
    def from_os_error(cls, exc: OSError, path: str | os.PathLike[str] | None = None) -> StoreIOError:
        target = path if path is not None else exc.filename
        return cls(exc.strerror or str(exc), path=target)


class LockBusyError(MqError):
    """Another mqtool run (or writer) holds the lock of the store: try again later."""


class BrokerRunningError(MqError):
    """The broker holds its own lock on the store: it is running, and a change to its files
    needs it stopped (or the command's force flag) -- retrying will not help."""


class PlanChangedError(MqError):
    """The files changed between planning and applying a destructive plan."""


def hexint(value: int, width: int = 8) -> str:
    """Render an unsigned integer the way messages show magic codes: ``0xDAA320A7``."""
    return f"0x{value & ((1 << (4 * width)) - 1):0{width}X}"


__all__ = [
    "ErrorKind",
    "KINDS",
    "MqError",
    "CorruptDataError",
    "ChecksumError",
    "TruncatedDataError",
    "UnsupportedFormatError",
    "StoreLayoutError",
    "StoreIOError",
    "LockBusyError",
    "PlanChangedError",
    "hexint",
]
