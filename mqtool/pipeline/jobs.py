"""The ``mqtool scan`` job: DataFrame -> DataFrame transforms composed in ``run(spark, cfg)``.

1. Ingest, one pass over every store file: the data sources decode each family, the rows are
   written as Parquet datasets under ``cfg.out`` (``messages``, ``queue_units``,
   ``index_entries``, ``kafka_records``, ``jafka_messages``, ``metaq_messages``, partitioned by
   ``source`` and ``topic``), while broken records come out as problem rows.
2. Integrity, from the Parquet datasets with Spark joins and windows: every ConsumeQueue unit
   against the CommitLog record it points at, every IndexFile entry against its record,
   PHYSICALOFFSET and QUEUEOFFSET continuity, UNIQ_KEY duplicates, per-topic counts and time
   ranges, Kafka offset continuity.  Findings carry ``validate``'s codes and are written as the
   ``findings`` dataset.

The rules are validate's (``ops.validate.rocketmq``): units and entries that point below the
CommitLog's first file are expired (one info finding per queue / file), units and entries that
point into a region a CommitLog finding already covers are not reported again, units and entries
at or past the end of valid CommitLog data are ``*-PAST-END``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mqtool.errors import StoreLayoutError
from mqtool.findings.code_ids import (
    JAFKA_CRC,
    JAFKA_MAGIC,
    JAFKA_SIZE,
    JAFKA_UNREADABLE_REGION,
    KAFKA_LOG_COMPRESSION,
    KAFKA_LOG_CRC,
    KAFKA_LOG_GARBAGE,
    KAFKA_LOG_MAGIC,
    KAFKA_LOG_RECORDS,
    KAFKA_LOG_SIZE,
    KAFKA_LOG_UNSUPPORTED,
    KAFKA_OFFSET_GAP,
    KAFKA_OFFSET_ORDER,
    METAQ_CRC,
    METAQ_SIZE,
    METAQ_UNREADABLE_REGION,
    RMQ_CL_BODY_CRC,
    RMQ_CL_ENCODING,
    RMQ_CL_MAGIC,
    RMQ_CL_PHYS_OFFSET,
    RMQ_CL_QUEUE_OFFSET,
    RMQ_CL_SIZE,
    RMQ_CL_TORN_TAIL,
    RMQ_CL_TRUNCATED,
    RMQ_CL_UNREADABLE_REGION,
    RMQ_CQ_EXPIRED,
    RMQ_CQ_MISMATCH,
    RMQ_CQ_NOT_A_RECORD,
    RMQ_CQ_PAST_END,
    RMQ_CQ_TAGS,
    RMQ_IDX_ENTRY,
    RMQ_IDX_EXPIRED,
    RMQ_IDX_PAST_END,
)
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq.commitlog import MIN_MESSAGE_SIZE, PHYSICAL_OFFSET_POSITION, QUEUE_OFFSET_POSITION
from mqtool.layouts import LAYOUTS
from mqtool.pipeline import files as fs
from mqtool.pipeline import sources as src
from mqtool.pipeline.progress import FileWatch, Progress, Silent
from mqtool.store.model import rocketmq as rmq_model

#: The finding codes scan computes (a subset of validate's: the record-level and cross-reference
#: checks; file names and sizes, END_OF_FILE records, checkpoint, config and IndexFile chains
#: stay with ``mqtool validate``).
SCAN_CODES = frozenset(
    {
        RMQ_CL_MAGIC,
        RMQ_CL_SIZE,
        RMQ_CL_TRUNCATED,
        RMQ_CL_BODY_CRC,
        RMQ_CL_ENCODING,
        RMQ_CL_PHYS_OFFSET,
        RMQ_CL_QUEUE_OFFSET,
        RMQ_CL_TORN_TAIL,
        RMQ_CL_UNREADABLE_REGION,
        RMQ_CQ_PAST_END,
        RMQ_CQ_EXPIRED,
        RMQ_CQ_NOT_A_RECORD,
        RMQ_CQ_MISMATCH,
        RMQ_CQ_TAGS,
        RMQ_IDX_ENTRY,
        RMQ_IDX_EXPIRED,
        RMQ_IDX_PAST_END,
        KAFKA_LOG_MAGIC,
        KAFKA_LOG_SIZE,
        KAFKA_LOG_CRC,
        KAFKA_LOG_RECORDS,
        KAFKA_LOG_COMPRESSION,
        KAFKA_LOG_UNSUPPORTED,
        KAFKA_LOG_GARBAGE,
        KAFKA_OFFSET_ORDER,
        KAFKA_OFFSET_GAP,
        JAFKA_CRC,
        JAFKA_MAGIC,
        JAFKA_SIZE,
        JAFKA_UNREADABLE_REGION,
        METAQ_CRC,
        METAQ_SIZE,
        METAQ_UNREADABLE_REGION,
    }
)

#: ``severity``: null for the code's default (``findings.CODES``), else the finding's own
#: (a warning for bytes the broker overwrites: ``problem_findings``)
FINDING_COLUMNS = ("source", "code", "path", "position", "length", "message", "severity")

DATASETS = {
    "rocketmq": ("messages", "queue_units", "index_entries"),
    "kafka": ("kafka_records",),
    "jafka": ("jafka_messages",),
    "metaq": ("metaq_messages",),
}


#: What ``run`` writes under ``cfg.out``; ``clear_out`` (``scan --overwrite``) removes exactly these.
OUTPUTS = (*sorted({name for names in DATASETS.values() for name in names}), "findings", "_staging", "report.json")

#: The stages of the job for each layout it reads, in the order ``run`` goes through them (the
#: reads show how many store files they have finished), then ``FINAL_STAGE``.
LAYOUT_STAGES = {
    "rocketmq": (
        "reading CommitLog files",
        "checking CommitLog records",
        "reading ConsumeQueue files",
        "reading IndexFiles",
        "counting topics and UNIQ_KEY duplicates",
    ),
    "kafka": ("reading Kafka log segments", "checking Kafka offsets, counting topics"),
    "jafka": ("reading Jafka log segments", "counting Jafka topics"),
    "metaq": ("reading MetaQ log segments", "counting MetaQ topics"),
}
FINAL_STAGE = "cross-checking, writing findings"


@dataclass(frozen=True)
class ScanInput:
    source: str  # the label every row of this input carries
    path: str
    layout: str


@dataclass(frozen=True)
class ScanConfig:
    inputs: tuple[ScanInput, ...]
    out: str
    with_body: bool = False
    split_size: int = src.DEFAULT_SPLIT_SIZE
    topics: tuple[str, ...] | None = None
    max_duplicates: int = 20


#: A JSON object of the scan's answer: Spark ``Row.asDict()`` values (typed ``Any`` by pyspark)
#: and the documents built from them.
JsonDoc = dict[str, Any]


@dataclass
class ScanResult:
    findings: list[JsonDoc] = field(default_factory=list)
    topics: list[JsonDoc] = field(default_factory=list)
    duplicates: JsonDoc = field(default_factory=dict)
    kafka_offsets: list[JsonDoc] = field(default_factory=list)
    datasets: dict[str, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    facts: JsonDoc = field(default_factory=dict)


def stage_names(cfg: ScanConfig) -> list[str]:
    """The stages ``run(spark, cfg)`` goes through, in order."""
    layouts = {i.layout for i in cfg.inputs}
    return [name for layout in LAYOUTS if layout in layouts for name in LAYOUT_STAGES[layout]] + [FINAL_STAGE]


class _Steps:
    """The job's side of ``progress``: each stage announced as it starts, and each read given a
    progress file (``local`` masters only: the Python workers must see the driver's disk)."""

    def __init__(self, spark: SparkSession, progress: Progress | None) -> None:
        self.progress: Progress = progress or Silent()
        local = str(spark.sparkContext.master).startswith("local")
        self.watch = FileWatch(self.progress) if progress is not None and local else None

    def stage(self, name: str) -> None:
        self.progress.stage(name)

    @contextlib.contextmanager
    def reading(self, name: str) -> Iterator[dict[str, str]]:
        """Stage ``name`` reads store files: the reader options that report them done."""
        self.progress.stage(name)
        if self.watch is None:
            yield {}
            return
        with self.watch.read() as options:
            yield options

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()


# --- layout detection (works on any filesystem pyarrow opens) ------------------------------------


def detect_layout(path: str) -> str:
    """rocketmq, kafka, jafka or metaq, from the names under ``path`` (two levels deep)."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    names = [path.rstrip("/").rsplit("/", 1)[-1]]
    if entry.is_dir:
        children = fs.listdir(path)
        names += [c.name for c in children]
        if any(c.name in ("commitlog", "consumequeue") and c.is_dir for c in children):
            return "rocketmq"
        for c in children[:64]:
            if c.is_dir:
                names += [g.name for g in fs.listdir(c.path)[:64]]
    if any(n in ("commitlog", "consumequeue", "consumequeue_ext") for n in names) or (not entry.is_dir and segnames.ROCKETMQ_FILE_NAME.match(names[0])):
        return "rocketmq"
    for layout, suffixes in (("kafka", (".log",)), ("jafka", (".jafka",)), ("metaq", (".meta", ".meta.arc", ".meta.zip"))):
        if any(n.endswith(suffixes) for n in names):
            return layout
    raise StoreLayoutError(expected="a RocketMQ store root, a Kafka log dir or partition, a Jafka or MetaQ data dir (or --layout)", found="none of them", path=path)


# --- reading ----------------------------------------------------------------------------------------


def read_family(spark: SparkSession, fmt: str, inputs: list[ScanInput], cfg: ScanConfig, **options: object) -> DataFrame:
    """One data source read over every input of a layout (one planning round trip, however
    many stores), each row tagged with its input's label."""
    reader = spark.read.format(fmt).option("splitSize", str(cfg.split_size))
    if cfg.topics:
        reader = reader.option("topic", ",".join(cfg.topics))
    for key, value in options.items():
        reader = reader.option(key, str(value).lower() if isinstance(value, bool) else str(value))
    return reader.option("sources", json.dumps([[i.source, i.path] for i in inputs])).load()


def _union(frames: list[DataFrame]) -> DataFrame | None:
    if not frames:
        return None
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame, allowMissingColumns=True)
    return out


