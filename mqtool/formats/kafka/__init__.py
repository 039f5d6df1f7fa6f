"""Apache Kafka on-disk formats (pure: bytes <-> frozen dataclasses).

| module              | what it reads and writes                                                  |
|---------------------|---------------------------------------------------------------------------|
| ``log``             | a ``.log`` segment: entries of any magic, clean ends (eof/zeros/partial)  |
| ``legacy``          | message format v0/v1 (``LegacyRecord``), compressed wrapper messages      |
| ``record_batch``    | record batch v2 (``DefaultRecordBatch``), records, control records        |
| ``compression``     | codecs 0..4: none, gzip, snappy (raw + xerial), lz4 (Kafka frame), zstd   |
| ``internal_topics`` | ``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``   |
| ``_schema``         | the primitives of Kafka's generated message classes (strings, arrays...) |
| ``index``           | ``.index`` / ``.timeindex``                                               |
| ``txn_index``       | ``.txnindex`` (aborted transactions)                                      |
| ``snapshot``        | producer-state ``.snapshot`` files                                        |
| ``checkpoint_file`` | checkpoint text files, segment and partition directory names              |

Every fixed-width integer is big-endian and signed unless a layout table says ``uint``.
"""
