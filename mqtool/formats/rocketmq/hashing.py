"""Java ``String.hashCode`` and the two RocketMQ values derived from it.

``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units in 32-bit
two's complement.  RocketMQ uses it for:

* the ConsumeQueue ``tagsCode``: ``TAGS.hashCode()`` sign-extended to a long;
* the IndexFile key hash: ``abs(hashCode(key))``, with ``Integer.MIN_VALUE`` (whose
  ``abs`` stays negative) mapped to 0.
"""

from __future__ import annotations

_INT_MIN = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode()`` as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
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
