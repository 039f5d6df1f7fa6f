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

It is also how a store walker's reading of a whole file ends (``store.model``): there
``position`` is the file position where the valid entries stop, and two kinds join --
``broken`` (an entry that is damage: ``error`` is the located ``MqError`` found there) and
``stop`` (a bounded reading reached the position it was asked to stop at).  A walker's result
that says more (bytes read, findings, the first broken entry a reading went past) holds a
``DataEnd`` as a field; no other type says where data ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from mqtool.errors import MqError

K = TypeVar("K", bound=str)


@dataclass(frozen=True)
class DataEnd(Generic[K]):
    kind: K
    position: int
    length: int = 0
    unit: object | None = None
    error: MqError | None = None

    @property
    def clean(self) -> bool:
        """True unless the data ends at damage (``broken``)."""
        return self.error is None and self.kind != "broken"


__all__ = ["DataEnd"]
