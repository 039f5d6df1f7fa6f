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
    h = sum(map(mul, units, _weights(len(units)))) & _MASK
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
    1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000,
    420000, 480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000,
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


def index_key_hashes(keys: list[bytes]) -> "np.ndarray":
    """``index_key_hash`` of many UTF-8 keys at once (int64 array, in order).

    ASCII keys (one UTF-16 code unit per byte) are hashed in one vectorised pass per key length:
    ``sum(c[i] * 31**(n-1-i)) mod 2**32`` as a matrix product over the key bytes; any other key
    goes through :func:`index_key_hash`."""
    import numpy as np

    out = np.zeros(len(keys), dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        if key.isascii():
            by_length.setdefault(len(key), []).append(i)
        else:
            out[i] = index_key_hash(key.decode("utf-8", "surrogatepass"))
    for n, rows in by_length.items():
        if n == 0:
            continue
        chars = np.frombuffer(b"".join(keys[i] for i in rows), dtype=np.uint8).reshape(len(rows), n).astype(np.uint64)
        weights = np.array(_weights(n), dtype=np.uint64)
        h = ((chars * weights).sum(axis=1, dtype=np.uint64) & np.uint64(_MASK)).astype(np.int64)
        h = np.where(h >= 1 << 31, h - (1 << 32), h)
        out[np.array(rows, dtype=np.intp)] = np.where(h == _INT_MIN, 0, np.abs(h))
    return out
