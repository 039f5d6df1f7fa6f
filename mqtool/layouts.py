"""The four store layouts, how each is detected, and the one way a verb picks its layout's function.

``Layout`` is a ``str`` enum (``Layout.KAFKA == "kafka"``), so reports and JSON keep the plain
names.  ``DETECTORS`` is the registry of detection: for each layout the store-level predicate
(``is_<layout>_path(path) -> bool``: a store root, or a directory/file inside one such as a single
partition) of ``store/``, whose module each predicate here imports plainly when it is first called.
``--layout`` skips detection.

``VARIANTS`` registers the dialects of a layout: brokers whose stores are read as that layout
with their own rules, told apart by their file names.  Kafka 0.7 (``kafka07``: ``.kafka``
segments of magic 0 and 1 messages) is a variant of the Jafka layout, the format Jafka was
ported from (``store.jafka.Dialect``); ``--layout kafka07`` reads as ``jafka``.

Each verb in ``ops/`` keeps a plain ``{Layout: function}`` table built from plain imports;
``for_layout`` looks a layout up in it.  A layout a verb lacks is absent from its table and is
"unsupported" (exit 4); an ``ImportError`` or any other bug in a verb's module propagates and is an
internal error (exit 70), never mistaken for an unsupported layout.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from mqtool.errors import StoreLayoutError, UnsupportedFormatError
from mqtool.store.files import check_path

T = TypeVar("T")

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10 (requires-python): enum.StrEnum is 3.11+

    class StrEnum(str, enum.Enum):
        """``enum.StrEnum`` as far as mqtool uses it: ``str()`` is the value."""

        def __str__(self) -> str:
            return str(self.value)


class Layout(StrEnum):
    ROCKETMQ = "rocketmq"
    KAFKA = "kafka"
    JAFKA = "jafka"
    METAQ = "metaq"


#: The layout names, in the order messages list them.
LAYOUTS: tuple[str, ...] = tuple(layout.value for layout in Layout)

#: variant name -> (the layout it is read as, what it is)
VARIANTS: dict[str, tuple[Layout, str]] = {
    "kafka07": (Layout.JAFKA, "Kafka 0.7"),
}


def describe(layout: str, variant: str | None = None) -> str:
    """``layout``, with its variant named when it is one (``jafka (kafka07: Kafka 0.7)``)."""
    known = VARIANTS.get(variant or "")
    return f"{layout} ({variant}: {known[1]})" if known is not None and known[0] == layout else layout


Predicate = Callable[[Path], bool]


# Each predicate imports its layout's store module when it is first asked: detecting a RocketMQ
# store loads none of the other layouts' readers (``mqtool info`` starts within 2.5x of importing
# typer and rich, ``bench/startup.py``).


def is_rocketmq_path(path: Path) -> bool:
    """``store.root_rocketmq.is_rocketmq_path``: a RocketMQ store root, or a directory/file inside one."""
    from mqtool.store import root_rocketmq

    return root_rocketmq.is_rocketmq_path(path)


def is_kafka_path(path: Path) -> bool:
    """``store.kafka.is_kafka_path``: a Kafka log dir, a partition dir, or a file inside one --
    unless it is a Kafka 0.7 one (``store.jafka.is_kafka07_path``: its ``.kafka_cleanshutdown`` is
    Kafka 0.8's marker too, its ``.kafka`` segments are the Jafka layout's ``kafka07`` variant)."""
    from mqtool.store import kafka

    if not kafka.is_kafka_path(path):
        return False
    if not kafka.may_hold_kafka07_segments(Path(path)):
        return True  # no .kafka name where a Kafka 0.7 segment would be: the Jafka readers stay unloaded
    from mqtool.store import jafka

    return not jafka.is_kafka07_path(path)


def is_metaq_path(path: Path) -> bool:
    """``store.metaq.is_metaq_path``: a MetaQ segment or archive, a partition dir or a data dir."""
    from mqtool.store import metaq

    return metaq.is_metaq_path(path)


def is_jafka_path(path: Path) -> bool:
    """``store.jafka.is_jafka_path``: a Jafka (or Kafka 0.7) segment, a partition dir or a data dir."""
    from mqtool.store import jafka

    return jafka.is_jafka_path(path)


#: layout -> store-level predicate, tried in this order: the most specific markers first (a MetaQ
#: data dir is checked before a Jafka one).
DETECTORS: dict[Layout, Predicate] = {
    Layout.ROCKETMQ: is_rocketmq_path,
    Layout.KAFKA: is_kafka_path,
    Layout.METAQ: is_metaq_path,
    Layout.JAFKA: is_jafka_path,
}


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def parse_layout(name: str) -> Layout:
    """``name`` as a ``Layout``, a variant's name as its layout (StoreLayoutError naming the four
    and the variants when it is none of them)."""
    if name in VARIANTS:
        return VARIANTS[name][0]
    try:
        return Layout(name)
    except ValueError:
        raise StoreLayoutError(expected=f"--layout one of {', '.join((*LAYOUTS, *VARIANTS))}", found=repr(name)) from None


def detect_layout(path: str | Path, forced: str | None = None) -> Layout:
    """The layout of ``path`` (``forced``, from ``--layout``, skips detection)."""
    path = Path(path)
    check_path(path)
    if forced:
        return parse_layout(forced)
    for layout, predicate in DETECTORS.items():
        if predicate(path):
            return layout
    raise StoreLayoutError(
        expected="a RocketMQ store root, a Kafka log dir or partition, a Jafka (or Kafka 0.7) or MetaQ data dir (or --layout)",
        found="none of them",
        path=path,
    )


def for_layout(table: Mapping[Layout, T], layout: str, verb: str) -> T:
    """``table[layout]``, or UnsupportedFormatError (exit 4) naming the layouts ``mqtool verb``
    handles when ``layout`` is not among them."""
    key = Layout(layout) if layout in LAYOUTS else None
    if key is None or key not in table:
        handled = [name.value for name in Layout if name in table]
        raise UnsupportedFormatError(
            f"`mqtool {verb}` does not handle the {layout} layout",
            expected=_either(handled) if handled else "no layout",
            found=str(layout),
        )
    return table[key]


__all__ = ["DETECTORS", "LAYOUTS", "VARIANTS", "Layout", "Predicate", "describe", "detect_layout", "for_layout", "parse_layout"]
