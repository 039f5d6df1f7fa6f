"""Families of the Kafka, Jafka and MetaQ fixtures (registered into fuzz.harness.FAMILIES).

Kafka (``fixtures/kafka-logs``; each workspace keeps only the partition the target lives in and
the broker-level files, so an input runs in milliseconds): v2 batches (``orders``: the active
segment and a rolled one), a follower's multi-batch appends (``orders-1``), the v0/v1 message
formats (``legacy-0``) and the compacted ``__consumer_offsets`` form the *kafka-log* group;
compressed, idempotent and transactional batches (``events-0``) the *kafka-compressed* group;
the ``.index``/``.timeindex``/``.txnindex`` files *kafka-index*; producer ``.snapshot`` files
*kafka-snapshot*; the offset and leader-epoch checkpoints *kafka-checkpoint*.  Every family
runs ``info``, its ``dump kafka-*`` command, ``validate``, ``query`` (by offset or by
timestamp) and the ``recover`` plan (``--json``, plain or ``--full``: nothing is written).

Jafka (``fixtures/jafka-data``) and MetaQ (``fixtures/metaq-data``): ``info``, ``dump
jafka|metaq``, ``validate`` and the ``recover`` plan.
"""

from __future__ import annotations

from fuzz.harness import Command, Family, Slot, info_slot, register, variants

KAFKA = "kafka-logs"
BROKER_FILES = ("*checkpoint", "meta.properties", "bootstrap.checkpoint")


def _keep(partition: str) -> tuple[str, ...]:
    return (partition, *BROKER_FILES)


def _kafka_commands(dump: Command, topic: str = "orders", partition: str = "0", offset: str = "50") -> tuple[Slot, ...]:
    return (
        info_slot(),
        variants(dump),
        variants(("validate", "{store}", "--jobs", "1", "--jsonl")),
        variants(
            ("query", "{store}", "--topic", topic, "--partition", partition, "--offset", offset),
            ("query", "{store}", "--topic", topic, "--partition", partition, "--timestamp", "1700000001000"),
        ),
        variants(("recover", "{store}", "--json"), ("recover", "{store}", "--full", "--json")),
    )


def _log() -> Command:
    return ("dump", "kafka-log", "{target}", "--deep-iteration", "--jsonl")


def _clean(*extra: str) -> Slot:
    return variants(("clean", "{store}", "--json", "--now", "1700000000000", *extra))


