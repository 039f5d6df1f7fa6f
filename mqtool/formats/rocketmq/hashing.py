"""Java ``String.hashCode`` and the two RocketMQ values derived from it.

``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units in 32-bit
two's complement.  RocketMQ uses it for:

* the ConsumeQueue ``tagsCode``: ``TAGS.hashCode()`` sign-extended to a long;
* the IndexFile key hash: ``abs(hashCode(key))``, with ``Integer.MIN_VALUE`` (whose
  ``abs`` stays negative) mapped to 0.
"""

from __future__ import annotations

import array
import sys
from operator import mul
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_INT_MIN = -(1 << 31)
_MASK = 0xFFFFFFFF
#: For each length n: (31**(n-1), ..., 31, 1) mod 2**32 (built on first use of that length).
_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_WEIGHTS: dict[int, tuple[int, ...]] = {}


def _weights(n: int) -> tuple[int, ...]:
    weights = _WEIGHTS.get(n)
    if weights is None:
        powers = [1]
        for _ in range(n - 1):
            powers.append((powers[-1] * 31) & _MASK)
        weights = _WEIGHTS[n] = tuple(reversed(powers))
    return weights


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode()`` as a signed 32-bit int.

    ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units: evaluated as one ``sum(map(mul))``
    over the code units and precomputed powers (the per-character Python loop dominated
    validate's index checks)."""
    units = array.array("H", text.encode(_UTF16, "surrogatepass"))
    if not units:
        return 0
    h: int = sum(map(mul, units, _weights(len(units)))) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: ``abs(hashCode)``, MIN_VALUE → 0."""
    h = java_string_hash(key)
    if h == _INT_MIN:
        return 0
    return abs(h)


def tags_code(tags: str | None) -> int:
    """``MessageExtBrokerInner.tagsString2tagsCode``: 0 without tags."""
    if not tags:
        return 0
    return java_string_hash(tags)


#: ``TopicValidator.RMQ_SYS_SCHEDULE_TOPIC``: delayed messages wait here, their tagsCode being the
#: delivery time.
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
#: messageDelayLevel default, in ms (level 1 = 1 s ... level 18 = 2 h).
DELAY_LEVELS_MS = [
    1000,
    5000,
    10000,
    30000,
    60000,
    120000,
    180000,
    240000,
    300000,
    360000,
    420000,
    480000,
    540000,
    600000,
    1200000,
    1800000,
    3600000,
    7200000,
]


def delivery_tags_code(store_timestamp: int, delay: str | None) -> int:
    """``ScheduleMessageService.computeDeliverTimestamp``: store time + delay of the level
    (clamped to the last level; an unknown or non-positive level: + 1 s)."""
    try:
        level = int(delay) if delay else 0
    except ValueError:
        level = 0
    if level <= 0:
        return store_timestamp + 1000
    level = min(level, len(DELAY_LEVELS_MS))
    return store_timestamp + DELAY_LEVELS_MS[level - 1]


def dispatch_tags_code(topic: str, tags: str | None, delay: str | None, store_timestamp: int) -> int:
    """The ConsumeQueue ``tagsCode`` of a record (``CommitLog.checkMessageAndReturnSize``): the
    delivery time for a delayed message in ``SCHEDULE_TOPIC_XXXX``, else ``tags_code(TAGS)``."""
    if topic == SCHEDULE_TOPIC and delay:
        return delivery_tags_code(store_timestamp, delay)
    return tags_code(tags)


def index_key_hashes(keys: list[bytes]) -> np.ndarray:
    """``index_key_hash`` of many UTF-8 keys at once (int64 array, in order): ASCII keys (one
    UTF-16 code unit per byte) through :func:`java_hashes`, any other through
    :func:`index_key_hash`."""
    import numpy as np

    count = len(keys)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=count)
    starts = np.zeros(count, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    h, ascii_ = java_hashes(np.frombuffer(b"".join(keys), dtype=np.uint8), starts, lengths)
    signed = h.view(np.int32).astype(np.int64)
    out = np.where(signed == _INT_MIN, 0, np.abs(signed))
    for i in np.flatnonzero(~ascii_).tolist():
        out[i] = index_key_hash(keys[i].decode("utf-8", "surrogatepass"))
    return out


def java_hashes(chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Java ``String.hashCode`` of byte spans of ``chars`` (uint32, ``h = h * 31 + c`` wrapping)
    and which spans are ASCII (for the others the bytes are not the UTF-16 code units the hash
    is over: the caller hashes those apart).

    Spans of about one length (a power of two apart) are hashed together: laid right-aligned in
    a zero-padded matrix (leading zeros leave a Java hash at zero), one multiply-add per column."""
    import numpy as np

    out = np.zeros(len(starts), dtype=np.uint32)
    ascii_ = np.ones(len(starts), dtype=bool)
    full = np.flatnonzero(lengths > 0)
    if not len(full):
        return out, ascii_
    bucket = np.log2(lengths[full]).astype(np.int64)
    thirty_one = np.uint32(31)
    widest = int(lengths.max())
    # windows ending where each span ends (zeros before the data for the first spans)
    windows = np.lib.stride_tricks.sliding_window_view(np.concatenate((np.zeros(widest, dtype=np.uint8), chars)), widest)
    for b in np.unique(bucket).tolist():
        rows = full[bucket == b]
        n = lengths[rows]
        width = int(n.max())
        block = windows[starts[rows] + n, widest - width :].T.copy()
        block[np.arange(width)[:, None] < (width - n)] = 0
        h = np.zeros(len(rows), dtype=np.uint32)
        for column in block:
            h *= thirty_one
            h += column
        out[rows] = h
        ascii_[rows] = block.max(axis=0) < 0x80
    return out, ascii_
