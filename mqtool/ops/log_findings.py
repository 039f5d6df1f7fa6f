"""What validate says about the bytes a Kafka, Jafka or MetaQ reader read (issue 18).

The readers -- dump, stats, info, query, diff, recover's plan -- do not judge bytes themselves:
they take the findings of the layout's validate engine (whose rules live in the store layer:
``store.kafka``'s segment walk and torn-write rule, ``store.legacy``'s walk and end rule) for
the partitions they read, so a reader names every gap and damage on its path with validate's
code, path and position, and its exit follows validate's severities (a torn tail of the active
segment is a warning, exit 0).  ``on_path`` runs that engine on the path the reader was given
(the same path strings as the reader's) and keeps the errors and warnings inside the partitions
read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from mqtool.errors import MqError, StoreLayoutError
from mqtool.findings import Finding, Severity
from mqtool.ops.validate import ValidateOptions, validate_path

#: what a reader of the log reads: the files, the log and its offsets (``KAFKA-LOG-MISSING``, the
#: log ending below what its checkpoints vouch for, is of the log family); not the checkpoint
#: family's notices about state files (shutdown state, stale entries), which ``info`` states in
#: its own fields, nor the index family (read by ``query`` and ``dump kafka-index``: ``INDEX``)
LOG = frozenset({"files", "log", "offsets"})
INDEX = LOG | {"index"}


def on_path(path: str | os.PathLike[str], layout: str, within: Iterable[str | os.PathLike[str]] | None = None, *, families: frozenset[str] = LOG) -> list[Finding]:
    """validate's errors and warnings for ``path`` (as ``layout``), in validate's order, kept to
    the families a reader reads (of the files family its errors: gaps, overlaps, unreadable
    files) and -- with ``within`` -- to findings at or under those
    partition directories or files.  A path validate cannot open as a store (a carved file, a
    KRaft snapshot given alone) has no findings here: the reader's own walk names its damage."""
    try:
        report = validate_path(Path(path), ValidateOptions(jobs=1, checks=frozenset(families)), layout)
    except StoreLayoutError:
        return []
    except MqError:
        raise
    scopes = None if within is None else [str(p) for p in within]
    out = []
    for finding in report.findings:
        if finding.level not in (Severity.error, Severity.warning) or finding.family not in families:
            continue
        if finding.family == "files" and finding.level is not Severity.error:
            continue  # names a broker ignores or acts on (leftovers, links, odd names): info lists them
        if scopes is not None and not any(finding.path == s or finding.path.startswith(s.rstrip(os.sep) + os.sep) for s in scopes):
            continue
        out.append(finding)
    return out


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.level is Severity.error]


def merged(path: str | os.PathLike[str], layout: str, problems: list[str], errors: list) -> tuple[list[str], list[str], list[Finding]]:
    """A reader's own ``problems`` (notices) and ``errors`` (damage met: located ``MqError``s or
    text) with validate's findings for ``path`` (``on_path``): warnings join the problems and
    errors the errors, each as ``CODE path:position: message``, after the reader's own.
    Returns (problems, errors, findings)."""
    from mqtool.store.model.rocketmq import finding_text

    met = on_path(path, layout)
    own = [str(e) for e in errors]
    warnings = [finding_text(f) for f in met if f.level is Severity.warning]
    return problems + warnings, own + [finding_text(f) for f in met if f.level is Severity.error], met
