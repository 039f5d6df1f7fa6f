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


@dataclass(frozen=True)
class CodeInfo:
    severity: Severity
    family: str
    summary: str
