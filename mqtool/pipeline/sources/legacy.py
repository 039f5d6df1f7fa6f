"""The ``jafka_log`` and ``metaq_log`` sources: Jafka messages (gzip wrappers expanded) and MetaQ
messages (``.meta``, ``.meta.arc`` and ``.meta.zip`` segments), one row each.

A segment's byte range is read by the store model (``store.model.framed.read_range`` under
``store.model.legacy.JAFKA_RANGE`` / ``METAQ_RANGE``: the messages of the range, the findings
of its broken messages, where its data ends); this module names the layouts' segment files and
turns each message into ``dump jafka`` / ``dump metaq``'s rows.
"""

from __future__ import annotations

from collections.abc import Iterator

from mqtool.errors import MqError
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.pipeline.sources.common import FilePart, ReadOptions
from mqtool.store.model import legacy as lm

#: the store model's range framings, read by ``pipeline.sources.framed.read_framed``
JAFKA_FRAMING = lm.JAFKA_RANGE
METAQ_FRAMING = lm.METAQ_RANGE

# --- Jafka -----------------------------------------------------------------------------------


def jafka_base(name: str) -> int | None:
    """The base offset of a Jafka segment named so (None: another file)."""
    try:
        return segnames.parse_jafka_file_name(name)
    except MqError:
        return None


def _jafka_inner(message: jf.Message, depth: int, counter: list[int]) -> Iterator[tuple[jf.Message, int, int, int]]:
    """``(message, depth, inner index, position in the inflated set)``, depth-first."""
    for position, inner in jf.iter_inner_messages(message):
        index = counter[0]
        counter[0] += 1
        yield inner, depth, index, position
        if inner.compressed:
            yield from _jafka_inner(inner, depth + 1, counter)


def jafka_rows(part: FilePart, pos: int, message: object, opts: ReadOptions) -> Iterator[dict[str, object]]:
    """``dump jafka``'s rows: the message (or wrapper), then a wrapper's inner messages with
    the offsets a consumer sees (all but the last report the wrapper's start)."""
    assert isinstance(message, jf.Message)
    offset = part.base + pos
    after = offset + message.serialized_size

    def row(m: jf.Message, kind: str, depth: int, next_offset: int | None, index: int | None = None, inner_pos: int | None = None) -> dict[str, object]:
        return {
            "source": part.source,
            "file": part.path,
            "position": pos,
            "topic": part.meta.get("topic"),
            "partition": part.meta.get("partition"),
            "offset": offset,
            "next_offset": next_offset,
            "kind": kind,
            "depth": depth,
            "inner_index": index,
            "inner_position": inner_pos,
            "length": m.size,
            "magic": m.magic,
            "attribute": m.attributes,
            "codec": jf.CODEC_NAMES.get(m.compression_codec, str(m.compression_codec)),
            "crc": m.crc,
            "payload_size": len(m.payload),
            "payload": m.payload if opts.with_body else None,
        }

    if not message.compressed:
        yield row(message, "message", 0, after)
        return
    yield row(message, "wrapper", 0, after)
    inner = list(_jafka_inner(message, 1, [0]))
    leaves = [i for i, t in enumerate(inner) if not t[0].compressed]
    last_leaf = leaves[-1] if leaves else -1
    for i, (m, depth, index, inner_pos) in enumerate(inner):
        nxt = None if m.compressed else (after if i == last_leaf else offset)
        yield row(m, "inner", depth, nxt, index, inner_pos)


# --- MetaQ -----------------------------------------------------------------------------------


def metaq_base(name: str) -> int | None:
    """The start offset of a MetaQ segment named so (None: another file)."""
    try:
        return segnames.parse_metaq_file_name(name).start_offset
    except MqError:
        return None


def metaq_rows(part: FilePart, pos: int, message: object, opts: ReadOptions) -> Iterator[dict[str, object]]:
    """``dump metaq``'s rows (a malformed attribute block: the DATA whole as the payload)."""
    assert isinstance(message, mq.Message)
    try:
        attribute, payload = message.attribute_text, message.payload
    except MqError:  # a malformed attribute block: the DATA is kept whole as the payload
        attribute, payload = None, message.data
    yield {
        "source": part.source,
        "file": part.path,
        "position": pos,
        "topic": part.meta.get("topic"),
        "partition": part.meta.get("partition"),
        "offset": part.base + pos,
        "next_offset": part.base + pos + message.size,
        "msg_len": len(message.data),
        "checksum": message.checksum,
        "id": message.id,
        "flag": message.flag,
        "attribute": attribute,
        "payload_size": len(payload),
        "payload": payload if opts.with_body else None,
    }
