"""Finding codes of the Kafka checks (merged into ``mqtool.findings.CODES``).

Families: ``files`` (names, leftovers, unreadable files), ``log`` (what ``LogSegment.recover``
checks -- framing, sizes, CRCs, end-transaction markers -- and, with ``--deep``, every record),
``offsets`` (offsets inside and across segments), ``index`` (``.index``, ``.timeindex``,
``.txnindex`` against the log) and ``checkpoint`` (checkpoint files, leader epochs, producer
snapshots, shutdown state).  A code whose severity depends on where the damage is (the active
segment, which recovery rebuilds, or an older one, which it does not) carries its usual
severity here and the finding overrides it.
"""

from __future__ import annotations

from mqtool.findings.base import CodeInfo, Severity

E, W, I = Severity.error, Severity.warning, Severity.info  # noqa: E741 (I: info, as in the tables)

CODES: dict[str, CodeInfo] = {
    # files
    "KAFKA-FILE-UNREADABLE": CodeInfo(E, "files", "a file that cannot be read (permissions, I/O error, not a regular file)", ends="unreadable"),
    "KAFKA-FILE-NAME": CodeInfo(W, "files", "a file the broker does not know in a log dir or partition dir"),
    "KAFKA-FILE-LINK": CodeInfo(W, "files", "a symbolic link in the log dir or a partition directory: not followed (Kafka would follow it)"),
    "KAFKA-DIR-NAME": CodeInfo(
        E,
        "files",
        "a directory in a log dir that is not topic-partition[.uniqueId-delete|-future|-stray], "
        "or a second directory of one partition (orders-1 and orders-01) (the broker takes the log dir offline)",
    ),
    "KAFKA-DIR-STATE": CodeInfo(I, "files", "a partition dir being deleted (-delete), moved (-future) or a KRaft stray replica (-stray)"),
    "KAFKA-FILE-ORPHAN-INDEX": CodeInfo(W, "files", "an .index/.timeindex/.txnindex without its .log (deleted by the broker at load)"),
    "KAFKA-FILE-NO-INDEX": CodeInfo(
        I,
        "files",
        "a non-empty .log without .index (the broker recovers the segment at load) or .timeindex (created empty, rebuilt when the segment is recovered)",
    ),
    "KAFKA-FILE-LEFTOVER": CodeInfo(W, "files", "a .deleted, .cleaned, .swap or .tmp file left by an interrupted operation (acted on at the next load)"),
    "KAFKA-FILE-TOO-LARGE": CodeInfo(E, "files", "a .log larger than 2^31-1 bytes (the broker refuses to open it)"),
    "KAFKA-LOCK-HELD": CodeInfo(I, "files", "the log dir's .lock is held: a broker is running and the files may change while read"),
    # log (LogSegment.recover's checks; the deep ones only with --deep)
    "KAFKA-LOG-MAGIC": CodeInfo(E, "log", "an entry whose magic byte is not 0, 1 or 2"),
    "KAFKA-LOG-SIZE": CodeInfo(E, "log", "an entry size below the minimum (14; 61 for v2), or a message whose lengths disagree with its size"),
    "KAFKA-LOG-CRC": CodeInfo(E, "log", "a batch CRC-32C (v2) or message CRC-32 (v0/v1) that does not match"),
    "KAFKA-LOG-CONTROL": CodeInfo(E, "log", "a control batch with a producer id whose end-transaction marker cannot be read (recovery fails on it)"),
    "KAFKA-LOG-TORN-TAIL": CodeInfo(W, "log", "a segment ending in a partially written entry (error when it is not the last segment)", ends="torn"),
    "KAFKA-LOG-IN-PROGRESS": CodeInfo(I, "log", "the active segment of a running broker (.lock held) ends in an entry being written", ends="in-progress"),
    "KAFKA-LOG-ZERO-TAIL": CodeInfo(W, "log", "zero bytes after the last entry (a pre-allocated segment; error when it is not the last segment)", ends="zeros"),
    "KAFKA-LOG-GARBAGE": CodeInfo(E, "log", "bytes after a broken entry that do not start a valid entry", ends="garbage"),
    "KAFKA-LOG-MISSING": CodeInfo(
        E,
        "log",
        "a partition whose log ends (or has no segment) below the offset its recovery point, high watermark or producer snapshot vouches for: data it held is gone",
        ends="missing",
    ),
    "KAFKA-LOG-VALID-END": CodeInfo(I, "log", "where valid data ends in the last segment (the log end offset)"),
    "KAFKA-LOG-EPOCH": CodeInfo(E, "log", "a partition leader epoch lower than an earlier batch's"),
    "KAFKA-LOG-RECORDS": CodeInfo(E, "log", "--deep: records that do not decode (varint framing, record sizes, count vs header, inner messages)"),
    "KAFKA-LOG-COMPRESSION": CodeInfo(E, "log", "--deep: a compressed batch or wrapper whose data does not decompress"),
    "KAFKA-LOG-RECORD-OFFSET": CodeInfo(E, "log", "--deep: record offsets not increasing inside a batch, or outside its header's range"),
    "KAFKA-LOG-TIMESTAMP": CodeInfo(W, "log", "--deep: a CreateTime batch whose maxTimestamp is not its largest record timestamp"),
    "KAFKA-LOG-UNSUPPORTED": CodeInfo(W, "log", "--deep: a batch not checked (codec library not installed, or too large to decompress)"),
    # offsets
    "KAFKA-OFFSET-ORDER": CodeInfo(E, "offsets", "a batch whose offsets do not follow the previous batch's"),
    "KAFKA-OFFSET-RANGE": CodeInfo(E, "offsets", "a batch below its segment's base offset, or too far above it for a 32-bit relative offset"),
    "KAFKA-OFFSET-OVERLAP": CodeInfo(E, "offsets", "a segment whose base offset is not above the previous segment's last offset"),
    "KAFKA-OFFSET-GAP": CodeInfo(I, "offsets", "offsets missing between batches or segments (left by compaction)"),
    "KAFKA-SEGMENT-MISSING": CodeInfo(
        E,
        "offsets",
        "offsets missing between segments of a topic whose cleanup.policy is delete (a lost segment: the broker serves the next "
        "offset after the gap, consumers skip it); a warning when the policy is unknown (no KRaft metadata log stating it)",
    ),
    # index
    "KAFKA-INDEX-SIZE": CodeInfo(
        W,
        "index",
        "an .index or .timeindex whose size is not a multiple of its entry size: the broker (2.3.0+) reads its whole entries and "
        "ignores the rest, rebuilding it only when it recovers the segment (before 2.3.0: at load); kafka-dump-log --index-sanity-check throws",
    ),
    "KAFKA-INDEX-ORDER": CodeInfo(E, "index", "index entries not strictly increasing (or negative)"),
    "KAFKA-INDEX-ZERO-TAIL": CodeInfo(I, "index", "unused pre-allocated (zero) index slots (warning when not the last segment)", ends="zeros"),
    "KAFKA-INDEX-POSITION": CodeInfo(E, "index", "an .index entry whose position is not the start of a batch, or past the valid data"),
    "KAFKA-INDEX-OFFSET": CodeInfo(
        E,
        "index",
        "an .index entry whose offset is not in the batch at its position, nor the last offset of a later batch of the same append",
    ),
    "KAFKA-INDEX-MULTI-BATCH": CodeInfo(I, "index", ".index entries written by multi-batch appends (the last batch's offset at the first batch's position)"),
    "KAFKA-TIMEINDEX-ENTRY": CodeInfo(E, "index", "a .timeindex entry whose offset is in no batch, or whose timestamp is not that batch's max timestamp"),
    "KAFKA-TIMEINDEX-STALE": CodeInfo(I, "index", "a rolled segment whose last .timeindex entry is below its largest timestamp (time retention uses the entry)"),
    "KAFKA-TXNINDEX-ENTRY": CodeInfo(E, "index", "a .txnindex entry that is malformed or names no ABORT marker of its producer in the segment"),
    "KAFKA-TXNINDEX-MISSING": CodeInfo(E, "index", "an ABORT marker with no .txnindex entry (read_committed consumers would see aborted data)"),
    # checkpoint
    "KAFKA-CHECKPOINT-FORMAT": CodeInfo(E, "checkpoint", "a checkpoint, meta.properties, partition.metadata, quorum-state or clean-shutdown file that cannot be parsed"),
    "KAFKA-RECOVERY-POINT": CodeInfo(W, "checkpoint", "a recovery point beyond the log end offset (flushed data is missing)"),
    "KAFKA-HIGH-WATERMARK": CodeInfo(W, "checkpoint", "a high watermark beyond the log end offset (committed data is missing on this replica)"),
    "KAFKA-LOG-START-OFFSET": CodeInfo(E, "checkpoint", "a log start offset beyond the log end offset (the broker deletes every segment at load)"),
    "KAFKA-CLEANER-OFFSET": CodeInfo(I, "checkpoint", "a cleaner checkpoint outside [log start, log end] (the cleaner resets it)"),
    "KAFKA-CHECKPOINT-STALE": CodeInfo(I, "checkpoint", "checkpoint entries for partitions that are not in the log dir"),
    "KAFKA-CHECKPOINT-MISSING": CodeInfo(I, "checkpoint", "a partition with data missing from the recovery-point or replication checkpoint"),
    "KAFKA-LEADER-EPOCH": CodeInfo(W, "checkpoint", "leader-epoch-checkpoint entries not strictly increasing, or beyond the log end (the broker drops them at load)"),
    "KAFKA-LEADER-EPOCH-LOG": CodeInfo(W, "checkpoint", "batches whose leader epoch disagrees with leader-epoch-checkpoint"),
    "KAFKA-SNAPSHOT": CodeInfo(W, "checkpoint", "a producer snapshot that cannot be read (the broker deletes it and rebuilds from the log)"),
    "KAFKA-SNAPSHOT-OFFSET": CodeInfo(I, "checkpoint", "a producer snapshot beyond the log end offset (deleted at load)"),
    "KAFKA-UNCLEAN-SHUTDOWN": CodeInfo(W, "checkpoint", "no .kafka_cleanshutdown: the broker runs or crashed; recovery starts at the recovery points"),
}
