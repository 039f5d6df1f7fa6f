"""Finding codes of the RocketMQ checks (merged into ``mqtool.findings.CODES``).

Families: ``files`` (segment names, sizes, continuity, links), ``commitlog`` (what
``CommitLog.recoverNormally``/``recoverAbnormally`` check record by record, and what
``checkMessageAndReturnSize`` would refuse), ``consumequeue`` (``ConsumeQueue`` units against the
CommitLog), ``index`` (``IndexFile`` header, slots and entry chains against the CommitLog),
``checkpoint`` (``StoreCheckpoint``, the ``abort`` file), ``config`` (the JSON files the
broker loads at start, consumer offsets against the queues) and ``timer`` (the 5.x timer store:
``TimerWheel`` slots, ``TimerLog`` units and the records they point at, ``TimerCheckpoint``).
"""

from __future__ import annotations

from mqtool.findings.base import CodeInfo, Severity

E, W, I = Severity.error, Severity.warning, Severity.info  # noqa: E741 (I: info, as in the tables)

#: What each modelled broker does with a record its recovery refuses (``checkMessageAndReturnSize``
#: with ``checkCRCOnRecover``): where the recovery reads depends on the version
#: (``store.model.rocketmq_broker``), and a refused record ends the valid data only there.
REFUSED_RECORD: tuple[tuple[str, str], ...] = (
    (
        "4.x-5.3.1",
        "after a clean shutdown CommitLog.recoverNormally reads the last three CommitLog files: a record it refuses there ends the "
        "valid data, and truncateDirtyFiles drops it and everything after it; in an older file it is never read on restart and is "
        "served as it is. After a crash (abort present) recoverAbnormally reads from the file of the checkpoint's earliest "
        "timestamp: a refused record from there on ends the valid data",
    ),
    (
        "5.3.2+",
        "after a clean shutdown recoverNormally reads from the newest CommitLog file at or below the ConsumeQueues' highest "
        "CommitLog offset (apache/rocketmq #8915): a record it refuses from there on ends the valid data and everything after it "
        "is dropped; in an older file it is never read on restart and is served as it is (a bad BODYCRC included). After a crash: "
        "as 4.x-5.3.1",
    ),
)