# --- transforms: DataFrame -> DataFrame -------------------------------------------------------------


def file_ends(raw: DataFrame) -> DataFrame:
    """Per file: where its data ends (the first end-of-data any range of it met)."""
    return raw.where(F.col("row_kind") == "end").groupBy("source", "file").agg(F.min("position").alias("end_position"))


def records_before_end(raw: DataFrame, ends: DataFrame) -> DataFrame:
    """Record rows that lie before their file's end of data (a byte range starting after the
    end can only have found stale records there)."""
    rows = raw.where(F.col("row_kind") == "record")
    joined = rows.join(F.broadcast(ends), ["source", "file"], "left")
    return joined.where(F.col("end_position").isNull() | (F.col("position") < F.col("end_position"))).drop("end_position")


def problem_findings(raw: DataFrame, ends: DataFrame) -> DataFrame:
    """The findings of the walks' problem rows before each file's end of data.  A problem the
    store model judged bytes the broker overwrites (``problem_ignored``: ``ignored_tail``) is a
    warning saying so when it is met at its file's first broken record, where the broker's
    recovery stops (validate's rule); its byte ranges may have been walked by other tasks,
    so the first is found here, over the whole file."""
    rows = raw.where(F.col("row_kind") == "problem").join(F.broadcast(ends), ["source", "file"], "left")
    # judged where the walk met the broken record, not where the finding points inside it (the
    # magic code of a broken record at the end of data is 4 bytes past that end)
    met = F.coalesce(F.col("problem_at"), F.col("position"))
    rows = rows.where(F.col("end_position").isNull() | (met <= F.col("end_position")) | F.col("problem_code").endswith("TORN-TAIL"))
    first = F.min(met).over(Window.partitionBy("source", "file"))
    ignored = F.col("problem_ignored").isNotNull() & (met == first)
    return rows.select(
        "source",
        F.col("problem_code").alias("code"),
        F.col("file").alias("path"),
        "position",
        F.col("problem_length").alias("length"),
        F.when(ignored & (F.col("problem_ignored") != ""), F.concat(F.col("problem_message"), F.lit("; "), F.col("problem_ignored")))
        .otherwise(F.col("problem_message"))
        .alias("message"),
        F.when(ignored, F.lit("warning")).otherwise(F.lit(None).cast("string")).alias("severity"),
    )


