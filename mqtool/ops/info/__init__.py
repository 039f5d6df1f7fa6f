"""``mqtool info``: what a store directory is, one module per layout (``rocketmq``, ``kafka``,
``legacy`` for Jafka and MetaQ), and the table that picks one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mqtool.layouts import Layout, for_layout


def info_functions() -> dict[Layout, Callable[[str | Path], object]]:
    """layout -> function(path) -> object with to_dict().  Imported here, not at the top, so
    ``mqtool --help`` does not load the layouts' modules."""
    from mqtool.ops.info import kafka as info_kafka
    from mqtool.ops.info import legacy as info_legacy
    from mqtool.ops.info import rocketmq as info_rocketmq

    return {
        Layout.ROCKETMQ: info_rocketmq.rocketmq_info,
        Layout.KAFKA: info_kafka.kafka_info,
        Layout.JAFKA: info_legacy.jafka_info,
        Layout.METAQ: info_legacy.metaq_info,
    }


def store_info(path: str | Path, layout: str) -> object:
    return for_layout(info_functions(), layout, "info")(path)
