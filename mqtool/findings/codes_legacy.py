"""Finding codes of the Jafka and MetaQ checks (merged into ``mqtool.findings.CODES``)."""

from __future__ import annotations

from mqtool.findings.base import CodeInfo, Severity

E, W, I = Severity.error, Severity.warning, Severity.info  # noqa: E741 (I: info, as in the tables)

CODES: dict[str, CodeInfo] = {
    # --- Jafka: files ---
    "JAFKA-DIR-NAME": CodeInfo(E, "files", "a data-dir sub-directory that is not <topic>-<int partition>: Jafka stops loading at start-up"),
    "JAFKA-FILE-NAME": CodeInfo(E, "files", "a .jafka file whose name is not a number: Jafka fails to parse its start offset at start-up"),
    "JAFKA-UNEXPECTED-FILE": CodeInfo(W, "files", "an entry Jafka ignores (not a .jafka segment; a regular file in the data dir)"),
    "JAFKA-ZERO-LENGTH": CodeInfo(W, "files", "a zero-length segment before the last one"),
    "JAFKA-SEGMENT-GAP": CodeInfo(E, "files", "a segment starts after the previous one's start + size (missing bytes): the partition does not load"),
    "JAFKA-SEGMENT-OVERLAP": CodeInfo(E, "files", "a segment starts before the previous one's start + size: the partition does not load"),
    "JAFKA-FILE-LINK": CodeInfo(W, "files", "a symbolic link in the data dir or a partition directory: not followed (Jafka would follow it)"),
    "JAFKA-NO-SEGMENTS": CodeInfo(W, "files", "a partition directory without segments: Jafka restarts it at offset 0"),
    "JAFKA-UNREADABLE": CodeInfo(E, "files", "a file that cannot be read (permissions, I/O error, a FIFO or device named like a segment)", ends="unreadable"),
    # --- Jafka: shutdown state ---
    "JAFKA-UNCLEAN-SHUTDOWN": CodeInfo(
        W, "checkpoint", "no .jafka_cleanshutdown (Kafka 0.7: .kafka_cleanshutdown): the broker runs or did not stop cleanly; recovery runs on each last segment"
    ),
    # --- Jafka: log content ---
    "JAFKA-SIZE": CodeInfo(
        E,
        "log",
        "a LENGTH below the 6-byte header, negative, larger than mqtool reads (64 MiB), or running past the end of the file over valid messages",
    ),
    "JAFKA-MAGIC": CodeInfo(
        E,
        "log",
        "a magic byte other than 1, checked before the CRC as Jafka does (magic 0 is Kafka 0.7's first format, which Jafka cannot read; "
        "in a Kafka 0.7 log dir: other than 0 or 1)",
    ),
    "JAFKA-CRC": CodeInfo(E, "log", "the stored CRC differs from the CRC-32 of the payload"),
    "JAFKA-CODEC": CodeInfo(E, "log", "compression codec 2 (snappy, declared but not implemented by Jafka; Kafka 0.7 reads it) or 3 (unknown)"),
    "JAFKA-ATTRIBUTE": CodeInfo(W, "log", "attribute bits 2-7 set (Jafka writes them 0)"),
    "JAFKA-WRAPPER": CodeInfo(E, "log", "a gzip (Kafka 0.7: or snappy) wrapper that does not decompress to a complete set of valid inner messages"),
    "JAFKA-TORN-TAIL": CodeInfo(
        W,
        "log",
        "the last segment ends in a partially written message (then zeros or the end, no valid message in the bytes its LENGTH claims): recovery truncates it",
        ends="torn",
    ),
    "JAFKA-ZERO-TAIL": CodeInfo(W, "log", "zero bytes after the last message of the last segment: recovery truncates them", ends="zeros"),
    "JAFKA-GARBAGE": CodeInfo(E, "log", "non-zero bytes after the end of valid data that are not a torn message", ends="garbage"),
    "JAFKA-SEGMENT-TAIL": CodeInfo(E, "log", "a segment before the last ends in zeros or a partial message (no valid message after it): Jafka never repairs it"),
    "JAFKA-UNREADABLE-REGION": CodeInfo(E, "log", "bytes between a broken message and the next valid message (or the end)", ends="unreadable"),
    "JAFKA-RECOVERY-LOSS": CodeInfo(E, "log", "valid messages after the point where recovery truncates the last segment (they will be lost)"),
    "JAFKA-RECOVERY-CRASH": CodeInfo(
        E, "log", "recovery meets a magic byte other than 1 (Kafka 0.7: other than 0 or 1) and throws UnknownMagicByteException: the broker does not start"
    ),
    "JAFKA-UNRECOVERED": CodeInfo(
        E, "log", ".jafka_cleanshutdown (Kafka 0.7: .kafka_cleanshutdown) is present but the last segment does not end cleanly: recovery is skipped"
    ),
    "JAFKA-VALID-END": CodeInfo(I, "log", "where the valid data of a partition ends (its log end offset)"),
    # --- MetaQ: files ---
    "METAQ-DIR-NAME": CodeInfo(E, "files", "a data-dir sub-directory <topic>-<x> whose x is not a canonical int: the broker fails or reads another directory"),
    "METAQ-DIR-IGNORED": CodeInfo(W, "files", "a data-dir sub-directory without '-' (other than transactions/): MetaQ ignores it"),
    "METAQ-FILE-NAME": CodeInfo(E, "files", "a .meta file whose name is not a number: MetaQ fails to parse its start offset at start-up"),
    "METAQ-UNEXPECTED-FILE": CodeInfo(W, "files", "an entry MetaQ ignores (not a segment or archive; a regular file in the data dir)"),
    "METAQ-ZERO-LENGTH": CodeInfo(W, "files", "a zero-length segment before the last one, or a zero-length archive"),
    "METAQ-SEGMENT-GAP": CodeInfo(E, "files", "a live segment starts after the previous one's start + size: the partition does not load"),
    "METAQ-SEGMENT-OVERLAP": CodeInfo(E, "files", "a live segment starts before the previous one's start + size: the partition does not load"),
    "METAQ-ARCHIVE-GAP": CodeInfo(W, "files", "archives that do not join each other or the first live segment (archived history has a hole or overlap)"),
    "METAQ-ARCHIVE-DUPLICATE": CodeInfo(W, "files", "an archive with the same start offset as a live segment or another archive"),
    "METAQ-ZIP": CodeInfo(E, "files", "a .meta.zip that is not a readable zip with exactly one DEFLATE/stored entry"),
    "METAQ-ZIP-NAME": CodeInfo(E, "files", "a .meta.zip whose entry is not named like the segment it archives (NNN.meta)"),
    "METAQ-ZIP-CRC": CodeInfo(E, "files", "a .meta.zip entry whose bytes do not match its CRC-32"),
    "METAQ-FILE-LINK": CodeInfo(W, "files", "a symbolic link in the data dir or a partition directory: not followed (MetaQ would follow it)"),
    "METAQ-NO-SEGMENTS": CodeInfo(W, "files", "a partition without a live .meta segment: MetaQ creates one at offsetIfCreate (offsets restart)"),
    "METAQ-UNREADABLE": CodeInfo(E, "files", "a file that cannot be read (permissions, I/O error, a FIFO or device named like a segment)", ends="unreadable"),
    # --- MetaQ: log content ---
    "METAQ-SIZE": CodeInfo(E, "log", "a negative msgLen, one larger than mqtool reads (64 MiB), or one running past the end of the file over valid messages"),
    "METAQ-CRC": CodeInfo(E, "log", "the stored checksum differs from CRC-32(data) & 0x7FFFFFFF"),
    "METAQ-ATTRIBUTE": CodeInfo(E, "log", "flag bit 0 set but the attribute block (attrLen, attribute) does not fit the data: consumers throw"),
    "METAQ-ATTRIBUTE-UTF8": CodeInfo(W, "log", "an attribute that is not valid UTF-8 (consumers see U+FFFD)"),
    "METAQ-PAYLOAD-SIZE": CodeInfo(W, "log", "a payload larger than the client's 2 MiB read limit (consumers reject it)"),
    "METAQ-TORN-TAIL": CodeInfo(
        W,
        "log",
        "the last segment ends in a partially written message (then zeros or the end, no valid message in the bytes its msgLen claims): recovery truncates it",
        ends="torn",
    ),
    "METAQ-ZERO-TAIL": CodeInfo(W, "log", "zero bytes after the last message of the last segment: recovery keeps them as empty messages (id 0)", ends="zeros"),
    "METAQ-GARBAGE": CodeInfo(E, "log", "non-zero bytes after the end of valid data that are not a torn message", ends="garbage"),
    "METAQ-SEGMENT-TAIL": CodeInfo(E, "log", "a segment before the last (or an archive) ends in zeros or a partial message (no valid message after it)"),
    "METAQ-UNREADABLE-REGION": CodeInfo(E, "log", "bytes between a broken message and the next valid message (or the end)", ends="unreadable"),
    "METAQ-RECOVERY-LOSS": CodeInfo(E, "log", "valid messages after the point where recovery truncates the last segment (they will be lost)"),
    "METAQ-VALID-END": CodeInfo(I, "log", "where the valid data of a partition ends, and what recovery keeps"),
}
