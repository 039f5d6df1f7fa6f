"""RocketMQ message properties: ``name 0x01 value 0x02`` repeated, UTF-8.

Decoding follows ``MessageDecoder.string2messageProperties``: the text is split on 0x02;
a segment is kept only when it holds a 0x01 with a non-empty name and a non-empty value
(Java drops the rest silently; we report them through ``dropped`` so validate can say so).
Encoding follows ``messageProperties2String``: every pair followed by 0x02.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtool.formats._binary import decode_utf8

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

# Well-known property names (MessageConst).
KEYS = "KEYS"
TAGS = "TAGS"
UNIQ_KEY = "UNIQ_KEY"
WAIT = "WAIT"
DELAY = "DELAY"
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
TRAN_MSG = "TRAN_MSG"
INNER_NUM = "INNER_NUM"
INNER_BASE = "INNER_BASE"
DUP_INFO = "DUP_INFO"
CRC32 = "__CRC32#"
KEY_SEPARATOR = " "

#: Size of the ``__CRC32#`` property: name(8) + 0x01 + 10 digits + 0x02.
CRC32_RESERVED_LEN = 20


@dataclass(frozen=True)
class DecodedProperties:
    properties: dict[str, str]
    #: Segments Java would silently drop (no separator, empty name or value).
    dropped: tuple[str, ...] = ()


def decode_properties(raw: bytes, position: int = 0) -> DecodedProperties:
    """Decode a properties blob; bad UTF-8 raises ``CorruptDataError`` at its byte."""
    text = decode_utf8(raw, position, "properties")
    props: dict[str, str] = {}
    dropped: list[str] = []
    for segment in text.split(PROPERTY_SEPARATOR):
        if not segment:
            continue
        name, sep, value = segment.partition(NAME_VALUE_SEPARATOR)
        if not sep or not name or not value or len(segment) < 3:
            dropped.append(segment)
            continue
        props[name] = value
    return DecodedProperties(props, tuple(dropped))


def encode_properties(props: dict[str, str]) -> bytes:
    """Encode properties the way the broker stores them (trailing 0x02 after every pair)."""
    parts = []
    for name, value in props.items():
        if not name or not value:
            raise ValueError(f"property {name!r} with an empty name or value is never stored")
        if any(sep in name or sep in value for sep in (NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR)):
            raise ValueError(f"property {name!r} contains a separator character")
        parts.append(f"{name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}")
    return "".join(parts).encode("utf-8")


def split_keys(props: dict[str, str]) -> list[str]:
    """Non-empty tokens of ``KEYS`` (split on a space, as the index service does)."""
    raw = props.get(KEYS)
    if not raw:
        return []
    return [k for k in raw.split(KEY_SEPARATOR) if k]
