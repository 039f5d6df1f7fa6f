"""The rows each data source yields: their columns, as Spark DDL and as Arrow types.

Each family's columns are a list of ``(name, Spark DDL type, Arrow type)``: the Spark schema a
source declares (``ddl``) and the Arrow schema its readers build record batches in
(``arrow_schema``) come from the same list.  ``PROBLEM_COLUMNS`` are what ``withProblems`` adds:
the validate finding code, message and byte ranges of a broken record (``problem`` rows), a
file's end of data (``end`` rows) and the commitlog offsets a file cut short lacks (``damaged``
rows), and on record rows the code of the finding a record kept despite its damage carries.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

#: One column: its name, its Spark DDL type and its Arrow type.
Column = tuple[str, str, "pa.DataType"]

DEFAULT_SPLIT_SIZE = 128 << 20
#: ConsumeQueue units and IndexFile entries are 20 bytes each but cost a task about as much per
#: row as a CommitLog record does: their partitions are sized in rows, as many rows as a
#: ``splitSize`` of records of this many bytes (131,072 rows at the default 128 MiB), so they
#: spread over the cores like the CommitLog read (by bytes, 450,000 used entries of one IndexFile
#: were one partition, one task).
ROW_EQUIVALENT_BYTES = 1024
BATCH_ROWS = 4096

# --- schemas: (name, Spark DDL type, Arrow type) ---------------------------------------------

_STR, _LONG, _INT, _BOOL, _BIN = pa.string(), pa.int64(), pa.int32(), pa.bool_(), pa.binary()
_T = {"string": _STR, "long": _LONG, "int": _INT, "boolean": _BOOL, "binary": _BIN}


def _col(name: str, ddl: str, arrow: pa.DataType | None = None) -> Column:
    return name, ddl, arrow if arrow is not None else _T[ddl]


PROBLEM_COLUMNS = [
    _col("row_kind", "string"),
    _col("problem_code", "string"),
    _col("problem_message", "string"),
    _col("problem_length", "long"),
    _col("damaged_from", "long"),
    _col("damaged_to", "long"),
    _col("problem_at", "long"),  # where the walk met it (the record's start; ``position`` is the finding's)
    _col("problem_ignored", "string"),  # what the broker does with bytes it loses nothing by (``Problem.ignored``)
    _col("finding", "string"),  # record rows: the code of the finding a record kept despite its damage carries (last: ``_precise_row``)
]
#: the problem columns a record row keeps in the datasets ``mqtool scan`` writes
RECORD_PROBLEM_COLUMNS = ("finding",)

COMMITLOG_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("commitlog_offset", "long"),
    _col("total_size", "int"),
    _col("magic_code", "string"),
    _col("version", "int"),
    _col("body_crc", "long"),
    _col("queue_id", "int"),
    _col("flag", "int"),
    _col("queue_offset", "long"),
    _col("physical_offset", "long"),
    _col("sys_flag", "int"),
    _col("transaction_type", "string"),
    _col("compression", "string"),
    _col("born_timestamp", "long"),
    _col("born_host", "string"),
    _col("store_timestamp", "long"),
    _col("store_host", "string"),
    _col("reconsume_times", "int"),
    _col("prepared_transaction_offset", "long"),
    _col("topic", "string"),
    _col("tags", "string"),
    _col("keys", "array<string>", pa.list_(_STR)),
    _col("uniq_key", "string"),
    _col("msg_id", "string"),
    _col("properties", "map<string,string>", pa.map_(_STR, _STR)),
    _col("body_size", "int"),
    _col("body", "binary"),
    _col("tags_code", "long"),
]
KEY_HASHES = _col("key_hashes", "array<int>", pa.list_(_INT))

CONSUMEQUEUE_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("topic", "string"),
    _col("queue_id", "int"),
    _col("queue_offset", "long"),
    _col("commitlog_offset", "long"),
    _col("size", "int"),
    _col("tags_code", "long"),
    _col("ext_offset", "long"),
    _col("kind", "string"),
    # tagsCode read from ConsumeQueueExt for an ext address (null: none, or no ext directory)
    _col("ext_tags_code", "long"),
    # an ext address whose ConsumeQueueExt directory exists but holds no unit there
    _col("ext_missing", "boolean"),
]

INDEX_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("number", "int"),
    _col("slot", "int"),
    _col("key_hash", "int"),
    _col("commitlog_offset", "long"),
    _col("time_diff", "int"),
    _col("timestamp", "long"),
    _col("prev_index", "int"),
]

_HEADERS = pa.list_(pa.struct([pa.field("key", _STR), pa.field("value", _BIN)]))
KAFKA_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("batch_position", "long"),
    _col("topic", "string"),
    _col("partition", "int"),
    _col("magic", "int"),
    _col("base_offset", "long"),
    _col("last_offset", "long"),
    _col("offset", "long"),
    _col("timestamp", "long"),
    _col("timestamp_type", "string"),
    _col("key_size", "int"),
    _col("key", "binary"),
    _col("value_size", "int"),
    _col("payload", "binary"),
    _col("headers", "array<struct<key:string,value:binary>>", _HEADERS),
    _col("sequence", "int"),
    _col("is_control", "boolean"),
    _col("is_transactional", "boolean"),
    _col("producer_id", "long"),
    _col("producer_epoch", "int"),
    _col("compression_type", "int"),
]

JAFKA_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("topic", "string"),
    _col("partition", "int"),
    _col("offset", "long"),
    _col("next_offset", "long"),
    _col("kind", "string"),
    _col("depth", "int"),
    _col("inner_index", "int"),
    _col("inner_position", "long"),
    _col("length", "int"),
    _col("magic", "int"),
    _col("attribute", "int"),
    _col("codec", "string"),
    _col("crc", "long"),
    _col("payload_size", "int"),
    _col("payload", "binary"),
]

METAQ_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("topic", "string"),
    _col("partition", "int"),
    _col("offset", "long"),
    _col("next_offset", "long"),
    _col("msg_len", "int"),
    _col("checksum", "long"),
    _col("id", "long"),
    _col("flag", "int"),
    _col("attribute", "string"),
    _col("payload_size", "int"),
    _col("payload", "binary"),
]


def ddl(columns: Sequence[Column]) -> str:
    return ", ".join(f"`{name}` {type_}" for name, type_, _ in columns)


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(name, arrow) for name, _, arrow in columns])