def problem_ranges(raw: DataFrame) -> DataFrame:
    return raw.where(F.col("damaged_from").isNotNull()).select("source", F.col("damaged_from").alias("start"), F.col("damaged_to").alias("stop"))


def phys_offset_findings(messages: DataFrame) -> DataFrame:
    """RMQ-CL-PHYS-OFFSET: a record whose PHYSICALOFFSET is not its own address."""
    bad = messages.where(F.col("physical_offset") != F.col("commitlog_offset"))
    return bad.select(
        "source",
        F.lit(RMQ_CL_PHYS_OFFSET).alias("code"),
        F.col("file").alias("path"),
        (F.col("position") + PHYSICAL_OFFSET_POSITION).alias("position"),
        F.lit(None).cast("long").alias("length"),
        F.format_string("expected PHYSICALOFFSET %d (the record's position), found %d", F.col("commitlog_offset"), F.col("physical_offset")).alias("message"),
    )


def phys_offset_ranges(messages: DataFrame) -> DataFrame:
    bad = messages.where(F.col("physical_offset") != F.col("commitlog_offset"))
    return bad.select("source", F.col("commitlog_offset").alias("start"), (F.col("commitlog_offset") + F.col("total_size")).alias("stop"))


def queue_offset_breaks(messages: DataFrame, ranges: DataFrame) -> DataFrame:
    """Records whose QUEUEOFFSET does not follow the previous record of their queue (PREPARED and
    ROLLBACK records take no queue offset).  As validate: after an outlier the old sequence may
    go on, and a forward jump over bytes a CommitLog finding covers is not reported again."""
    w = Window.partitionBy("source", "topic", "queue_id").orderBy("commitlog_offset")
    seq = messages.where(~F.col("transaction_type").isin("PREPARED", "ROLLBACK")).select(
        "source", "topic", "queue_id", "file", "position", "commitlog_offset", "total_size", "queue_offset"
    )
    seq = (
        seq.withColumn("prev", F.lag("queue_offset", 1).over(w))
        .withColumn("prev2", F.lag("queue_offset", 2).over(w))
        .withColumn("prev_at", F.lag("commitlog_offset", 1).over(w))
        .withColumn("prev_size", F.lag("total_size", 1).over(w))
    )
    suspect = seq.where(
        F.col("prev").isNotNull()
        & (F.col("queue_offset") != F.col("prev") + 1)
        & ~F.coalesce((F.col("prev") != F.col("prev2") + 1) & (F.col("queue_offset") == F.col("prev2") + 2), F.lit(False))
    )
    # slack: records the damaged bytes between the two records may have held
    gaps = suspect.alias("s").join(
        F.broadcast(ranges.alias("r")),
        (F.col("s.source") == F.col("r.source")) & (F.col("r.stop") > F.col("s.prev_at") + F.col("s.prev_size")) & (F.col("r.start") < F.col("s.commitlog_offset")),
        "left",
    )
    slack = F.sum(F.when(F.col("r.start").isNull(), 0).otherwise(F.greatest(F.lit(1), F.floor((F.col("r.stop") - F.col("r.start")) / MIN_MESSAGE_SIZE))))
    keys = [F.col(f"s.{c}").alias(c) for c in ("source", "topic", "queue_id", "file", "position", "commitlog_offset", "total_size", "queue_offset", "prev")]
    grouped = gaps.groupBy(*keys).agg(slack.alias("slack"))
    return grouped.where(~((F.col("queue_offset") > F.col("prev")) & (F.col("queue_offset") <= F.col("prev") + 1 + F.col("slack"))))


