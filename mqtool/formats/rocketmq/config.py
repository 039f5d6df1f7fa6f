"""RocketMQ broker metadata under ``config/`` (``ConfigManager`` subclasses), fastjson 1.x text.

The broker serialises with ``JSON.toJSONString(obj, prettyFormat=true)``.  That output is *not*
JSON: ``Map<Integer, …>`` keys are written bare, and maps print their first entry on the same
line as the brace::

    {
    \t"offsetTable":{
    \t\t"TopicTest@group_4":{0:250,1:250,2:250,3:250
    \t\t}
    \t}
    }

Layout rules of the pretty printer (what ``encode_fastjson`` reproduces): beans and string-keyed
maps put every entry on its own line, indented by one tab per level; integer-keyed maps keep
their entries on the brace's line; a non-empty container closes on its own line at the parent's
indent; empty ones print ``{}``/``[]``; ``:`` and ``,`` carry no spaces; bean fields are sorted by
name; no newline at the end of the file.

Files (``BrokerPathConfigHelper``): ``topics.json`` (``topicConfigTable``),
``consumerOffset.json`` (``offsetTable``: ``"topic@group" → {queueId: nextOffset}``),
``delayOffset.json`` (``offsetTable``: ``delayLevel → offset``), ``subscriptionGroup.json``
(``subscriptionGroupTable``), ``consumerFilter.json``; [5.x] ``dataVersion`` everywhere.  No
checksum.  Partial writes: [4.x, 5.0] write ``<name>.tmp`` then rename (a crash leaves
``.tmp``); [5.1.0 … 5.3.3] overwrite in place after copying the old content to ``.bak`` (a crash
can leave an empty or cut file); the broker then loads ``<name>.bak``.  A cut file is a parse
error here (``CorruptDataError`` at the byte where the text stops making sense).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqtool.errors import CorruptDataError
from mqtool.formats._binary import decode_utf8

TOPIC_GROUP_SEPARATOR = "@"

# perm bits (PermName)
PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1

Source = str | bytes | bytearray | memoryview | Mapping[str, Any]

# A whole string token, or a bare integer key after "{" or ",".
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|([{,])(\s*)(-?\d+)(\s*):', re.S)


# --- parsing -------------------------------------------------------------------------------


def _pick_marker(text: str) -> str:
    """A private-use character that the text cannot produce inside a string (raw or escaped)."""
    lowered = text.lower()
    for code in range(0xE000, 0xF900):
        char = chr(code)
        if char not in text and f"\\u{code:04x}" not in lowered:
            return char
    raise CorruptDataError(expected="a config file that is not all private-use characters", found="every one")


def _quote_int_keys(text: str, marker: str) -> tuple[str, list[int], list[int], list[int], list[int]]:
    """Quote bare integer keys as ``"<marker>digits"``; string tokens are copied untouched.

    Returns the new text and, per quoted key, where the digits start/end in the new text and in
    the original (to map parse errors back).
    """
    out: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    orig_starts: list[int] = []
    orig_ends: list[int] = []
    last = 0
    new_len = 0
    for match in _TOKEN.finditer(text):
        if match.group(1) is None:
            continue
        digits_start, digits_end = match.span(3)
        chunk = text[last:digits_start]
        out.append(chunk)
        new_len += len(chunk)
        quoted = f'"{marker}{match.group(3)}"'
        new_starts.append(new_len)
        out.append(quoted)
        new_len += len(quoted)
        new_ends.append(new_len)
        orig_starts.append(digits_start)
        orig_ends.append(digits_end)
        last = digits_end
    out.append(text[last:])
    return "".join(out), new_starts, new_ends, orig_starts, orig_ends


def _line_column(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


def _byte_position(text: str, pos: int) -> int:
    return len(text[:pos].encode("utf-8", "surrogatepass"))


def parse_fastjson(source: str | bytes | bytearray | memoryview) -> Any:
    """Parse fastjson output into Python values.

    Bare integer keys become ``int`` keys (quoted keys stay ``str``, even ``"123"``), so
    ``encode_fastjson`` can write the same text back.  Raw control characters inside strings
    are accepted (fastjson writes tabs unescaped).  Errors raise ``CorruptDataError`` whose
    ``position`` is the byte offset in the original text (line and column in the message).
    """
    if isinstance(source, str):
        text = source
    else:
        text = decode_utf8(bytes(source), 0, "config JSON")
    if not text.strip():
        raise CorruptDataError("empty config file", position=0, expected="a JSON document", found="no text")
    marker = _pick_marker(text)
    quoted, new_starts, new_ends, orig_starts, orig_ends = _quote_int_keys(text, marker)

    def to_original(pos: int) -> int:
        i = bisect.bisect_right(new_starts, pos) - 1
        if i < 0:
            return pos
        if pos < new_ends[i]:
            return orig_starts[i]
        return pos - (new_ends[i] - orig_ends[i])

    def pairs(items: list[tuple[str, Any]]) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in items:
            if key.startswith(marker):
                result[int(key[len(marker) :])] = value
            else:
                result[key] = value
        return result

    def reject_constant(name: str) -> Any:
        raise CorruptDataError(expected="a JSON number", found=name)

    try:
        return json.loads(quoted, object_pairs_hook=pairs, parse_constant=reject_constant, strict=False)
    except json.JSONDecodeError as exc:
        pos = to_original(exc.pos)
        line, column = _line_column(text, pos)
        raise CorruptDataError(
            f"invalid fastjson text at line {line} column {column}",
            position=_byte_position(text, pos),
            expected="JSON with bare integer map keys",
            found=exc.msg,
        ) from None
    except RecursionError:
        raise CorruptDataError(expected="JSON nested less deeply", found="nesting too deep to parse") from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        raise CorruptDataError(expected="JSON values Python can represent", found=str(exc)) from None


# --- encoding ------------------------------------------------------------------------------


def _encode_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} has no JSON form")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot encode {type(value).__name__} as fastjson")


def _encode(value: Any, level: int, out: list[str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out.append("{}")
            return
        out.append("{")
        inner = "\n" + "\t" * (level + 1)
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise TypeError(f"map key {key!r} must be str or int")
            if isinstance(key, str):
                out.append(inner)
                out.append(json.dumps(key, ensure_ascii=False))
            else:
                out.append(str(key))
            out.append(":")
            _encode(item, level + 1, out)
        out.append("\n" + "\t" * level + "}")
        return
    if isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        out.append("[")
        inner = "\n" + "\t" * (level + 1)
        for i, item in enumerate(value):
            if i:
                out.append(",")
            out.append(inner)
            _encode(item, level + 1, out)
        out.append("\n" + "\t" * level + "]")
        return
    out.append(_encode_scalar(value))


def encode_fastjson(obj: Any) -> str:
    """fastjson-style pretty text: ``int`` keys bare, ``str`` keys quoted (see module docstring)."""
    out: list[str] = []
    _encode(obj, 0, out)
    return "".join(out)


# --- typed access --------------------------------------------------------------------------


def _document(source: Source) -> dict[Any, Any]:
    doc = source if isinstance(source, Mapping) else parse_fastjson(source)
    if not isinstance(doc, Mapping):
        raise CorruptDataError(expected="a JSON object at the top level", found=type(doc).__name__)
    return dict(doc)


def _kind_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _table(doc: Mapping[Any, Any], name: str, required: bool = True) -> dict[Any, Any]:
    value = doc.get(name)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise CorruptDataError(expected=f'an object "{name}"', found=_kind_name(value))
    return dict(value)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptDataError(expected=f"an integer at {where}", found=_kind_name(value))
    return value


def _int_key(key: Any, where: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and re.fullmatch(r"-?\d{1,19}", key):
        return int(key)
    raise CorruptDataError(expected=f"an integer key in {where}", found=repr(key))


def _field(obj: Mapping[Any, Any], name: str, kind: type, default: Any, where: str) -> Any:
    if name not in obj or obj[name] is None:
        return default
    value = obj[name]
    if kind is int:
        return _int(value, f"{where}.{name}")
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise CorruptDataError(expected=f"{kind.__name__} at {where}.{name}", found=_kind_name(value))
    return value


@dataclass(frozen=True)
class DataVersion:
    """``DataVersion``: bumped on every change; ``state_version`` is [5.x]."""

    timestamp: int = 0
    counter: int = 0
    state_version: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"counter": self.counter}
        if self.state_version is not None:
            out["stateVersion"] = self.state_version
        out["timestamp"] = self.timestamp
        return out


def parse_data_version(source: Source) -> DataVersion | None:
    """The document's ``dataVersion`` (None when the file has none, as [4.x] offsets files)."""
    doc = _document(source)
    if doc.get("dataVersion") is None:
        return None
    raw = _table(doc, "dataVersion")
    return DataVersion(
        timestamp=_field(raw, "timestamp", int, 0, "dataVersion"),
        counter=_field(raw, "counter", int, 0, "dataVersion"),
        state_version=_field(raw, "stateVersion", int, None, "dataVersion"),
    )


