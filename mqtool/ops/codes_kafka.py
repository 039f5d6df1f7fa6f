"""Finding codes of the Kafka checks (merged into ``ops.findings.CODES``)."""

from __future__ import annotations

from mqtool.ops.findings_base import CodeInfo, Severity

E, W, I = Severity.error, Severity.warning, Severity.info

CODES: dict[str, CodeInfo] = {}