def queue_offset_findings(breaks: DataFrame) -> DataFrame:
    return breaks.select(
        "source",
        F.lit(RMQ_CL_QUEUE_OFFSET).alias("code"),
        F.col("file").alias("path"),
        (F.col("position") + QUEUE_OFFSET_POSITION).alias("position"),
        F.lit(None).cast("long").alias("length"),
        F.format_string("%s/%d: expected QUEUEOFFSET %d after %d, found %d", "topic", "queue_id", F.col("prev") + 1, "prev", "queue_offset").alias("message"),
    )


def outside_ranges(frame: DataFrame, offset_col: str, ranges: DataFrame) -> DataFrame:
    """Rows whose ``offset_col`` lies in no damaged range of their source."""
    r = F.broadcast(ranges.alias("r"))
    cond = (F.col("x.source") == F.col("r.source")) & (F.col(f"x.{offset_col}") >= F.col("r.start")) & (F.col(f"x.{offset_col}") < F.col("r.stop"))
    return frame.alias("x").join(r, cond, "left_anti")


def pointer_checks(pointers: DataFrame, offset_col: str, bounds: DataFrame, ranges: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Split units / entries into (expired, past the end, in range), dropping those in damaged
    ranges.  ``bounds``: per source ``commitlog_min`` and ``commitlog_end``."""
    p = pointers.join(F.broadcast(bounds), "source")
    expired = p.where(F.col(offset_col) < F.col("commitlog_min"))
    live = outside_ranges(p.where(F.col(offset_col) >= F.col("commitlog_min")), offset_col, ranges)
    past = live.where(F.col(offset_col) >= F.col("commitlog_end"))
    inside = live.where(F.col(offset_col) < F.col("commitlog_end"))
    return expired, past, inside


def consumequeue_findings(units: DataFrame, messages: DataFrame, bounds: DataFrame, ranges: DataFrame) -> DataFrame:
    """Every ConsumeQueue unit against the CommitLog record it points at."""
    units = units.where(F.col("kind") != "filler")
    expired, past, inside = pointer_checks(units, "commitlog_offset", bounds, ranges)
    expired_f = expired.groupBy("source", "file").agg(F.count("*").alias("n"), F.first("commitlog_min").alias("min"))
    expired_f = expired_f.withColumn("qdir", F.regexp_replace("file", "/[^/]*$", ""))
    expired_f = expired_f.groupBy("source", "qdir").agg(F.sum("n").alias("n"), F.first("min").alias("min"))
    out = [
        expired_f.select(
            "source",
            F.lit(RMQ_CQ_EXPIRED).alias("code"),
            F.col("qdir").alias("path"),
            F.lit(None).cast("long").alias("position"),
            F.lit(None).cast("long").alias("length"),
            F.format_string("%d unit(s) point below the CommitLog's first file (%d): expired by retention", "n", "min").alias("message"),
        ),
        past.select(
            "source",
            F.lit(RMQ_CQ_PAST_END).alias("code"),
            F.col("file").alias("path"),
            "position",
            F.lit(None).cast("long").alias("length"),
            F.format_string(
                "queue offset %d: expected a commitlog offset below %d (end of valid CommitLog data), found %d",
                "queue_offset",
                "commitlog_end",
                "commitlog_offset",
            ).alias("message"),
        ),
    ]
    rec = messages.select(
        "source",
        F.col("commitlog_offset").alias("r_offset"),
        F.col("physical_offset").alias("r_phys"),
        F.col("total_size").alias("r_size"),
        F.col("topic").alias("r_topic"),
        F.col("queue_id").alias("r_qid"),
        F.col("queue_offset").alias("r_qoff"),
        F.col("tags").alias("r_tags"),
        F.col("tags_code").alias("r_tags_code"),
    )
    j = inside.join(rec, (inside["source"] == rec["source"]) & (inside["commitlog_offset"] == rec["r_offset"]), "left").drop(rec["source"])
    not_record = j.where(F.col("r_offset").isNull() | (F.col("r_phys") != F.col("commitlog_offset")))
    out.append(
        not_record.select(
            "source",
            F.lit(RMQ_CQ_NOT_A_RECORD).alias("code"),
            F.col("file").alias("path"),
            "position",
            F.lit(None).cast("long").alias("length"),
            F.when(
                F.col("r_offset").isNull(),
                F.format_string("queue offset %d: commitlog offset %d is not the start of a valid record", "queue_offset", "commitlog_offset"),
            )
            .otherwise(F.format_string("queue offset %d: the record at commitlog offset %d says PHYSICALOFFSET %d", "queue_offset", "commitlog_offset", "r_phys"))
            .alias("message"),
        )
    )
    matched = j.where(F.col("r_offset").isNotNull() & (F.col("r_phys") == F.col("commitlog_offset")))
    problems = F.concat_ws(
        "; ",
        F.when(F.col("r_size") != F.col("size"), F.format_string("size %d vs record TOTALSIZE %d", "size", "r_size")),
        F.when(
            (F.col("r_topic") != F.col("topic")) | (F.col("r_qid") != F.col("queue_id")),
            F.format_string("queue %s/%d vs record %s/%d", "topic", "queue_id", "r_topic", "r_qid"),
        ),
        F.when(F.col("r_qoff") != F.col("queue_offset"), F.format_string("queue offset %d vs record QUEUEOFFSET %d", "queue_offset", "r_qoff")),
    )
    matched = matched.withColumn("problems", problems)
    out.append(
        matched.where(F.col("problems") != "").select(
            "source",
            F.lit(RMQ_CQ_MISMATCH).alias("code"),
            F.col("file").alias("path"),
            "position",
            F.lit(None).cast("long").alias("length"),
            F.format_string("unit at queue offset %d -> commitlog offset %d: %s", "queue_offset", "commitlog_offset", "problems").alias("message"),
        )
    )
    good = matched.where(F.col("problems") == "")
    actual = F.when(F.col("ext_offset").isNull(), F.col("tags_code")).otherwise(F.col("ext_tags_code"))
    tags_bad = good.where((F.col("ext_offset").isNotNull() & F.col("ext_missing")) | (actual.isNotNull() & (actual != F.col("r_tags_code"))))
    out.append(
        tags_bad.select(
            "source",
            F.lit(RMQ_CQ_TAGS).alias("code"),
            F.col("file").alias("path"),
            (F.col("position") + 12).alias("position"),
            F.lit(None).cast("long").alias("length"),
            F.when(F.col("ext_missing"), F.format_string("queue offset %d: ConsumeQueueExt address %d points at no ext unit", "queue_offset", "tags_code"))
            .otherwise(
                F.format_string(
                    "queue offset %d: expected tagsCode %d (%s), found %d",
                    "queue_offset",
                    "r_tags_code",
                    F.when(F.col("r_topic") == "SCHEDULE_TOPIC_XXXX", F.lit("delivery time (store time + delay level)")).otherwise(
                        F.concat(F.lit("TAGS "), F.coalesce(F.col("r_tags"), F.lit("None")), F.lit(" hash"))
                    ),
                    actual,
                )
            )
            .alias("message"),
        )
    )
    return _union(out)  # type: ignore[return-value]


def index_findings(entries: DataFrame, messages: DataFrame, bounds: DataFrame, ranges: DataFrame) -> DataFrame:
    """Every IndexFile entry against the record it points at."""
    expired, past, inside = pointer_checks(entries, "commitlog_offset", bounds, ranges)
    out = [
        expired.groupBy("source", "file")
        .agg(F.count("*").alias("n"))
        .select(
            "source",
            F.lit(RMQ_IDX_EXPIRED).alias("code"),
            F.col("file").alias("path"),
            F.lit(None).cast("long").alias("position"),
            F.lit(None).cast("long").alias("length"),
            F.format_string("%d entr%s below the CommitLog's first file", "n", F.when(F.col("n") == 1, "y points").otherwise("ies point")).alias("message"),
        ),
        past.select(
            "source",
            F.lit(RMQ_IDX_PAST_END).alias("code"),
            F.col("file").alias("path"),
            "position",
            F.lit(None).cast("long").alias("length"),
            F.format_string("entry #%d: expected a commitlog offset below %d, found %d", "number", "commitlog_end", "commitlog_offset").alias("message"),
        ),
    ]
    rec = messages.select("source", F.col("commitlog_offset").alias("r_offset"), F.col("physical_offset").alias("r_phys"), F.col("key_hashes").alias("r_hashes"))
    j = inside.join(rec, (inside["source"] == rec["source"]) & (inside["commitlog_offset"] == rec["r_offset"]), "left").drop(rec["source"])
    not_record = F.col("r_offset").isNull() | (F.col("r_phys") != F.col("commitlog_offset"))
    wrong_key = F.col("r_hashes").isNotNull() & ~F.array_contains(F.col("r_hashes"), F.col("key_hash"))
    bad = j.where(not_record | wrong_key)
    out.append(
        bad.select(
            "source",
            F.lit(RMQ_IDX_ENTRY).alias("code"),
            F.col("file").alias("path"),
            "position",
            F.lit(None).cast("long").alias("length"),
            F.when(not_record, F.format_string("entry #%d: commitlog offset %d is not the start of a valid record", "number", "commitlog_offset"))
            .otherwise(
                F.format_string(
                    "entry #%d: the record at commitlog offset %d has no key hashing to %d (its keys hash to %s)",
                    "number",
                    "commitlog_offset",
                    "key_hash",
                    F.array_join(F.col("r_hashes").cast("array<string>"), ", "),
                )
            )
            .alias("message"),
        )
    )
    return _union(out)  # type: ignore[return-value]


def topic_stats(messages: DataFrame, layout: str, time_col: str | None, size_col: str, queue_col: str) -> DataFrame:
    """Per source and topic: messages, bytes, queues/partitions, first and last time."""
    aggs = [
        F.count("*").alias("messages"),
        F.sum(F.greatest(F.col(size_col), F.lit(0))).cast("long").alias("bytes"),
        F.countDistinct(queue_col).alias("queues"),
    ]
    if time_col:
        aggs += [F.min(time_col).alias("first_timestamp"), F.max(time_col).alias("last_timestamp")]
    else:
        aggs += [F.lit(None).cast("long").alias("first_timestamp"), F.lit(None).cast("long").alias("last_timestamp")]
    return messages.groupBy("source", "topic").agg(*aggs).withColumn("layout", F.lit(layout))


def uniq_key_duplicates(messages: DataFrame) -> DataFrame:
    """UNIQ_KEYs stored more than once (producer retries, or a message sent to two brokers)."""
    keyed = messages.where(F.col("uniq_key").isNotNull())
    return (
        keyed.groupBy("topic", "uniq_key")
        .agg(
            F.count("*").alias("copies"),
            F.sort_array(F.collect_set("source")).alias("sources"),
            F.min("commitlog_offset").alias("first_commitlog_offset"),
            F.max("commitlog_offset").alias("last_commitlog_offset"),
        )
        .where(F.col("copies") > 1)
    )


def kafka_batches(records: DataFrame) -> DataFrame:
    """One row per log entry (batch or legacy message): its first and last record offset."""
    return records.groupBy("source", "topic", "partition", "file", F.col("batch_position").alias("position")).agg(
        F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"), F.count("*").alias("records")
    )


def kafka_offset_findings(batches: DataFrame) -> DataFrame:
    """KAFKA-OFFSET-ORDER (offsets that do not increase) and KAFKA-OFFSET-GAP (offsets missing
    between entries: compaction, or lost data) across the entries of each partition."""
    w = Window.partitionBy("source", "topic", "partition").orderBy("file", "position")
    b = batches.withColumn("prev_last", F.lag("last_offset").over(w))
    order = b.where(F.col("first_offset") <= F.col("prev_last"))
    gap = b.where(F.col("first_offset") > F.col("prev_last") + 1)
    return order.select(
        "source",
        F.lit(KAFKA_OFFSET_ORDER).alias("code"),
        F.col("file").alias("path"),
        "position",
        F.lit(None).cast("long").alias("length"),
        F.format_string("%s-%d: expected offsets after %d, found %d..%d", "topic", "partition", "prev_last", "first_offset", "last_offset").alias("message"),
    ).unionByName(
        gap.select(
            "source",
            F.lit(KAFKA_OFFSET_GAP).alias("code"),
            F.col("file").alias("path"),
            "position",
            (F.col("first_offset") - F.col("prev_last") - 1).alias("length"),
            F.format_string("%s-%d: offsets %d..%d missing before this entry", "topic", "partition", F.col("prev_last") + 1, F.col("first_offset") - 1).alias("message"),
        )
    )


def kafka_partition_offsets(batches: DataFrame) -> DataFrame:
    return batches.groupBy("source", "topic", "partition").agg(
        F.min("first_offset").alias("first_offset"),
        F.max("last_offset").alias("last_offset"),
        F.sum("records").alias("records"),
    )


# --- the job ------------------------------------------------------------------------------------------


def _write(frame: DataFrame, path: str, partition_by: tuple[str, ...]) -> DataFrame:
    """Write ``frame`` as Parquet and return the dataset read back (with ``frame``'s schema, so
    partition values such as numeric topic names keep their types, and an empty dataset reads)."""
    writer = frame.write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(path)
    return frame.sparkSession.read.schema(frame.schema).parquet(path)


def _stage(frame: DataFrame, path: str) -> DataFrame:
    """Write what a data source read (records, problem and end rows) once, unpartitioned: the
    only pass over the store files; every later step reads these Parquet files instead."""
    frame.write.mode("overwrite").parquet(path)
    return frame.sparkSession.read.schema(frame.schema).parquet(path)


def _hadoop(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(Hadoop ``Path``, its ``FileSystem``): whatever filesystem Spark writes ``--out`` to
    (py4j proxies of JVM objects, untyped)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a running SparkContext has its JVM gateway
    target = jvm.org.apache.hadoop.fs.Path(path)
    return target, target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def _delete(spark: SparkSession, path: str) -> None:
    """Remove a directory on whatever filesystem Spark writes ``--out`` to (Hadoop FS API)."""
    target, filesystem = _hadoop(spark, path)
    filesystem.delete(target, True)


def list_out(spark: SparkSession, out: str) -> list[str] | None:
    """The names in directory ``out`` as Spark sees it (``[]``: absent or empty; None: a file)."""
    target, filesystem = _hadoop(spark, out)
    if not filesystem.exists(target):
        return []
    if not filesystem.getFileStatus(target).isDirectory():
        return None
    return sorted(status.getPath().getName() for status in filesystem.listStatus(target))


def clear_out(spark: SparkSession, out: str) -> None:
    """Remove what an earlier scan wrote in ``out`` (``OUTPUTS``), and nothing else."""
    for name in OUTPUTS:
        _delete(spark, f"{out.rstrip('/')}/{name}")


def _rocketmq_bounds(inputs: list[ScanInput], ends: list[JsonDoc]) -> list[tuple[str, int, int]]:
    """(source, commitlog_min, commitlog_end) per store, as validate computes them."""
    out: list[tuple[str, int, int]] = []
    for inp in inputs:
        segs = src.commitlog_segments(inp.path)
        if not segs:
            out.append((inp.source, 0, 0))
            continue
        minimum = int(segs[0].name) if segnames.ROCKETMQ_FILE_NAME.match(segs[0].name) else 0
        last = src.last_data_index(segs)
        end = minimum
        if last >= 0:
            last_path = segs[last].path
            base = int(segs[last].name) if segnames.ROCKETMQ_FILE_NAME.match(segs[last].name) else 0
            positions = [e["end_position"] for e in ends if e["source"] == inp.source and e["file"] == last_path]
            end = base + (min(positions) if positions else segs[last].size)
        out.append((inp.source, minimum, end))
    return out


def _missing_ranges(inputs: list[ScanInput]) -> list[JsonDoc]:
    """Commitlog offsets no file holds between two CommitLog files up to the last holding data (a
    missing or zero-length file): RMQ-FILE-GAP / RMQ-FILE-ZERO-LENGTH report them, so -- as in
    validate -- nothing pointing there is reported again, and a queue may skip the records they
    held."""
    out: list[JsonDoc] = []
    for inp in inputs:
        segs = src.commitlog_segments(inp.path)
        file_size = src.commitlog_file_size(segs)
        if not file_size:
            continue
        last = max(src.last_data_index(segs), 0)
        walked = [src.segment_base(seg) for i, seg in enumerate(segs) if seg.size > 0 and i <= last]
        for prev, base in zip(walked, walked[1:]):
            gap = rmq_model.missing_between(prev, base, file_size)
            if gap is not None:
                out.append({"source": inp.source, "start": gap[0], "stop": gap[1]})
    return out


def run_rocketmq(spark: SparkSession, cfg: ScanConfig, inputs: list[ScanInput], result: ScanResult, steps: _Steps) -> list[DataFrame]:
    out = cfg.out.rstrip("/")
    read_commitlog, check_commitlog, read_consumequeue, read_index, count = LAYOUT_STAGES["rocketmq"]
    with steps.reading(read_commitlog) as progress:
        raw = read_family(spark, "rocketmq_commitlog", inputs, cfg, withProblems=True, withKeyHashes=True, withBody=cfg.with_body, **progress)
        raw = _stage(raw, f"{out}/_staging/commitlog")
    steps.stage(check_commitlog)
    ends = file_ends(raw)
    end_rows = [r.asDict() for r in ends.collect()]
    ends_df = spark.createDataFrame(end_rows, "source string, file string, end_position long") if end_rows else ends
    problem_cols = [c for c, _, _ in src.PROBLEM_COLUMNS if c not in src.RECORD_PROBLEM_COLUMNS]
    messages = _write(records_before_end(raw, ends_df).drop(*problem_cols), f"{out}/messages", ("source", "topic"))
    problems = problem_findings(raw, ends_df)
    ranges_rows = [r.asDict() for r in problem_ranges(raw).collect()] + _missing_ranges(inputs)
    problem_rows = problems.collect()

    result.datasets["messages"] = f"{out}/messages"
    findings = [spark.createDataFrame(problem_rows, problems.schema)] if problem_rows else []
    findings.append(phys_offset_findings(messages))
    ranges_rows += [r.asDict() for r in phys_offset_ranges(messages).collect()]
    range_schema = "source string, start long, stop long"
    ranges = spark.createDataFrame(ranges_rows, range_schema)
    breaks = queue_offset_breaks(messages, ranges).persist()
    findings.append(queue_offset_findings(breaks))
    ranges_rows += [
        {"source": r["source"], "start": r["commitlog_offset"], "stop": r["commitlog_offset"] + r["total_size"]}
        for r in breaks.select("source", "commitlog_offset", "total_size").collect()
    ]
    breaks.unpersist()
    ranges = spark.createDataFrame(ranges_rows, range_schema)
    bounds_rows = _rocketmq_bounds(inputs, end_rows)
    result.facts["rocketmq"] = [{"source": s, "commitlog": {"log_start_offset": lo, "log_end_offset": hi}} for s, lo, hi in bounds_rows]
    bounds = spark.createDataFrame(bounds_rows, "source string, commitlog_min long, commitlog_end long")

    with steps.reading(read_consumequeue) as progress:
        units = read_family(spark, "rocketmq_consumequeue", inputs, cfg, **progress)
        units = _write(units, f"{out}/queue_units", ("source", "topic"))
    result.datasets["queue_units"] = f"{out}/queue_units"
    findings.append(consumequeue_findings(units, messages, bounds, ranges))

    with steps.reading(read_index) as progress:
        entries = read_family(spark, "rocketmq_index", inputs, cfg, **progress)
        entries = _write(entries, f"{out}/index_entries", ("source",))
    result.datasets["index_entries"] = f"{out}/index_entries"
    if cfg.topics:
        # an IndexFile indexes every topic: its entries can only be checked against all records
        result.facts["index_checked"] = False
    else:
        findings.append(index_findings(entries, messages, bounds, ranges))

    steps.stage(count)
    result.rows["messages"] = messages.count()
    result.rows["queue_units"] = units.count()
    result.rows["index_entries"] = entries.count()
    result.topics += [r.asDict() for r in topic_stats(messages, "rocketmq", "store_timestamp", "total_size", "queue_id").collect()]
    dups = uniq_key_duplicates(messages)
    dups = dups.persist()
    keys = dups.count()
    total = dups.agg(F.sum("copies")).first()
    assert total is not None  # an aggregate without grouping has exactly one row
    result.duplicates = {
        "keys": keys,
        "copies": int(total[0] or 0),
        "examples": [r.asDict() for r in dups.orderBy(F.desc("copies"), "topic", "uniq_key").limit(cfg.max_duplicates).collect()],
    }
    dups.unpersist()
    return findings


def run_framed(spark: SparkSession, cfg: ScanConfig, layout: str, inputs: list[ScanInput], result: ScanResult, steps: _Steps) -> list[DataFrame]:
    out = cfg.out.rstrip("/")
    fmt = {"kafka": "kafka_log", "jafka": "jafka_log", "metaq": "metaq_log"}[layout]
    name = DATASETS[layout][0]
    read_segments, check = LAYOUT_STAGES[layout]
    position = "batch_position" if layout == "kafka" else "position"
    with steps.reading(read_segments) as progress:
        raw = read_family(spark, fmt, inputs, cfg, withProblems=True, withBody=cfg.with_body, **progress)
        raw = _stage(raw.withColumnRenamed(position, "position"), f"{out}/_staging/{name}")
    steps.stage(check)
    ends = file_ends(raw)
    end_rows = [r.asDict() for r in ends.collect()]
    ends_df = spark.createDataFrame(end_rows, "source string, file string, end_position long") if end_rows else ends
    problem_cols = [c for c, _, _ in src.PROBLEM_COLUMNS if c not in src.RECORD_PROBLEM_COLUMNS]
    records = _write(records_before_end(raw, ends_df).drop(*problem_cols).withColumnRenamed("position", position), f"{out}/{name}", ("source", "topic"))
    problems = problem_findings(raw, ends_df)
    problem_rows = problems.collect()
    result.datasets[name] = f"{out}/{name}"
    result.rows[name] = records.count()
    findings = [spark.createDataFrame(problem_rows, problems.schema)] if problem_rows else []
    if layout == "kafka":
        batches = kafka_batches(records).persist()
        findings.append(kafka_offset_findings(batches))
        result.kafka_offsets += [r.asDict() for r in kafka_partition_offsets(batches).orderBy("source", "topic", "partition").collect()]
        result.topics += [r.asDict() for r in topic_stats(records, layout, "timestamp", "value_size", "partition").collect()]
        batches.unpersist()
    else:
        size = "payload_size"
        result.topics += [r.asDict() for r in topic_stats(records, layout, None, size, "partition").collect()]
    return findings


def run(spark: SparkSession, cfg: ScanConfig, progress: Progress | None = None) -> ScanResult:
    """Ingest every input into Parquet under ``cfg.out``, compute the integrity findings, write
    them as the ``findings`` dataset and return everything the report shows.  ``progress`` hears
    of each stage (``stage_names(cfg)``) and, on ``local`` masters, of the store files read."""
    steps = _Steps(spark, progress)
    try:
        return _run(spark, cfg, steps)
    finally:
        steps.close()


def _run(spark: SparkSession, cfg: ScanConfig, steps: _Steps) -> ScanResult:
    result = ScanResult()
    findings: list[DataFrame] = []
    for layout in LAYOUTS:
        inputs = [i for i in cfg.inputs if i.layout == layout]
        if not inputs:
            continue
        if layout == "rocketmq":
            findings += run_rocketmq(spark, cfg, inputs, result, steps)
        else:
            findings += run_framed(spark, cfg, layout, inputs, result, steps)
    steps.stage(FINAL_STAGE)
    _delete(spark, f"{cfg.out.rstrip('/')}/_staging")
    all_findings = _union(findings)
    path = f"{cfg.out.rstrip('/')}/findings"
    schema = "source string, code string, path string, position long, length long, message string, severity string"
    if all_findings is None:
        all_findings = spark.createDataFrame([], schema)
    # One file of findings, but repartition (a shuffle) rather than coalesce: coalesce(1) would
    # run the integrity joins above it in a single task (bench/spark_scan_stages.py).
    present = set(all_findings.columns)
    all_findings = all_findings.select(*[F.col(c) if c in present else F.lit(None).cast("string").alias(c) for c in FINDING_COLUMNS]).repartition(1)
    written = _write(all_findings, path, ())
    result.datasets["findings"] = path
    rows = written.orderBy("source", "path", "position", "code").collect()
    result.findings = [r.asDict() for r in rows]
    result.topics.sort(key=lambda t: (t["source"], t["topic"] or ""))
    return result


def write_text(path: str, text: str) -> None:
    """Write a small text file (the JSON report) to a local path or a pyarrow URI."""
    if fs.is_uri(path):
        from pyarrow import fs as pafs

        filesystem, inner = pafs.FileSystem.from_uri(path)
        with filesystem.open_output_stream(inner) as stream:
            stream.write(text.encode("utf-8"))
        return
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def to_json(doc: JsonDoc) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"
