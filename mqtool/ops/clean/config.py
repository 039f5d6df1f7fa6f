"""Retention settings read from the broker's own config file (Java properties).

``mqtool clean --config broker.conf`` takes the same keys the broker reads, so cron applies the
policy the broker was configured with; command-line flags override the file.

| layout | key (upstream name) | option |
|---|---|---|
| rocketmq | ``fileReservedTime`` (hours) | ``file_reserved_hours`` |
| rocketmq | ``deleteWhen`` | ``delete_when`` |
| rocketmq | ``diskMaxUsedSpaceRatio`` | ``disk_max_used_ratio`` |
| rocketmq | ``diskSpaceCleanForciblyRatio`` (85 or 0.85) | ``clean_forcibly_ratio`` |
| rocketmq | ``diskSpaceWarningLevelRatio`` (90 or 0.90) | ``warning_ratio`` |
| rocketmq | ``deleteFileBatchMax`` | ``batch_max`` |
| rocketmq | ``cleanFileForciblyEnable`` | ``clean_file_forcibly_enable`` |
| kafka | ``log.retention.ms`` / ``.minutes`` / ``.hours``, ``log.retention.bytes``, ``retention.ms``, ``retention.bytes`` | ``retention_ms``, ``retention_bytes`` |
| jafka | ``log.retention.hours``, ``log.retention.size`` | ``retention_hours``, ``retention_bytes`` |
| jafka | ``topic.log.retention.hours`` (``topic1:24,topic2:48``) | ``topic_retention_hours`` |
| metaq | ``[system] deletePolicy`` (``delete,168`` / ``archive,168,true``) | ``delete_policy`` |
| metaq | ``[topic=NAME] deletePolicy`` | ``topic_delete_policies`` |

MetaQ's ``server.ini`` is an INI file (ini4j): its sections are read as such, so a topic's own
``deletePolicy`` never stands in for the ``[system]`` one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats.kafka.checkpoint_file import load_java_properties
from mqtool.store.files import read_small_file


def _ratio(value: str) -> int:
    number = float(value)
    return int(round(number * 100)) if number <= 1 else int(number)


def _bool(value: str) -> bool:
    return value.strip().lower() == "true"


#: a config key -> (the option it sets, how its text converts)
Table = dict[str, tuple[str, Callable[[str], object]]]

_ROCKETMQ: Table = {
    "fileReservedTime": ("file_reserved_hours", float),
    "deleteWhen": ("delete_when", str),
    "diskMaxUsedSpaceRatio": ("disk_max_used_ratio", _ratio),
    "diskSpaceCleanForciblyRatio": ("clean_forcibly_ratio", _ratio),
    "diskSpaceWarningLevelRatio": ("warning_ratio", _ratio),
    "deleteFileBatchMax": ("batch_max", int),
    "cleanFileForciblyEnable": ("clean_file_forcibly_enable", _bool),
}
_KAFKA: Table = {
    "log.retention.ms": ("retention_ms", int),
    "retention.ms": ("retention_ms", int),
    "log.retention.minutes": ("retention_ms", lambda v: int(v) * 60_000),
    "log.retention.hours": ("retention_ms", lambda v: int(v) * 3_600_000),
    "log.retention.bytes": ("retention_bytes", int),
    "retention.bytes": ("retention_bytes", int),
}


def _topic_hours(value: str) -> dict[str, float]:
    """Jafka ``topic.log.retention.hours``: ``topic1:24,topic2:48`` (``Utils.getTopicRentionHours``)."""
    table: dict[str, float] = {}
    for item in value.split(","):
        if item.strip():
            topic, _, hours = item.partition(":")
            table[topic.strip()] = float(hours)
    return table


_JAFKA: Table = {
    "log.retention.hours": ("retention_hours", float),
    "log.retention.size": ("retention_bytes", int),
    "topic.log.retention.hours": ("topic_retention_hours", _topic_hours),
}
_METAQ: Table = {"deletePolicy": ("delete_policy", str)}
TABLES: dict[str, Table] = {"rocketmq": _ROCKETMQ, "kafka": _KAFKA, "jafka": _JAFKA, "metaq": _METAQ}
#: Kafka precedence: ms over minutes over hours (KafkaConfig.logRetentionTimeMillis).
_KAFKA_PRECEDENCE = ["log.retention.hours", "log.retention.minutes", "log.retention.ms", "retention.ms"]


def read_policy_file(path: Path, layout: str) -> dict[str, object]:
    """Options for ``layout`` from a Java properties file (unknown keys are ignored)."""
    if layout == "metaq":
        return _read_metaq_ini(path)
    try:
        props = load_java_properties(read_small_file(path, 16 << 20))
    except MqError as exc:
        raise exc.at(path) from None
    table = TABLES.get(layout, {})
    values = {p.key: p.value for p in props}
    keys = sorted(values, key=lambda k: _KAFKA_PRECEDENCE.index(k) if k in _KAFKA_PRECEDENCE else -1)
    options: dict[str, object] = {}
    for key in keys:
        if key not in table:
            continue
        name, convert = table[key]
        try:
            options[name] = convert(values[key].strip())
        except ValueError:
            raise CorruptDataError(path=path, expected=f"a valid value for {key}", found=repr(values[key])) from None
    return options


def _read_metaq_ini(path: Path) -> dict[str, object]:
    """``deletePolicy`` of MetaQ's ``server.ini``: ``[system]`` and each ``[topic=NAME]`` section
    (``MetaConfig.populateSystemConf`` / ``populateTopicsConfig``; blank values are ignored)."""
    try:
        text = read_small_file(path, 16 << 20).decode("utf-8", "replace")
    except MqError as exc:
        raise exc.at(path) from None
    section = None
    options: dict[str, object] = {}
    topics: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition("=") if "=" in line else line.partition(":")
        if not sep or key.strip() != "deletePolicy" or not value.strip():
            continue
        if section == "system":
            options["delete_policy"] = value.strip()
        elif section is not None and section.startswith("topic="):
            topics[section[len("topic=") :]] = value.strip()
    if topics:
        options["topic_delete_policies"] = topics
    return options
