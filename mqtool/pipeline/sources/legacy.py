"""The ``jafka_log`` and ``metaq_log`` sources: Jafka messages (gzip wrappers expanded) and MetaQ
messages (``.meta``, ``.meta.arc`` and ``.meta.zip`` segments), one row each.

Both layouts frame a log as a chain of length-prefixed messages with a CRC (upstream Jafka's
``ByteBufferMessageSet`` and MetaQ's ``MessageUtils.decodeMessage``); a segment's byte range is
walked with ``pipeline.walk.walk_framed`` under ``JAFKA_FRAMING`` / ``METAQ_FRAMING``: the
``formats`` message walker over each piece, a sync point where a message decodes with a good
checksum, the store's codes for a broken message (``store.jafka.error_code``,
``store.metaq.error_code``) and its rule for a frame that holds around a failed checksum
(``store.legacy.framed_message``).  Rows carry ``dump jafka`` / ``dump metaq``'s fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

from mqtool.errors import MqError
from mqtool.findings.code_ids import JAFKA_UNREADABLE_REGION, METAQ_UNREADABLE_REGION
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.pipeline.sources.common import FilePart, ReadOptions
from mqtool.pipeline.sources.framed import Adapt
from mqtool.pipeline.walk import Framing
from mqtool.store import jafka as sjafka
from mqtool.store import legacy as slegacy
from mqtool.store import metaq as smetaq
from mqtool.store.files import Readable
from mqtool.store.rocketmq import MAX_RECORD_SIZE

# --- Jafka -----------------------------------------------------------------------------------


def jafka_base(name: str) -> int | None:
    """The base offset of a Jafka segment named so (None: another file)."""
    try:
        return segnames.parse_jafka_file_name(name)
    except MqError:
        return None


def _jafka_decodes(f: Readable, pos: int) -> int | None:
    head = f.pread(pos, 5)
    if len(head) < 5:
        return None
    length, magic = jf.peek_message(head)
    if magic not in jf.MAGICS:
        return None
    if length <= jf.HEADER_SIZES[magic] or 4 + length > min(f.size - pos, MAX_RECORD_SIZE):
        return None
    try:
        jf.decode_message(f.pread(pos, 4 + length), 0)
    except MqError:
        return None
    return 4 + length


def _jafka_candidates(chunk: bytes) -> Iterator[int]:
    for i in range(max(0, len(chunk) - 4)):
        if chunk[i + 4] <= 1 and chunk[i] == 0:
            yield i


def _legacy_framed(framing: slegacy.Framing) -> Callable[[bytes, int, MqError], tuple[object, int] | None]:
    """The layout's rule for a message whose frame holds around a failed checksum."""

    def framed(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
        message = slegacy.framed_message(framing, data, rel, exc)
        return (message, framing.overhead + framing.peek_length(data, rel)) if message is not None else None

    return framed


def _jafka_item(item: object) -> tuple[int, object, int]:
    position, message = cast("tuple[int, jf.Message]", item)
    return position, message, message.serialized_size


JAFKA_FRAMING = Framing(
    walker=lambda data: Adapt(jf.MessageWalker(data), _jafka_item),
    framed=_legacy_framed(sjafka.FRAMING),
    decodes=_jafka_decodes,
    candidates=_jafka_candidates,
    classify=sjafka.error_code,
    region_code=JAFKA_UNREADABLE_REGION,
    judged=jf.MIN_HEADER_SIZE,
)


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


def _metaq_decodes(f: Readable, pos: int) -> int | None:
    head = f.pread(pos, mq.HEADER_LEN)
    if len(head) < mq.HEADER_LEN:
        return None
    msg_len = mq.peek_length(head)
    if msg_len <= 0 or mq.HEADER_LEN + msg_len > min(f.size - pos, MAX_RECORD_SIZE):
        return None
    try:
        mq.decode_message(f.pread(pos, mq.HEADER_LEN + msg_len), 0)
    except MqError:
        return None
    return mq.HEADER_LEN + msg_len


def _metaq_candidates(chunk: bytes) -> Iterator[int]:
    for i in range(max(0, len(chunk) - mq.HEADER_LEN)):
        if chunk[i] == 0:  # msgLen < 16 MiB: its first byte is zero
            yield i


def _metaq_item(item: object) -> tuple[int, object, int]:
    position, message = cast("tuple[int, mq.Message]", item)
    return position, message, message.size


METAQ_FRAMING = Framing(
    walker=lambda data: Adapt(mq.MessageWalker(data), _metaq_item),
    framed=_legacy_framed(smetaq.FRAMING),
    decodes=_metaq_decodes,
    candidates=_metaq_candidates,
    classify=smetaq.error_code,
    region_code=METAQ_UNREADABLE_REGION,
    judged=mq.HEADER_LEN,
)


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
