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


def index_key_hashes(keys: list[bytes]) -> np.ndarray:
    """``index_key_hash`` of many UTF-8 keys at once (int64 array, in order).

    ASCII keys (one UTF-16 code unit per byte) are hashed in one vectorised Horner pass per key
    length, ``h = h * 31 + c`` in wrapping 32-bit arithmetic; any other key goes through
    :func:`index_key_hash`."""
    import numpy as np

    count = len(keys)
    out = np.zeros(count, dtype=np.int64)
    if not count:
        return out
    if not b"".join(keys).isascii():
        ascii_rows = [i for i, key in enumerate(keys) if key.isascii()]
        for i, key in enumerate(keys):
            if not key.isascii():
                out[i] = index_key_hash(key.decode("utf-8", "surrogatepass"))
        if ascii_rows:
            out[np.array(ascii_rows, dtype=np.intp)] = index_key_hashes([keys[i] for i in ascii_rows])
        return out
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=count)
    order = np.argsort(lengths, kind="stable")
    chars = np.frombuffer(b"".join([keys[i] for i in order.tolist()]), dtype=np.uint8)
    sorted_lengths = lengths[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_lengths)) + 1))
    stops = np.append(starts[1:], count)
    hashes = np.zeros(count, dtype=np.uint32)
    at = 0
    thirty_one = np.uint32(31)
    for first, stop in zip(starts.tolist(), stops.tolist()):
        n = int(sorted_lengths[first])
        block = chars[at : at + n * (stop - first)].reshape(stop - first, n)
        at += n * (stop - first)
        h = np.zeros(stop - first, dtype=np.uint32)
        for j in range(n):
            h = h * thirty_one + block[:, j]
        hashes[first:stop] = h
    signed = hashes.view(np.int32).astype(np.int64)
    out[order] = np.where(signed == _INT_MIN, 0, np.abs(signed))
    return out