KAFKA_FAMILIES = (
    # v2 logs: the active segment (torn tails, the valid end) and a rolled one (later segments dropped)
    Family("kafka-v2-log", "kafka-log", KAFKA, "orders-0/00000000000000000090.log", _kafka_commands(_log(), offset="100"), _keep("orders-0")),
    Family("kafka-v2-log-rolled", "kafka-log", KAFKA, "orders-0/00000000000000000030.log", _kafka_commands(_log(), offset="40"), _keep("orders-0")),
    # a follower's appends: three batches per .index entry
    Family(
        "kafka-v2-log-follower",
        "kafka-log",
        KAFKA,
        "orders-1/00000000000000000072.log",
        _kafka_commands(_log(), partition="1", offset="80"),
        _keep("orders-1"),
    ),
    # message format v0/v1 (plain and gzip wrappers) followed by v2 batches
    Family("kafka-v0-v1-log", "kafka-log", KAFKA, "legacy-0/00000000000000000000.log", _kafka_commands(_log(), topic="legacy", offset="5"), _keep("legacy-0")),
    # compacted internal topic (offset gaps, a delete horizon)
    Family(
        "kafka-consumer-offsets",
        "kafka-log",
        KAFKA,
        "__consumer_offsets-0/00000000000000000012.log",
        (*_kafka_commands(_log(), topic="__consumer_offsets", offset="15"), _clean("--protect-unconsumed")),
        _keep("__consumer_offsets-0"),
    ),
    # compressed (gzip/snappy/lz4/zstd), idempotent and transactional batches, control markers
    Family(
        "kafka-compressed",
        "kafka-compressed",
        KAFKA,
        "events-0/00000000000000000000.log",
        _kafka_commands(_log(), topic="events", offset="30"),
        _keep("events-0"),
    ),
    Family(
        "kafka-compressed-rolled",
        "kafka-compressed",
        KAFKA,
        "events-0/00000000000000000053.log",
        _kafka_commands(_log(), topic="events", offset="60"),
        _keep("events-0"),
    ),
    Family(
        "kafka-index",
        "kafka-index",
        KAFKA,
        "orders-0/00000000000000000060.index",
        _kafka_commands(("dump", "kafka-index", "{target}", "--jsonl"), offset="70"),
        _keep("orders-0"),
    ),
    Family(
        "kafka-index-active",
        "kafka-index",
        KAFKA,
        "orders-1/00000000000000000072.index",
        _kafka_commands(("dump", "kafka-index", "{target}", "--jsonl"), partition="1", offset="90"),
        _keep("orders-1"),
    ),
    Family(
        "kafka-timeindex",
        "kafka-index",
        KAFKA,
        "orders-0/00000000000000000090.timeindex",
        _kafka_commands(("dump", "kafka-timeindex", "{target}", "--jsonl"), offset="95"),
        _keep("orders-0"),
    ),
    Family(
        "kafka-txnindex",
        "kafka-index",
        KAFKA,
        "events-0/00000000000000000000.txnindex",
        _kafka_commands(("dump", "kafka-txnindex", "{target}", "--jsonl"), topic="events", offset="40"),
        _keep("events-0"),
    ),
    Family(
        "kafka-snapshot",
        "kafka-snapshot",
        KAFKA,
        "events-0/00000000000000000053.snapshot",
        _kafka_commands(("dump", "kafka-snapshot", "{target}", "--jsonl"), topic="events", offset="60"),
        _keep("events-0"),
    ),
    Family(
        "kafka-snapshot-orders",
        "kafka-snapshot",
        KAFKA,
        "orders-0/00000000000000000110.snapshot",
        _kafka_commands(("dump", "kafka-snapshot", "{target}", "--jsonl"), offset="100"),
        _keep("orders-0"),
    ),
    Family(
        "kafka-checkpoint",
        "kafka-checkpoint",
        KAFKA,
        "recovery-point-offset-checkpoint",
        (*_kafka_commands(("dump", "kafka-checkpoint", "{target}", "--json")), _clean()),
        _keep("orders-0"),
    ),
    Family(
        "kafka-log-start-checkpoint",
        "kafka-checkpoint",
        KAFKA,
        "log-start-offset-checkpoint",
        (*_kafka_commands(("dump", "kafka-checkpoint", "{target}", "--json")), _clean()),
        _keep("orders-0"),
    ),
    Family(
        "kafka-leader-epoch-checkpoint",
        "kafka-checkpoint",
        KAFKA,
        "orders-0/leader-epoch-checkpoint",
        _kafka_commands(("dump", "kafka-checkpoint", "{target}", "--json")),
        _keep("orders-0"),
    ),
)


def _legacy_commands(kind: str) -> tuple[Slot, ...]:
    return (
        info_slot(),
        variants(("dump", kind, "{target}", "--jsonl")),
        variants(("validate", "{store}", "--jobs", "1", "--jsonl")),
        variants(("recover", "{store}", "--json")),
    )


LEGACY_FAMILIES = (
    Family("jafka-segment", "jafka", "jafka-data", "orders-0/00000000000000002348.jafka", _legacy_commands("jafka")),
    Family("jafka-segment-rolled", "jafka", "jafka-data", "orders-0/00000000000000000771.jafka", _legacy_commands("jafka")),
    Family("jafka-compressed", "jafka", "jafka-data", "user-events-0/00000000000000000000.jafka", _legacy_commands("jafka")),
    Family("metaq-segment", "metaq", "metaq-data", "trade-0/00000000000000003162.meta", _legacy_commands("metaq")),
    Family("metaq-segment-rolled", "metaq", "metaq-data", "trade-1/00000000000000000000.meta", _legacy_commands("metaq")),
    Family("metaq-attributes", "metaq", "metaq-data", "meta-test-2/00000000002147483648.meta", _legacy_commands("metaq")),
)

for _family in (*KAFKA_FAMILIES, *LEGACY_FAMILIES):
    register(_family)
