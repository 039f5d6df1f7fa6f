"""The store settings a broker's own config file gives (``--config``), for the commands that need
file sizes, IndexFile geometry or the disk threshold: RocketMQ ``broker.conf`` (Java properties,
``MessageStoreConfig``'s field names) and Kafka ``server.properties``.

| key (upstream) | setting |
|---|---|
| ``mappedFileSizeCommitLog`` (``mapedFileSizeCommitLog`` before 4.5) | ``commitlog_file_size`` |
| ``mappedFileSizeConsumeQueue`` (``mapedFileSizeConsumeQueue``) | ``cq_file_size`` (rounded down to whole 20-byte units, as ``ConsumeQueue`` does) |
| ``maxHashSlotNum`` | ``index_hash_slot_num`` |
| ``maxIndexNum`` | ``index_num`` |
| ``diskMaxUsedSpaceRatio`` (75, or 0.75) | ``disk_max_used_ratio`` (percent) |
| ``storePathRootDir`` | ``store_root`` |
| ``storePathCommitLog`` | ``commitlog_dir`` |
| ``messageIndexEnable`` (``Boolean.parseBoolean``: ``true`` in any case, anything else false) | ``message_index_enable``: whether the broker builds IndexFiles |
| ``timerPrecisionMs`` (5.x) | ``timer_precision_ms``, snapped as ``MessageStoreConfig.setTimerPrecisionMs`` snaps it (100, 200, 500 or 1000) |
| Kafka ``log.dirs`` / ``log.dir`` | ``log_dirs`` |
| Kafka ``log.segment.bytes`` | ``segment_bytes`` |
| ``rocketmqHome`` naming a release (``.../rocketmq-all-5.3.1-bin-release``) | ``version_hints``: that exact version |
| ``configManagerVersion``, ``rocksdbCQDoubleWriteEnable``, ``storeType``, ``timerWheelEnable``, ... | ``version_hints``: the version the key first exists in |

Command-line flags win over the file; unknown keys are ignored (a broker.conf holds many more).
The version hints choose the broker model (``store.model.rocketmq_broker.resolve_broker``) when
``--broker-version`` is not given.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats.kafka.checkpoint_file import load_java_properties
from mqtool.store.files import read_small_file
from mqtool.store.model.rocketmq_broker import VersionHint

#: ``ConsumeQueue.CQ_STORE_UNIT_SIZE``
_CQ_UNIT = 20


@dataclass(frozen=True)
class BrokerSettings:
    path: str
    commitlog_file_size: int | None = None
    cq_file_size: int | None = None
    index_hash_slot_num: int | None = None
    index_num: int | None = None
    disk_max_used_ratio: int | None = None
    store_root: str | None = None
    commitlog_dir: str | None = None
    log_dirs: tuple[str, ...] = field(default_factory=tuple)
    segment_bytes: int | None = None
    #: the timer wheel's slot width in ms (``timerPrecisionMs``; None: the broker's default 1000)
    timer_precision_ms: int | None = None
    #: whether the broker builds IndexFiles (``messageIndexEnable``; None: not set, the broker's default true)
    message_index_enable: bool | None = None
    #: what the file says of the broker's version (``rocketmqHome``'s release, keys of a version on)
    version_hints: tuple[VersionHint, ...] = field(default_factory=tuple)

    def store_sizes(self) -> dict[str, int | None]:
        """The file sizes and IndexFile geometry, by the names of validate's and recover's
        options (None: not set in the file)."""
        return {
            "commitlog_file_size": self.commitlog_file_size,
            "cq_file_size": self.cq_file_size,
            "index_hash_slot_num": self.index_hash_slot_num,
            "index_num": self.index_num,
        }


def _positive(value: str) -> int:
    number = int(value)
    if number <= 0:
        raise ValueError(value)
    return number


def _ratio(value: str) -> int:
    number = float(value)
    return int(round(number * 100)) if number <= 1 else int(number)


#: ``MessageStoreConfig.setTimerPrecisionMs``: the broker keeps the largest of these not above the value (100 below 200)
_TIMER_PRECISIONS = (100, 200, 500, 1000)


def _timer_precision(value: str) -> int:
    number = int(value)
    return next((p for p, q in zip(_TIMER_PRECISIONS, _TIMER_PRECISIONS[1:]) if number < q), _TIMER_PRECISIONS[-1])


_KEYS: dict[str, tuple[str, Callable[[str], object]]] = {
    "mappedFileSizeCommitLog": ("commitlog_file_size", _positive),
    "mapedFileSizeCommitLog": ("commitlog_file_size", _positive),
    "mappedFileSizeConsumeQueue": ("cq_file_size", lambda v: _positive(v) // _CQ_UNIT * _CQ_UNIT),
    "mapedFileSizeConsumeQueue": ("cq_file_size", lambda v: _positive(v) // _CQ_UNIT * _CQ_UNIT),
    "maxHashSlotNum": ("index_hash_slot_num", _positive),
    "maxIndexNum": ("index_num", _positive),
    "diskMaxUsedSpaceRatio": ("disk_max_used_ratio", _ratio),
    "storePathRootDir": ("store_root", str),
    "storePathCommitLog": ("commitlog_dir", str),
    "timerPrecisionMs": ("timer_precision_ms", _timer_precision),
    "messageIndexEnable": ("message_index_enable", lambda v: v.lower() == "true"),
    "log.dirs": ("log_dirs", lambda v: tuple(p.strip() for p in v.split(",") if p.strip())),
    "log.dir": ("log_dirs", lambda v: (v.strip(),)),
    "log.segment.bytes": ("segment_bytes", _positive),
}


#: broker.conf keys that exist from a RocketMQ version on (``MessageStoreConfig``, ``BrokerConfig``)
_VERSION_KEYS: dict[str, tuple[int, int, int]] = {
    "configManagerVersion": (5, 3, 2),
    "rocksdbCQDoubleWriteEnable": (5, 3, 1),
    "storeType": (5, 1, 4),
    "timerWheelEnable": (5, 0, 0),
    "enableControllerMode": (5, 0, 0),
}
#: a release directory: rocketmq-all-5.3.1-bin-release, rocketmq-5.3.3, ...
_RELEASE_DIR = re.compile(r"rocketmq(?:-all)?-(\d+\.\d+\.\d+)(?![\d.])")


def _version_hints(key: str, value: str) -> list[VersionHint]:
    if key == "rocketmqHome":
        m = _RELEASE_DIR.search(value)
        if m is None:
            return []
        major, minor, patch = (int(x) for x in m.group(1).split("."))
        return [VersionHint(f"rocketmqHome={value}", (major, minor, patch), exact=True)]
    since = _VERSION_KEYS.get(key)
    return [VersionHint(key, since)] if since is not None else []


def read_broker_settings(path: Path) -> BrokerSettings:
    """The settings of a broker.conf / server.properties (CorruptDataError naming the key and
    the value when a value is not what the broker would accept)."""
    try:
        props = load_java_properties(read_small_file(path, 16 << 20))
    except MqError as exc:
        raise exc.at(path) from None
    values: dict[str, object] = {}
    hints: list[VersionHint] = []
    for prop in props:
        hints += _version_hints(prop.key, prop.value.strip())
        known = _KEYS.get(prop.key)
        if known is None:
            continue
        name, convert = known
        if name == "log_dirs" and prop.key == "log.dir" and "log_dirs" in values:
            continue  # log.dirs wins over log.dir (KafkaConfig.logDirs)
        try:
            values[name] = convert(prop.value.strip())
        except ValueError:
            raise CorruptDataError(path=path, expected=f"a valid value for {prop.key}", found=repr(prop.value)) from None
    return BrokerSettings(str(path), **values, version_hints=tuple(hints))  # type: ignore[arg-type]


__all__ = ["BrokerSettings", "read_broker_settings"]