def split_topic_group(key: str) -> tuple[str, str]:
    """``"topic@group"`` → ``(topic, group)``, split at the first ``@``.

    Topic and group names may only hold ``[%|a-zA-Z0-9_-]`` (``TopicValidator``), so the first
    ``@`` is the separator; upstream (``split("@")`` and ``length == 2``) ignores any other key
    in its lookups, we keep the rest in the group.  A key without a topic or group is corrupt.
    """
    topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
    if not sep or not topic or not group:
        raise CorruptDataError(expected='an offsetTable key "topic@group"', found=repr(key))
    return topic, group


def _offset_map(raw: Any, where: str) -> dict[int, int]:
    if not isinstance(raw, Mapping):
        raise CorruptDataError(expected=f"an object of queue offsets at {where}", found=_kind_name(raw))
    return {_int_key(k, where): _int(v, f"{where}[{k}]") for k, v in raw.items()}


def parse_consumer_offsets(source: Source) -> dict[tuple[str, str], dict[int, int]]:
    """``consumerOffset.json`` (also ``lmqConsumerOffset.json``): ``(topic, group)`` → ``{queueId: offset}``."""
    table = _table(_document(source), "offsetTable")
    result: dict[tuple[str, str], dict[int, int]] = {}
    for key, offsets in table.items():
        if not isinstance(key, str):
            raise CorruptDataError(expected='an offsetTable key "topic@group"', found=repr(key))
        result[split_topic_group(key)] = _offset_map(offsets, f"offsetTable[{key!r}]")
    return result


