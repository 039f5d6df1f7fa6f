"""Where the valid entries of a buffer stop, and why: the one type every format's walker ends with.

A walker reads entries (records, batches, messages, units) until one is not there: it ends with a
:class:`DataEnd` whose ``kind`` says why, in the format's own vocabulary (each format module names
its kinds as a ``Literal`` and aliases ``DataEnd[ItsKinds]``), ``position`` is where the valid
entries stop (the number of valid bytes from the walk's start: upstream ``validUpTo`` /
``validBytes``), and ``length`` what the kind measures (a partial entry's bytes, a BLANK record's
TOTALSIZE, a zero run's extent).  ``unit`` keeps the entry found there when the kind needs it (a
ConsumeQueue unit that fails the validity rule).

The kinds the formats use: ``eof`` (the data ends exactly after the last entry), ``zeros`` (zero
bytes where the next entry would start: a pre-allocated tail), ``partial`` (an entry that does
not fit in the data), and per format ``blank`` (RocketMQ's END_OF_FILE record, the TimerLog's
BLANK), ``invalid`` / ``end_marker`` (ConsumeQueue units), ``torn`` / ``stale`` (the store's walk
of the newest CommitLog file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=str)


@dataclass(frozen=True)
class DataEnd(Generic[K]):
    kind: K
    position: int
    length: int = 0
    unit: object | None = None


__all__ = ["DataEnd"]
