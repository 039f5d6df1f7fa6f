"""``mqtool info``: what a store directory is, one module per layout (``rocketmq``, ``kafka``,
``legacy`` for Jafka and MetaQ), and the table that picks one.

The table holds, for each layout, a loader that imports the layout's module plainly and returns
its function; ``store_info`` looks the detected layout up (``layouts.for_layout``) and loads only
that module, so ``info`` on a RocketMQ store loads neither the Kafka nor the Jafka/MetaQ readers
(``bench/startup.py`` measures the start-up, ``tests/cli/test_startup.py`` holds the imports).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mqtool.layouts import Layout, for_layout

#: function(path, **options) -> report; only RocketMQ's takes options (the broker modelled)
InfoFunction = Callable[..., object]


def _rocketmq() -> InfoFunction:
    from mqtool.ops.info import rocketmq as info_rocketmq

    return info_rocketmq.rocketmq_info


def _kafka() -> InfoFunction:
    from mqtool.ops.info import kafka as info_kafka

    return info_kafka.kafka_info


def _jafka() -> InfoFunction:
    from mqtool.ops.info import legacy as info_legacy

    return info_legacy.jafka_info


def _metaq() -> InfoFunction:
    from mqtool.ops.info import legacy as info_legacy

    return info_legacy.metaq_info


#: layout -> the loader of its function(path) -> object with to_dict()
LOADERS: dict[Layout, Callable[[], InfoFunction]] = {Layout.ROCKETMQ: _rocketmq, Layout.KAFKA: _kafka, Layout.JAFKA: _jafka, Layout.METAQ: _metaq}


def info_functions() -> dict[Layout, InfoFunction]:
    """layout -> function(path) -> object with to_dict(), every layout's module loaded."""
    return {layout: load() for layout, load in LOADERS.items()}


def store_info(path: str | Path, layout: str, **options: object) -> object:
    """What the store at ``path`` is, read by the module of ``layout`` alone (``options``: the
    RocketMQ broker modelled for the restart preview)."""
    return for_layout(LOADERS, layout, "info")()(path, **options)
