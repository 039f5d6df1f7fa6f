"""RocketMQ ``checkpoint`` (``StoreCheckpoint``), ``abort`` and ``lock`` files.

``checkpoint`` is one mapped 4096-byte page (``OS_PAGE_SIZE``); all integers big-endian::

    pos  size  field                 meaning
    0    8     physicMsgTimestamp    store time of the last message of a thoroughly flushed
                                     CommitLog file
    8    8     logicsMsgTimestamp    store time of the last message dispatched to the consume
                                     queues, persisted by their thorough flush
    16   8     indexMsgTimestamp     endTimestamp of the last IndexFile that became full
    24   8     masterFlushedOffset   [5.0.0+] HA; 0 on 4.x and on brokers without HA
    32   8     confirmPhyOffset      [5.1.1+] controller / duplication mode
    40   4056  (unused)              zero

``getMinTimestamp`` = max(0, min(physic, logics) - 3000 ms) bounds where crash recovery starts
scanning; ``getMinTimestampIndex`` = min(that, index).  No checksum.  Partial writes: the five
longs are stored into the mapped page one by one and forced together, so a crash can leave a
mix of old and new values (each long is written whole); a checkpoint created but never flushed
is all zeros, which sends recovery back to the first CommitLog file.  The broker maps the full
page, so a shorter file reads as zero-extended by RocketMQ; we accept any buffer of at least
24 bytes and report missing 5.x fields as None.

``abort`` exists while a broker runs: [4.x] empty; [5.0.0+] the broker PID as decimal text
(``MixAll.string2File``).  ``lock`` holds the 4 ASCII bytes ``lock`` once a broker has taken its
``fcntl`` lock (the content says nothing about whether the lock is held now).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mqtool.errors import CorruptDataError
from mqtool.formats._binary import Buffer, decode_utf8, need

CHECKPOINT_SIZE = 4096
#: The three longs every version writes (4.x layout).
CHECKPOINT_V4 = struct.Struct(">qqq")
_LONG = struct.Struct(">q")
MASTER_FLUSHED_OFFSET_POSITION = CHECKPOINT_V4.size  # 24
CONFIRM_PHY_OFFSET_POSITION = MASTER_FLUSHED_OFFSET_POSITION + _LONG.size  # 32
#: All five longs (5.1.1+ layout).
CHECKPOINT_FIELDS = struct.Struct(">qqqqq")
CHECKPOINT_USED_SIZE = CHECKPOINT_FIELDS.size  # 40
#: ``getMinTimestamp`` safety margin.
MIN_TIMESTAMP_MARGIN_MS = 3000

LOCK_CONTENT = b"lock"


def _java_long(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


@dataclass(frozen=True)
class Checkpoint:
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    #: None when the buffer ends before position 24 + 8 (a 4.x-sized record).
    master_flushed_offset: int | None = None
    #: None when the buffer ends before position 32 + 8.
    confirm_phy_offset: int | None = None

    def min_timestamp(self) -> int:
        """``getMinTimestamp``: max(0, min(physic, logics) - 3000), in Java long arithmetic."""
        low = _java_long(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - MIN_TIMESTAMP_MARGIN_MS)
        return low if low >= 0 else 0

    def min_timestamp_index(self) -> int:
        """``getMinTimestampIndex``: min(min_timestamp(), indexMsgTimestamp)."""
        return min(self.min_timestamp(), self.index_msg_timestamp)

    @property
    def min_version(self) -> str | None:
        """Oldest broker version that writes what is set: ``"5.1.1"`` (confirmPhyOffset),
        ``"5.0.0"`` (masterFlushedOffset) or None (nothing 5.x-only in use: any version)."""
        if self.confirm_phy_offset:
            return "5.1.1"
        if self.master_flushed_offset:
            return "5.0.0"
        return None


def decode_checkpoint(buf: Buffer, position: int = 0) -> Checkpoint:
    """Decode a checkpoint; at least the 24 bytes of the three timestamps must be present."""
    need(buf, position, CHECKPOINT_V4.size, "checkpoint (physic, logics, index timestamps)")
    physic, logics, index = CHECKPOINT_V4.unpack_from(buf, position)
    available = len(buf) - position
    master = confirm = None
    if available >= CONFIRM_PHY_OFFSET_POSITION:
        (master,) = _LONG.unpack_from(buf, position + MASTER_FLUSHED_OFFSET_POSITION)
    if available >= CHECKPOINT_USED_SIZE:
        (confirm,) = _LONG.unpack_from(buf, position + CONFIRM_PHY_OFFSET_POSITION)
    return Checkpoint(physic, logics, index, master, confirm)


def encode_checkpoint(checkpoint: Checkpoint) -> bytes:
    """The full 4096-byte page (None fields written as 0, the rest zero)."""
    values = (
        checkpoint.physic_msg_timestamp,
        checkpoint.logics_msg_timestamp,
        checkpoint.index_msg_timestamp,
        checkpoint.master_flushed_offset or 0,
        checkpoint.confirm_phy_offset or 0,
    )
    for value in values:
        if not isinstance(value, int) or not -(1 << 63) <= value < (1 << 63):
            raise ValueError(f"checkpoint field {value!r} does not fit a signed 64-bit long")
    page = bytearray(CHECKPOINT_SIZE)
    CHECKPOINT_FIELDS.pack_into(page, 0, *values)
    return bytes(page)


# --- abort and lock ------------------------------------------------------------------------


def decode_abort(content: Buffer) -> int | None:
    """The PID a [5.x] broker wrote into ``abort``, or None for an empty [4.x] file.

    Anything but empty or decimal digits (surrounding ASCII whitespace tolerated) is corrupt.
    """
    raw = bytes(content)
    text = decode_utf8(raw, 0, "abort file").strip(" \t\r\n")
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        raise CorruptDataError(position=0, expected="an empty abort file or a decimal PID", found=repr(text[:40]))
    return int(text)


def encode_abort(pid: int | None) -> bytes:
    """``abort`` content: empty ([4.x]) or the PID as decimal text ([5.x])."""
    if pid is None:
        return b""
    if pid < 0:
        raise ValueError(f"a PID cannot be negative: {pid}")
    return str(pid).encode("ascii")


def decode_lock(content: Buffer) -> bool:
    """True when ``lock`` holds the broker's ``lock`` marker, False when empty (created but never
    written); any other content is corrupt.  Whether the lock is *held* is an fcntl question for
    the store layer."""
    raw = bytes(content)
    if raw == LOCK_CONTENT:
        return True
    if not raw:
        return False
    raise CorruptDataError(position=0, expected=f"empty or {LOCK_CONTENT!r}", found=repr(raw[:16]))


def encode_lock() -> bytes:
    return LOCK_CONTENT


__all__ = [
    "CHECKPOINT_SIZE",
    "CHECKPOINT_V4",
    "CHECKPOINT_FIELDS",
    "MASTER_FLUSHED_OFFSET_POSITION",
    "CONFIRM_PHY_OFFSET_POSITION",
    "CHECKPOINT_USED_SIZE",
    "MIN_TIMESTAMP_MARGIN_MS",
    "LOCK_CONTENT",
    "Checkpoint",
    "decode_checkpoint",
    "encode_checkpoint",
    "decode_abort",
    "encode_abort",
    "decode_lock",
    "encode_lock",
]
