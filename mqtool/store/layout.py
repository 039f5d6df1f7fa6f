"""Which layout a path is: RocketMQ, Kafka, Jafka or MetaQ (or forced with ``--layout``).

Each layout module in ``store/`` offers ``is_<layout>_path(path) -> bool`` (a store root, or a
directory/file inside one, such as a single partition).  Detection tries the most specific
markers first; ``--layout`` skips detection.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from mqtool.errors import StoreLayoutError
from mqtool.store.files import check_path

LAYOUTS = ("rocketmq", "kafka", "jafka", "metaq")

#: layout -> (module, predicate), tried in this order.
_DETECTORS = (
    ("rocketmq", "mqtool.store.rocketmq", "is_rocketmq_path"),
    ("kafka", "mqtool.store.kafka", "is_kafka_path"),
    ("metaq", "mqtool.store.metaq", "is_metaq_path"),
    ("jafka", "mqtool.store.jafka", "is_jafka_path"),
)


def _predicate(module: str, name: str):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def detect_layout(path: str | Path, forced: str | None = None) -> str:
    path = Path(path)
    check_path(path)
    if forced:
        if forced not in LAYOUTS:
            raise StoreLayoutError(expected=f"--layout one of {', '.join(LAYOUTS)}", found=repr(forced))
        return forced
    for layout, module, name in _DETECTORS:
        predicate = _predicate(module, name)
        if predicate is not None and predicate(path):
            return layout
    raise StoreLayoutError(
        expected="a RocketMQ store root, a Kafka log dir or partition, a Jafka or MetaQ data dir (or --layout)",
        found="none of them",
        path=path,
    )
