"""Severity and code descriptions (kept apart so per-layout code tables can import them)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):
    info = "info"
    warning = "warning"
    error = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


#: How a file ends, as a finding on it says (``CodeInfo.ends``), strongest first: a file with
#: findings of several of these ends as the first of them.
END_KINDS = ("unreadable", "missing", "torn", "garbage", "zeros", "in-progress")


@dataclass(frozen=True)
class CodeInfo:
    severity: Severity
    family: str
    summary: str
    #: how the file a finding of this code is on ends (one of ``END_KINDS``), when the code says
    #: so: a torn tail, garbage after the data, an unreadable file or region, ...; None for the
    #: codes that say nothing of a file's end
    ends: str | None = None
    #: what each modelled broker version does with the data a finding of this code is about, as
    #: ``(model, text)`` pairs (RocketMQ's models ``4.x-5.3.1`` and ``5.3.2+``:
    #: ``store.model.rocketmq_broker``), for the codes where the versions differ; empty when every
    #: modelled version does what ``summary`` says
    broker: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.ends is not None and self.ends not in END_KINDS:
            raise ValueError(f"unknown end kind {self.ends!r}: expected one of {', '.join(END_KINDS)}")