def parse_delay_offsets(source: Source) -> dict[int, int]:
    """``delayOffset.json``: delay level → offset in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``."""
    return _offset_map(_table(_document(source), "offsetTable"), "offsetTable")


@dataclass(frozen=True)
class TopicConfig:
    """``TopicConfig`` (defaults as upstream); unknown fields are kept in ``extra``."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)

    @property
    def queue_type(self) -> str:
        """``queue.type`` attribute: ``SimpleCQ`` (default) or ``BatchCQ``."""
        return (self.attributes or {}).get("queue.type", "SimpleCQ")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        if self.attributes is not None:
            out["attributes"] = dict(self.attributes)
        out.update(
            order=self.order,
            perm=self.perm,
            readQueueNums=self.read_queue_nums,
            topicFilterType=self.topic_filter_type,
            topicName=self.topic_name,
            topicSysFlag=self.topic_sys_flag,
            writeQueueNums=self.write_queue_nums,
        )
        return dict(sorted(out.items()))


_TOPIC_FIELDS = {
    "topicName",
    "readQueueNums",
    "writeQueueNums",
    "perm",
    "topicFilterType",
    "topicSysFlag",
    "order",
    "attributes",
}


def parse_topics(source: Source) -> dict[str, TopicConfig]:
    """``topics.json``: topic → ``TopicConfig`` (map order kept)."""
    table = _table(_document(source), "topicConfigTable")
    result: dict[str, TopicConfig] = {}
    for name, raw in table.items():
        where = f"topicConfigTable[{name!r}]"
        if not isinstance(raw, Mapping):
            raise CorruptDataError(expected=f"an object at {where}", found=_kind_name(raw))
        attributes = _field(raw, "attributes", dict, None, where)
        result[str(name)] = TopicConfig(
            topic_name=_field(raw, "topicName", str, str(name), where),
            read_queue_nums=_field(raw, "readQueueNums", int, 16, where),
            write_queue_nums=_field(raw, "writeQueueNums", int, 16, where),
            perm=_field(raw, "perm", int, PERM_READ | PERM_WRITE, where),
            topic_filter_type=_field(raw, "topicFilterType", str, "SINGLE_TAG", where),
            topic_sys_flag=_field(raw, "topicSysFlag", int, 0, where),
            order=_field(raw, "order", bool, False, where),
            attributes=attributes,
            extra={k: v for k, v in raw.items() if k not in _TOPIC_FIELDS},
        )
    return result


@dataclass(frozen=True)
class SubscriptionGroupConfig:
    """``SubscriptionGroupConfig`` (defaults as upstream); unknown fields are kept in ``extra``."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        out.update(
            brokerId=self.broker_id,
            consumeBroadcastEnable=self.consume_broadcast_enable,
            consumeEnable=self.consume_enable,
            consumeFromMinEnable=self.consume_from_min_enable,
            groupName=self.group_name,
            notifyConsumerIdsChangedEnable=self.notify_consumer_ids_changed_enable,
            retryMaxTimes=self.retry_max_times,
            retryQueueNums=self.retry_queue_nums,
            whichBrokerWhenConsumeSlowly=self.which_broker_when_consume_slowly,
        )
        return dict(sorted(out.items()))


