"""Checksums used by the four layouts.

| function          | algorithm                      | used by                                              |
|-------------------|--------------------------------|------------------------------------------------------|
| ``crc32``         | IEEE CRC-32 (``zlib.crc32``)   | Kafka v0/v1 messages, Jafka messages                 |
| ``masked_crc32``  | CRC-32 ``& 0x7FFFFFFF``        | RocketMQ BODYCRC and ``__CRC32#``, MetaQ data CRC    |
| ``crc32c``        | CRC-32C (Castagnoli)           | Kafka v2 record batches                              |
| ``hash64``        | 64-bit BLAKE2b, as an integer  | ``stats``' distinct-count sketch (no store format)   |
"""

from __future__ import annotations

import hashlib
import zlib

from mqtool.formats._binary import Buffer


def crc32(data: Buffer, value: int = 0) -> int:
    return zlib.crc32(data, value) & 0xFFFFFFFF


def masked_crc32(data: Buffer) -> int:
    """RocketMQ ``UtilAll.crc32``: Java CRC32 with the top bit cleared; empty → 0."""
    if len(data) == 0:
        return 0
    return zlib.crc32(data) & 0x7FFFFFFF


def crc32c(data: Buffer, value: int = 0) -> int:
    # imported on first use: the crc32c package reads its own metadata (importlib.metadata) and
    # imports argparse when it loads, which the layouts without CRC-32C (RocketMQ, Jafka, MetaQ) skip
    import crc32c as _crc32c

    return _crc32c.crc32c(data, value) & 0xFFFFFFFF


def hash64(data: Buffer) -> int:
    """The 8-byte BLAKE2b digest of ``data`` as an unsigned big-endian integer."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")
