"""The finding vocabulary shared by the store model, every verb, the Spark pipeline and the CLI.

A finding has a stable ``code`` (documented in the README and listed in ``CODES``), a severity,
the file and byte position it is about, and a message that says what was expected and found.
Codes never change meaning; new checks get new codes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from mqtool.findings import codes_kafka, codes_legacy, codes_rocketmq
from mqtool.findings.base import END_KINDS, CodeInfo, Severity

__all__ = [
    "CODES", "END_KINDS", "FAMILIES", "CodeInfo", "Finding", "FindingRef", "Severity",
    "end_kind", "finding_location", "finding_text", "layout_families", "not_stated",
]  # fmt: skip


def _merge_layout_codes() -> dict[str, CodeInfo]:
    merged: dict[str, CodeInfo] = {}
    for table in (codes_rocketmq.CODES, codes_kafka.CODES, codes_legacy.CODES):
        clash = set(table) & set(merged)
        if clash:
            raise RuntimeError(f"finding codes defined twice: {sorted(clash)}")
        merged.update(table)
    return merged


#: Every finding code of every layout: default severity, check family, one-line meaning.
CODES: dict[str, CodeInfo] = _merge_layout_codes()


def end_kind(codes: set[str] | frozenset[str]) -> str | None:
    """How a file ends by the codes of the findings on it (``CodeInfo.ends``, strongest first:
    ``END_KINDS``), or None when none of them says: the one rule info, the report and every other
    reader use, from the stable codes and never from message text."""
    said = {CODES[c].ends for c in codes if c in CODES}
    return next((kind for kind in END_KINDS if kind in said), None)


#: Check families; every code's family is one of these (``--checks`` selects them).
FAMILIES = ("files", "commitlog", "consumequeue", "index", "checkpoint", "config", "timer", "compaction", "log", "offsets")

_CODE_PREFIX = {"rocketmq": "RMQ-", "kafka": "KAFKA-", "jafka": "JAFKA-", "metaq": "METAQ-"}


def layout_families(layout: str) -> tuple[str, ...]:
    """The check families a layout has findings in (``commitlog`` is RocketMQ's, ``log`` the
    others'): ``--checks`` naming only families a store lacks would check nothing and say OK."""
    prefix = _CODE_PREFIX[layout]
    present = {info.family for code, info in CODES.items() if code.startswith(prefix)}
    return tuple(f for f in FAMILIES if f in present)


@dataclass(frozen=True)
class FindingRef:
    """Where a finding is: enough to name it from another finding (a knock-on's ``cause``)."""

    code: str
    path: str
    position: int | None

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "path": self.path, "position": self.position}


@dataclass(frozen=True)
class Finding:
    """One fact about damaged or unusual bytes.

    ``code`` says what it is (never derived from ``message``); ``path`` and ``position`` say
    where; ``message`` says what was expected and what was found.  ``cause`` links a knock-on
    finding (a ConsumeQueue unit pointing into an unreadable CommitLog file) to the finding
    that caused it, so reports can fold it under its cause.
    """

    code: str
    path: str
    position: int | None
    message: str
    length: int | None = None
    severity: Severity | None = None  # None: the code's default
    details: dict[str, object] = field(default_factory=dict, compare=False)
    cause: FindingRef | None = field(default=None, compare=False)

    @property
    def level(self) -> Severity:
        return self.severity or CODES[self.code].severity

    @property
    def family(self) -> str:
        return CODES[self.code].family

    @property
    def ref(self) -> FindingRef:
        return FindingRef(self.code, self.path, self.position)

    def caused_by(self, cause: Finding | FindingRef) -> Finding:
        """This finding, linked to the finding that caused it."""
        return replace(self, cause=cause.ref if isinstance(cause, Finding) else cause)

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.level.value,
            "family": self.family,
            "path": self.path,
            "position": self.position,
            "length": self.length,
            "message": self.message,
            **({"details": self.details} if self.details else {}),
            **({"cause": self.cause.to_dict()} if self.cause is not None else {}),
        }


def finding_location(finding: Finding) -> str:
    """``path:position: message`` (``path: message`` without a position): where a finding is and
    what it says, in the wording of every mqtool error."""
    where = finding.path if finding.position is None else f"{finding.path}:{finding.position}"
    return f"{where}: {finding.message}"


def finding_text(finding: Finding) -> str:
    """One line for a finding: ``CODE path:position: message``."""
    return f"{finding.code} {finding_location(finding)}"


def not_stated(problems: list[object], findings: list[Finding]) -> list[object]:
    """The problems a reader met that the store model's findings (printed already, one line each)
    do not state: a problem in the same file at the same position as a finding is that finding,
    seen again by the reader's own walk, and is not printed a second time."""
    stated = {(os.path.abspath(f.path), f.position) for f in findings if f.path is not None and f.position is not None}
    if not stated:
        return problems
    kept: list[object] = []
    for problem in problems:
        path, position = getattr(problem, "path", None), getattr(problem, "position", None)
        if path is not None and position is not None and (os.path.abspath(path), position) in stated:
            continue
        kept.append(problem)
    return kept
