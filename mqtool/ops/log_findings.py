"""What the store model says about the bytes a Kafka, Jafka or MetaQ reader read (issue 18).

The readers -- dump, stats, info, query, diff, recover's plan -- do not judge bytes themselves:
they take the findings of the layout's store model (``store.model.kafka``: the segment walk,
the index streams and the torn-write rule; ``store.model.legacy``: the message walk and the end
rule of each broker's recovery) for the partitions they read, so a reader names every gap and
damage on its path with the code, path and position ``validate`` reports (validate assembles
the same reading), and its exit follows the findings' severities (a torn tail of the active
segment is a warning, exit 0).  ``on_path`` reads the path the reader was given (the same path
strings as the reader's) with the model and keeps the errors and warnings inside the
partitions read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mqtool.errors import StoreLayoutError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import JAFKA_UNREADABLE, KAFKA_FILE_UNREADABLE, METAQ_UNREADABLE
from mqtool.layouts import Layout, for_layout

if TYPE_CHECKING:
    from mqtool.ops.recover import Step

#: what a reader of the log reads: the files, the log and its offsets (``KAFKA-LOG-MISSING``, the
#: log ending below what its checkpoints vouch for, is of the log family); not the checkpoint
#: family's notices about state files (shutdown state, stale entries), which ``info`` states in
#: its own fields, nor the index family (read by ``query`` and ``dump kafka-index``: ``INDEX``)
LOG = frozenset({"files", "log", "offsets"})
INDEX = LOG | {"index"}
#: a file that cannot be read is an I/O error each reader reports itself (exit 3), not damage
UNREADABLE = frozenset({KAFKA_FILE_UNREADABLE, JAFKA_UNREADABLE, METAQ_UNREADABLE})


def _kafka(path: Path, families: frozenset[str]) -> Iterator[Finding]:
    from mqtool.store import kafka as ks
    from mqtool.store.model import kafka as km

    return km.findings(ks.open_kafka(path), checks=families)


def _jafka(path: Path, families: frozenset[str]) -> Iterator[Finding]:
    from mqtool.store import jafka as sj
    from mqtool.store.model import legacy as lm

    return lm.findings(sj.open_jafka(path), "jafka")


def _metaq(path: Path, families: frozenset[str]) -> Iterator[Finding]:
    from mqtool.store import metaq as sm
    from mqtool.store.model import legacy as lm

    return lm.findings(sm.open_metaq(path), "metaq")


#: The store model's reading of each layout a reader of logs reads: ``(path, families) -> findings``;
#: each imports its layout's store and model modules when called (a Kafka reader loads no Jafka or
#: MetaQ module, and the reverse).
READINGS: dict[Layout, Callable[[Path, frozenset[str]], Iterator[Finding]]] = {Layout.KAFKA: _kafka, Layout.JAFKA: _jafka, Layout.METAQ: _metaq}


def on_path(path: str | os.PathLike[str], layout: str, within: Iterable[str | os.PathLike[str]] | None = None, *, families: frozenset[str] = LOG) -> list[Finding]:
    """The store model's errors and warnings for ``path`` (as ``layout``), in validate's order,
    kept to the families a reader reads (of the files family its errors: gaps, overlaps,
    unreadable files) and -- with ``within`` -- to findings at or under those partition
    directories or files.  A path the model cannot open as a store (a carved file, a KRaft
    snapshot given alone) has no findings here: the reader's own walk names its damage."""
    read = for_layout(READINGS, layout, "validate")
    try:
        found = list(read(Path(path), families))
    except StoreLayoutError:
        return []
    return select(found, within, families=families)


def select(found: Iterable[Finding], within: Iterable[str | os.PathLike[str]] | None = None, *, families: frozenset[str] = LOG) -> list[Finding]:
    """``on_path``'s choice among findings a reader already has from the store model's reading
    (a reader that consumed the reading itself: Jafka and MetaQ dump, stats, info)."""
    scopes = None if within is None else [str(p) for p in within]
    out = []
    for finding in found:
        if finding.level not in (Severity.error, Severity.warning) or finding.family not in families:
            continue
        if finding.code in UNREADABLE:
            continue
        if finding.family == "files" and finding.level is not Severity.error:
            continue  # names a broker ignores or acts on (leftovers, links, odd names): info lists them
        if scopes is not None and not any(finding.path == s or finding.path.startswith(s.rstrip(os.sep) + os.sep) for s in scopes):
            continue
        out.append(finding)
    return out


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.level is Severity.error]


def merged(
    path: str | os.PathLike[str], layout: str, problems: list[str], errors: Sequence[object], found: list[Finding] | None = None
) -> tuple[list[str], list[str], list[Finding]]:
    """A reader's own ``problems`` (notices) and ``errors`` (damage met: located ``MqError``s or
    text) judged by validate's findings for ``path`` (``on_path``): the errors are validate's
    errors, the problems the reader's own notices, its own lines on the damage (which validate
    may judge otherwise: a zeroed last message is a torn tail, a warning) and validate's
    warnings, each finding as ``CODE path:position: message``; an own line at the file and
    position of a finding is that finding, stated once, by it.  ``found``: the findings, already
    ``select``-ed from a reading the reader consumed (else ``on_path`` reads them).  Returns
    (problems, errors, findings)."""
    from mqtool.findings import finding_text, not_stated

    met = on_path(path, layout) if found is None else found
    own = [str(e) for e in not_stated(list(errors), met)]
    warnings = [finding_text(f) for f in met if f.level is Severity.warning]
    return problems + own + warnings, [finding_text(f) for f in met if f.level is Severity.error], met


def unfixed(path: str | os.PathLike[str], layout: str, root: str | os.PathLike[str], steps: Iterable[Step], found: list[Finding] | None = None) -> list[Finding]:
    """validate's errors for ``path`` (``on_path``) that a recover plan's ``steps`` (paths relative
    to ``root``) leave in place: all but those in a file the plan deletes, or at or after the
    position where it truncates the file.  A gap between segments, a log that lost what its
    checkpoints vouch for, damage before a recovery point the plan does not read: named, so the
    plan says what it cannot fix instead of exiting 0.  ``found``: ``on_path``'s findings, when the
    caller has them already."""
    cuts: dict[Path, int] = {}
    for step in steps:
        target = (Path(root) / step.path).resolve()
        if step.action == "delete":
            cuts[target] = 0
        elif step.action == "truncate" and step.position is not None:
            cuts[target] = min(step.position, cuts.get(target, step.position))
    left = []
    for finding in errors(on_path(path, layout) if found is None else found):
        cut = cuts.get(Path(finding.path).resolve())
        if cut is not None and (cut == 0 or (finding.position is not None and finding.position >= cut)):
            continue
        left.append(finding)
    return left
