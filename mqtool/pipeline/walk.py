"""Where the Spark sources' byte-range readings are: the store model's, not the pipeline's.

A file bigger than the split size is read as several byte ranges ``[start, stop)``; a range owns
the records of the file's record chain that start inside it.  The CommitLog is read in ranges by
``store.model.commitlog_range`` over the store model's one CommitLog walk
(``store.model.commitlog_walk``: ``read_range``, column pieces and records, and
``read_commitlog_range``, record by record: upstream ``CommitLog.checkMessageAndReturnSize`` per
record, a torn tail where ``CommitLog.recoverAbnormally`` stops), the formats without a magic code --
Kafka, Jafka, MetaQ -- by ``store.model.framed.read_range``.  This module names the types the
sources (``pipeline.sources``) turn into rows: a walk's ``Event``, ``("record", position, item)``,
``("problem", position, Problem)``, ``("damaged", position, (from, to))`` and one ``("end",
position, kind)``, and ``Problem``, a finding-to-be.
"""

from __future__ import annotations

from mqtool.store.model.commitlog_range import Event, Problem

__all__ = ["Event", "Problem"]
