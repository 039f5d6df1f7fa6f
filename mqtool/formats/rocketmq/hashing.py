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