_GROUP_FIELDS = {
    "groupName",
    "consumeEnable",
    "consumeFromMinEnable",
    "consumeBroadcastEnable",
    "retryQueueNums",
    "retryMaxTimes",
    "brokerId",
    "whichBrokerWhenConsumeSlowly",
    "notifyConsumerIdsChangedEnable",
}


def parse_subscription_groups(source: Source) -> dict[str, SubscriptionGroupConfig]:
    """``subscriptionGroup.json``: group → ``SubscriptionGroupConfig`` (map order kept)."""
    table = _table(_document(source), "subscriptionGroupTable")
    result: dict[str, SubscriptionGroupConfig] = {}
    for name, raw in table.items():
        where = f"subscriptionGroupTable[{name!r}]"
        if not isinstance(raw, Mapping):
            raise CorruptDataError(expected=f"an object at {where}", found=_kind_name(raw))
        result[str(name)] = SubscriptionGroupConfig(
            group_name=_field(raw, "groupName", str, str(name), where),
            consume_enable=_field(raw, "consumeEnable", bool, True, where),
            consume_from_min_enable=_field(raw, "consumeFromMinEnable", bool, True, where),
            consume_broadcast_enable=_field(raw, "consumeBroadcastEnable", bool, True, where),
            retry_queue_nums=_field(raw, "retryQueueNums", int, 1, where),
            retry_max_times=_field(raw, "retryMaxTimes", int, 16, where),
            broker_id=_field(raw, "brokerId", int, 0, where),
            which_broker_when_consume_slowly=_field(raw, "whichBrokerWhenConsumeSlowly", int, 1, where),
            notify_consumer_ids_changed_enable=_field(raw, "notifyConsumerIdsChangedEnable", bool, True, where),
            extra={k: v for k, v in raw.items() if k not in _GROUP_FIELDS},
        )
    return result


def parse_consumer_filters(source: Source) -> dict[str, dict[Any, Any]]:
    """``consumerFilter.json``: topic → its ``FilterDataMapByTopic`` object (``topic``,
    ``groupFilterData``: group → ``ConsumerFilterData``), kept as parsed.  Upstream
    (``ConsumerFilterManager.decode``) skips a missing or null ``filterDataByTopic``."""
    table = _table(_document(source), "filterDataByTopic", required=False)
    result: dict[str, dict[Any, Any]] = {}
    for topic, raw in table.items():
        where = f"filterDataByTopic[{topic!r}]"
        if not isinstance(raw, Mapping):
            raise CorruptDataError(expected=f"an object at {where}", found=_kind_name(raw))
        _field(raw, "groupFilterData", dict, None, where)
        result[str(topic)] = dict(raw)
    return result


# --- typed writers ---------------------------------------------------------------------------


def _with_version(body: dict[str, Any], data_version: DataVersion | None) -> str:
    if data_version is not None:
        body["dataVersion"] = data_version.to_json()
    return encode_fastjson(dict(sorted(body.items())))


def encode_consumer_offsets(offsets: Mapping[tuple[str, str], Mapping[int, int]], data_version: DataVersion | None = None) -> str:
    table = {f"{topic}{TOPIC_GROUP_SEPARATOR}{group}": dict(q) for (topic, group), q in offsets.items()}
    return _with_version({"offsetTable": table}, data_version)


def encode_delay_offsets(offsets: Mapping[int, int], data_version: DataVersion | None = None) -> str:
    return _with_version({"offsetTable": dict(offsets)}, data_version)


def encode_topics(topics: Mapping[str, TopicConfig], data_version: DataVersion | None = None) -> str:
    return _with_version({"topicConfigTable": {name: t.to_json() for name, t in topics.items()}}, data_version)


def encode_subscription_groups(groups: Mapping[str, SubscriptionGroupConfig], data_version: DataVersion | None = None) -> str:
    table = {name: g.to_json() for name, g in groups.items()}
    return _with_version({"subscriptionGroupTable": table}, data_version)


__all__ = [
    "TOPIC_GROUP_SEPARATOR",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "PERM_INHERIT",
    "parse_fastjson",
    "encode_fastjson",
    "DataVersion",
    "parse_data_version",
    "split_topic_group",
    "parse_consumer_offsets",
    "parse_delay_offsets",
    "TopicConfig",
    "parse_topics",
    "SubscriptionGroupConfig",
    "parse_subscription_groups",
    "parse_consumer_filters",
    "encode_consumer_offsets",
    "encode_delay_offsets",
    "encode_topics",
    "encode_subscription_groups",
]