#: Every finding code: default severity, check family, one-line meaning.
CODES: dict[str, CodeInfo] = {
    # files
    "RMQ-FILE-NAME": CodeInfo(W, "files", "a file whose name is not a 20-digit offset in a segment directory"),
    "RMQ-FILE-SIZE": CodeInfo(E, "files", "a segment file whose size differs from the configured file size"),
    "RMQ-FILE-ZERO-LENGTH": CodeInfo(
        W, "files", "a zero-length segment file (4.x refuses to start; 5.1.3+ deletes a zero-length last file); an error before the last file"
    ),
    "RMQ-FILE-GAP": CodeInfo(E, "files", "consecutive segment names differ by more than the file size (a missing file)"),
    "RMQ-FILE-OVERLAP": CodeInfo(E, "files", "consecutive segment names differ by less than the file size"),
    "RMQ-FILE-ALIGN": CodeInfo(W, "files", "a segment name that is not a multiple of the file size"),
    "RMQ-FILE-UNREADABLE": CodeInfo(
        E,
        "files",
        "a file that cannot be read (permissions, I/O error, not a regular file: a FIFO or device is never opened)",
        ends="unreadable",
    ),
    "RMQ-FILE-LINK": CodeInfo(
        W, "files", "a segment name, IndexFile or topic/queue directory that is a symbolic link: not followed (they must be regular files and directories)"
    ),
    # commitlog
    "RMQ-CL-MAGIC": CodeInfo(
        E,
        "commitlog",
        "a record header whose magic code is not a message or BLANK magic (checkMessageAndReturnSize refuses it: the broker's recovery "
        "drops it and all after it); a warning at the valid end of the newest file when no record follows and nothing points there: "
        "bytes its next append overwrites",
        broker=REFUSED_RECORD,
    ),
    "RMQ-CL-SIZE": CodeInfo(
        E,
        "commitlog",
        "TOTALSIZE out of bounds or not equal to the size computed from the record's lengths (the broker's recovery drops the record "
        "and all after it); a warning where RMQ-CL-MAGIC's is",
        broker=REFUSED_RECORD,
    ),
    "RMQ-CL-TRUNCATED": CodeInfo(
        E,
        "commitlog",
        "a record field reaches past the record or the file (the broker's recovery drops it and all after it); a warning where RMQ-CL-MAGIC's is",
        broker=REFUSED_RECORD,
    ),
    "RMQ-CL-BODY-CRC": CodeInfo(E, "commitlog", "BODYCRC does not match the masked CRC-32 of the body", broker=REFUSED_RECORD),
    "RMQ-CL-PROP-CRC": CodeInfo(E, "commitlog", "the __CRC32# whole-record CRC property does not match"),
    "RMQ-CL-PROPERTIES": CodeInfo(W, "commitlog", "malformed property segments the broker silently drops"),
    "RMQ-CL-ENCODING": CodeInfo(E, "commitlog", "topic or properties are not valid UTF-8"),
    "RMQ-CL-PHYS-OFFSET": CodeInfo(E, "commitlog", "PHYSICALOFFSET differs from the record's real position (stale or misplaced data)"),
    "RMQ-CL-QUEUE-OFFSET": CodeInfo(E, "commitlog", "QUEUEOFFSET of a topic/queue does not increase by one record after record"),
    "RMQ-CL-BLANK": CodeInfo(E, "commitlog", "an END_OF_FILE (BLANK) record whose TOTALSIZE is not the rest of the file"),
    "RMQ-CL-AFTER-BLANK": CodeInfo(I, "commitlog", "bytes after the END_OF_FILE header are not zero (4.x fills them from its reused encode buffer: harmless)"),
    "RMQ-CL-NO-BLANK": CodeInfo(E, "commitlog", "a file before the last one whose records stop without an END_OF_FILE record"),
    "RMQ-CL-TORN-TAIL": CodeInfo(W, "commitlog", "the last file ends in a partially written record (a crash while writing)", ends="torn"),
    "RMQ-CL-GARBAGE": CodeInfo(
        E,
        "commitlog",
        "non-zero bytes after the end of valid data in the last file: an error when records decode in them or a ConsumeQueue unit or "
        "IndexFile points there (the broker's recovery stops before them and drops them); a warning otherwise (not a record: its next "
        "append overwrites them, nothing is lost)",
        ends="garbage",
    ),
    "RMQ-CL-UNREADABLE-REGION": CodeInfo(
        E, "commitlog", "bytes between a broken record and the next valid record (the broker drops them); a warning with its broken record's", ends="unreadable"
    ),
    "RMQ-CL-VALID-END": CodeInfo(I, "commitlog", "where valid data ends in the CommitLog (the first broken record of the last file, where recover stops)"),
    "RMQ-CL-IN-PROGRESS": CodeInfo(
        I,
        "commitlog",
        "the tail is being written (a writer holds the lock and more valid data appeared while validating)",
        ends="in-progress",
    ),
    # consumequeue
    "RMQ-CQ-PAST-END": CodeInfo(E, "consumequeue", "a unit pointing at or past the end of valid CommitLog data"),
    "RMQ-CQ-EXPIRED": CodeInfo(I, "consumequeue", "units pointing below the CommitLog's first file (expired by retention)"),
    "RMQ-CQ-NOT-A-RECORD": CodeInfo(E, "consumequeue", "a unit pointing at a commitlog offset where no record starts"),
    "RMQ-CQ-MISMATCH": CodeInfo(E, "consumequeue", "the record a unit points at has another size, topic, queue id or queue offset"),
    "RMQ-CQ-TAGS": CodeInfo(E, "consumequeue", "tagsCode differs from the hash of TAGS (or the delivery time of a delayed message)"),
    "RMQ-CQ-LAG": CodeInfo(W, "consumequeue", "the ConsumeQueue ends before the CommitLog's records of that queue (dispatch behind)"),
    "RMQ-CQ-INVALID-UNIT": CodeInfo(E, "consumequeue", "a unit that is neither valid nor zero (the broker ends the queue there)"),
    "RMQ-CQ-PARTIAL-UNIT": CodeInfo(W, "consumequeue", "trailing bytes shorter than a 20-byte unit"),
    "RMQ-CQ-AFTER-END": CodeInfo(E, "consumequeue", "units after the end of a queue (after an invalid or zero unit)"),
    "RMQ-CQ-MISSING-QUEUE": CodeInfo(W, "consumequeue", "CommitLog records of a topic/queue that has no ConsumeQueue directory"),
    "RMQ-CQ-MISSING-HEAD": CodeInfo(
        E,
        "consumequeue",
        "a queue's first ConsumeQueue file starts after the first queue offset the CommitLog holds of it (its head files are missing): "
        "the broker's min offset is the first file's, consumers never reach the records before it; recover rebuilds the files",
    ),
    # the RocksDB ConsumeQueue (5.2+, storeType=defaultRocksDB): RocksDBConsumeQueueTable, RocksDBConsumeQueueOffsetTable
    "RMQ-CQ-ROCKSDB-ENTRY": CodeInfo(E, "consumequeue", "a RocksDB ConsumeQueue key or value not in RocketMQ's layout (the broker skips it as malformed)"),
    "RMQ-CQ-ROCKSDB-GAP": CodeInfo(E, "consumequeue", "queue offsets missing between a queue's RocksDB units (the broker's rangeQuery stops at the first missing key)"),
    "RMQ-CQ-ROCKSDB-OFFSET": CodeInfo(E, "consumequeue", "a RocksDB offset-table max entry that is not the queue's last unit (or is missing), or a min entry above it"),
    "RMQ-CQ-ROCKSDB-CHECKPOINT": CodeInfo(W, "consumequeue", "the RocksDB ConsumeQueue's dispatch checkpoint (CHECKPOINT_TOPIC) past the CommitLog's valid end"),
    "RMQ-CQ-ROCKSDB-DIVERGE": CodeInfo(
        W, "consumequeue", "units that the file ConsumeQueue holds and the RocksDB ConsumeQueue lacks, or the other way round, or that differ (double write)"
    ),
    # index
    "RMQ-IDX-GEOMETRY": CodeInfo(E, "index", "an IndexFile whose size fits no slot/entry geometry, or a header that does not fit it"),
    "RMQ-IDX-HEADER": CodeInfo(E, "index", "header counts or ranges inconsistent with the entries"),
    "RMQ-IDX-CHAIN": CodeInfo(E, "index", "a hash-slot chain that loops or links outside the written entries"),
    "RMQ-IDX-SLOT": CodeInfo(E, "index", "an entry whose key hash belongs to another slot than the chain holding it"),
    "RMQ-IDX-ENTRY": CodeInfo(E, "index", "an entry pointing at no record, or at a record without a key of that hash"),
    "RMQ-IDX-EXPIRED": CodeInfo(I, "index", "entries pointing below the CommitLog's first file (expired by retention)"),
    "RMQ-IDX-IN-PROGRESS": CodeInfo(I, "index", "the IndexFile a live writer is filling: header and chains not checked", ends="in-progress"),
    "RMQ-IDX-PAST-END": CodeInfo(E, "index", "an entry pointing at or past the end of valid CommitLog data"),
    "RMQ-IDX-MISSING": CodeInfo(
        W,
        "index",
        "records with keys (UNIQ_KEY, KEYS) that no IndexFile covers (index/ absent, a file deleted, or the index ends early): a query "
        "by key misses them and the broker re-indexes none on a normal start; recover rebuilds the IndexFiles",
    ),
    # timer (the 5.x timer store: timerwheel, timerlog/, config/timercheck)
    "RMQ-TIMER-WHEEL-SIZE": CodeInfo(
        E, "timer", "a timerwheel file whose size is not slotsTotal * 2 * 32 bytes (the broker refuses to start), or missing beside TimerLog units"
    ),
    "RMQ-TIMER-SLOT": CodeInfo(E, "timer", "a used wheel slot holding the time of another slot, firstPos/lastPos out of order, or a magic that is not 0"),
    "RMQ-TIMER-SLOT-CHAIN": CodeInfo(
        E, "timer", "a slot's chain (lastPos back through prevPos to firstPos) reaches no unit, a unit of another delivery time, or never reaches firstPos"
    ),
    "RMQ-TIMER-SLOT-PAST-END": CodeInfo(E, "timer", "a slot pointing at or past the TimerLog's valid end (recovery rescans from there)"),
    "RMQ-TIMER-SLOT-NUM": CodeInfo(I, "timer", "a slot's num differs from the units of its chain (statistics only; recovery does not revise it)"),
    "RMQ-TIMER-LOG-UNIT": CodeInfo(
        E, "timer", "a TimerLog unit whose size is not 52 or whose magic fails isMagicOK, or cut by the end of its file (recovery truncates the TimerLog there)"
    ),
    "RMQ-TIMER-LOG-BLANK": CodeInfo(E, "timer", "a TimerLog BLANK record whose size is not the rest of its file"),
    "RMQ-TIMER-LOG-NO-BLANK": CodeInfo(E, "timer", "a TimerLog file before the last one whose units stop without a BLANK record (recovery deletes the later files)"),
    "RMQ-TIMER-LOG-GARBAGE": CodeInfo(E, "timer", "non-zero bytes after the valid end of the last TimerLog file", ends="garbage"),
    "RMQ-TIMER-UNIT-PREV": CodeInfo(E, "timer", "a unit whose prevPos is not the previous unit of its slot"),
    "RMQ-TIMER-UNIT-ORPHAN": CodeInfo(E, "timer", "a unit due after the checkpoint's read time that its wheel slot does not reach: it will never be delivered"),
    "RMQ-TIMER-UNIT-FIELD": CodeInfo(
        W, "timer", "a unit field the broker always writes one way holds another value (reserved not 0, magic without MAGIC_DEFAULT or with bit 8)"
    ),
    "RMQ-TIMER-PAST-END": CodeInfo(E, "timer", "a TimerLog unit pointing at or past the end of valid CommitLog data (a cut CommitLog: timer dequeue gets stuck)"),
    "RMQ-TIMER-EXPIRED": CodeInfo(I, "timer", "TimerLog units pointing below the CommitLog's first file (expired by retention)"),
    "RMQ-TIMER-NOT-A-RECORD": CodeInfo(E, "timer", "a TimerLog unit pointing at a commitlog offset where no record starts"),
    "RMQ-TIMER-MISMATCH": CodeInfo(
        E, "timer", "the record a TimerLog unit points at is not a timer message, or has another size, real-topic hash, delivery time or delete mark"
    ),
    "RMQ-TIMER-CHECKPOINT": CodeInfo(W, "timer", "timercheck positions past the TimerLog's valid end or the timer queue's end, or out of order"),
    "RMQ-TIMER-CHECKPOINT-FORMAT": CodeInfo(E, "timer", "the timercheck file is shorter than its four longs or unreadable"),
    "RMQ-COMPACTION-PAIR": CodeInfo(
        E, "compaction", "a compaction log and its sparse consume queue whose directories or file names differ: the broker does not load the queue"
    ),
    "RMQ-COMPACTION-IN-PROGRESS": CodeInfo(W, "compaction", "a compacting/ or replicating/ folder left by a compaction or a pull from the master that did not finish"),
    "RMQ-COMPACTION-RECORD": CodeInfo(E, "compaction", "a compaction-log record the broker's decoder refuses, cut by the end of its file, or a BLANK of the wrong size"),
    "RMQ-COMPACTION-RECORD-FIELD": CodeInfo(
        E, "compaction", "a compaction-log record whose PHYSICALOFFSET is not its compaction-log offset, of another topic or queue, or whose QUEUEOFFSET does not grow"
    ),
    "RMQ-COMPACTION-GARBAGE": CodeInfo(E, "compaction", "non-zero bytes after the valid data of a compaction-log file", ends="garbage"),
    "RMQ-COMPACTION-CQ-UNIT": CodeInfo(E, "compaction", "a sparse consume queue unit recovery stops at that is neither the end unit nor zeros"),
    "RMQ-COMPACTION-CQ-ORDER": CodeInfo(E, "compaction", "a sparse consume queue unit whose offset or msgBaseOffset does not grow"),
    "RMQ-COMPACTION-CQ-MISMATCH": CodeInfo(E, "compaction", "a sparse consume queue unit pointing where no record starts, or whose fields or file are not its record's"),
    "RMQ-COMPACTION-UNINDEXED": CodeInfo(
        W, "compaction", "compaction-log records no sparse consume queue unit points at (cut at load after the last unit, never served between units)"
    ),
    "RMQ-COMPACTION-POSITION": CodeInfo(W, "compaction", "a position-checkpoint that does not parse, or a queue compacted past the last offset its log holds"),
    "RMQ-TIMER-METRICS": CodeInfo(
        I, "timer", "a timermetrics count that is not the TimerLog's units due for its topic (statistics only; the broker revises it from the TimerLog)"
    ),
    # checkpoint / shutdown / config
    "RMQ-ABORT": CodeInfo(W, "checkpoint", "the abort file is present: the last shutdown was not clean"),
    "RMQ-CHECKPOINT": CodeInfo(W, "checkpoint", "checkpoint timestamps later than the newest record they describe"),
    "RMQ-CHECKPOINT-FORMAT": CodeInfo(E, "checkpoint", "the checkpoint file is missing bytes or unreadable"),
    "RMQ-CONFIG-PARSE": CodeInfo(E, "config", "a config JSON file (or its .bak) that cannot be parsed or has the wrong shape; a warning for a .bak whose file parses"),
    "RMQ-CONSUMER-OFFSET": CodeInfo(W, "config", "a consumer offset beyond the queue's max offset (consumer ahead of the data)"),
    "RMQ-CONSUMER-BEHIND": CodeInfo(I, "config", "a consumer offset below the queue's min offset (messages expired unconsumed)"),
    "RMQ-CONSUMER-UNKNOWN-QUEUE": CodeInfo(I, "config", "a consumer offset for a queue that has no ConsumeQueue"),
}
