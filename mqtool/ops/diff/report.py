"""diff's answer: per log compared (``LogDiff``) and for the two stores (``DiffReport``), with the
verdicts of ``mqtool.ops.diff`` and the JSON document ``docs/json.md`` describes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.findings import Finding, Severity

OK_VERDICTS = ("identical", "b-prefix", "a-prefix", "only-a", "only-b")


@dataclass
class Extra:
    """Data one side holds that the other does not: ``[start, end)`` and what is in it."""

    start: int
    end: int
    records: int = 0
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.start, "to": self.end, "records": self.records, "bytes": self.bytes}


@dataclass
class LogDiff:
    name: str
    a: dict[str, Any]  # {"start", "end"} offsets (bytes or Kafka offsets)
    b: dict[str, Any]
    unit: str  # "byte" or "offset"
    verdict: str = "identical"
    compared: dict[str, Any] | None = None  # {"from", "to", "bytes"}
    divergence: dict[str, Any] | None = None
    only_a: Extra | None = None
    only_b: Extra | None = None
    only_a_before: Extra | None = None
    only_b_before: Extra | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    damage: list[dict[str, Any]] = field(default_factory=list)  # {"side", "file", "position", "offset", "error"} (+ "code", "code_position")
    #: (side, finding): every gap and damage met on either side, as validate states them
    #: (RocketMQ: ``store.model.rocketmq``)
    findings: list[tuple[str, Finding]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict in OK_VERDICTS and not self.damage and not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for _side, f in self.findings if f.level is Severity.error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "verdict": self.verdict,
            "a": self.a,
            "b": self.b,
            "compared": self.compared,
            "divergence": self.divergence,
            "only_in_a": self.only_a.to_dict() if self.only_a else None,
            "only_in_b": self.only_b.to_dict() if self.only_b else None,
            "only_in_a_before_b": self.only_a_before.to_dict() if self.only_a_before else None,
            "only_in_b_before_a": self.only_b_before.to_dict() if self.only_b_before else None,
            "notes": list(self.notes),
            "problems": list(self.problems),
            "damage": [dict(d) for d in self.damage],
            "findings": [{"side": side, **f.to_dict()} for side, f in self.findings],
        }


@dataclass
class DiffReport:
    layout: str
    a: str
    b: str
    logs: list[LogDiff] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        verdicts = {d.verdict for d in self.logs}
        for v in ("diverged", "damaged", "disjoint"):
            if v in verdicts:
                return v
        if verdicts <= {"identical"}:
            return "identical"
        if verdicts <= {"identical", "b-prefix", "only-a"}:
            return "b-prefix"
        if verdicts <= {"identical", "a-prefix", "only-b"}:
            return "a-prefix"
        return "prefixes"  # some logs lag on one side, some on the other

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.logs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "a": self.a,
            "b": self.b,
            "verdict": self.verdict,
            "ok": self.ok,
            "logs": [d.to_dict() for d in self.logs],
        }


def damaged_verdict(diff: LogDiff) -> LogDiff:
    if (diff.damage or diff.errors) and diff.verdict not in ("diverged", "disjoint"):
        diff.verdict = "damaged"
    return diff


def torn_note(path: Path, position: int, what: str) -> str:
    return f"torn tail at {path}:{position}: {what} (a crash while writing): the data ends there"
