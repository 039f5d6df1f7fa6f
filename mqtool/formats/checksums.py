"""Checksums used by the four layouts.

| function          | algorithm                      | used by                                              |
|-------------------|--------------------------------|------------------------------------------------------|
| ``crc32``         | IEEE CRC-32 (``zlib.crc32``)   | Kafka v0/v1 messages, Jafka messages                 |
| ``masked_crc32``  | CRC-32 ``& 0x7FFFFFFF``        | RocketMQ BODYCRC and ``__CRC32#``, MetaQ data CRC    |
| ``crc32c``        | CRC-32C (Castagnoli)           | Kafka v2 record batches                              |
"""

from __future__ import annotations

import zlib

import crc32c as _crc32c

from mqtool.formats._binary import Buffer


def crc32(data: Buffer, value: int = 0) -> int:
    return zlib.crc32(data, value) & 0xFFFFFFFF


def masked_crc32(data: Buffer) -> int:
    """RocketMQ ``UtilAll.crc32``: Java CRC32 with the top bit cleared; empty → 0."""
    if len(data) == 0:
        return 0
    return zlib.crc32(data) & 0x7FFFFFFF


def crc32c(data: Buffer, value: int = 0) -> int:
    return _crc32c.crc32c(data, value) & 0xFFFFFFFF
