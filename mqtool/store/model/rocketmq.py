"""The RocketMQ store model: segment continuity of the CommitLog and ConsumeQueue directories.

A RocketMQ segment directory (``commitlog/``, ``consumequeue/<topic>/<queue>/``) holds files named
by the 20-digit offset of their first byte, each of the directory's configured size
(``mappedFileSizeCommitLog`` / ``mappedFileSizeConsumeQueue``; upstream ``MappedFileQueue`` refuses
to load a file of another length, the last one included, and its ``checkSelf`` reports names
that do not follow each other).  This module states those facts once, as findings, for every
command: a missing file (``RMQ-FILE-GAP``), an overlap, a wrong size, a zero-length file, a
misaligned name, an unexpected entry, a link or a special file.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mqtool.findings import Finding, Severity
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.store import rocketmq as rmq
from mqtool.store.files import link_target


def irregular_findings(entries: Iterable[tuple[Path, str]], expected: str) -> list[Finding]:
    """Symbolic links (never followed, wherever they lead) and special files (never opened: a
    FIFO could block) where the store holds regular files or directories."""
    out: list[Finding] = []
    for path, kind in entries:
        if kind == "a symlink":
            out.append(Finding("RMQ-FILE-LINK", str(path), None, f"expected {expected}, found {kind} to {link_target(path)!r}: not followed"))
        else:
            out.append(Finding("RMQ-FILE-UNREADABLE", str(path), None, f"expected {expected}, found {kind}: not read"))
    return out


def cq_file_size(forced: int | None, queues: dict[tuple[str, int], list[rmq.Segment]]) -> tuple[int, str]:
    """The ConsumeQueue file size every file of the store must have, and where it comes from.

    One size for the whole store (``mappedFileSizeConsumeQueue`` is a broker setting, rounded
    up to whole units by its getter): ``forced`` (``--cq-file-size``), else the size most of the
    store's files have, else the upstream default.  The broker creates every ConsumeQueue file at
    that size and refuses to load one of another size, the last file of a queue included."""
    if forced:
        return cqf.cq_file_size(forced), "--cq-file-size"
    detected = rmq.common_cq_file_size(seg for segs in queues.values() for seg in segs)
    if detected is not None:
        return detected, "detected: the most common size of the store's ConsumeQueue files"
    return rmq.DEFAULT_CQ_FILE_SIZE, "the upstream default: no ConsumeQueue file holds whole 20-byte units; pass --cq-file-size"


def segment_findings(
    directory: Path,
    segments: list[rmq.Segment],
    file_size: int | None,
    family: str,
    *,
    live: bool = False,
    size_source: str | None = None,
) -> list[Finding]:
    """Every fact about the files of one segment directory as a list of findings: unexpected
    entries, links, special files, zero-length and wrong-size files, misaligned names, and the
    gaps and overlaps between consecutive names.  ``family`` is ``commitlog`` or
    ``consumequeue``; ``live`` (a writer holds the store's lock) makes a zero-length last file
    a file being created."""
    out: list[Finding] = []
    for path in rmq.unexpected_entries(directory):
        if path.name.startswith(".mqtool"):
            continue
        out.append(Finding("RMQ-FILE-NAME", str(path), None, f"unexpected entry in a {family} directory: {path.name!r}"))
    out.extend(irregular_findings(rmq.irregular_segments(directory), f"a regular {family} file"))
    if not segments or not file_size:
        return out
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        if seg.size == 0:
            where = "the last file" if i == last else "a file before the last one"
            out.append(
                Finding(
                    "RMQ-FILE-ZERO-LENGTH",
                    str(seg.path),
                    0,
                    f"zero-length {family} file ({where}); "
                    + ("a live writer is creating it" if live and i == last else "RocketMQ 4.x refuses to start, 5.1.3+ deletes a zero-length last file"),
                    # Before the last file no version starts, and the file's data is gone.
                    severity=(Severity.info if live else None) if i == last else Severity.error,
                )
            )
        elif seg.size != file_size:
            out.append(
                Finding(
                    "RMQ-FILE-SIZE",
                    str(seg.path),
                    min(seg.size, file_size),
                    f"expected {file_size} bytes (the {family} file size{'; ' + size_source if size_source else ''}), found {seg.size}"
                    + (f": {seg.size % cqf.CQ_UNIT_SIZE} bytes of a partial unit" if family == "consumequeue" and seg.size % cqf.CQ_UNIT_SIZE else ""),
                    length=abs(seg.size - file_size),
                )
            )
        if seg.base % file_size:
            out.append(Finding("RMQ-FILE-ALIGN", str(seg.path), None, f"expected a name that is a multiple of {file_size}, found {seg.base}"))
        if i:
            prev = segments[i - 1]
            expected = prev.base + file_size
            if seg.base > expected:
                missing = (seg.base - expected) // file_size
                out.append(
                    Finding(
                        "RMQ-FILE-GAP",
                        str(seg.path),
                        None,
                        f"expected the file after {prev.name} to be {expected:020d}, found {seg.name} "
                        f"({missing or 'part of a'} file(s) missing: offsets {expected}..{seg.base - 1})",
                        length=seg.base - expected,
                        details={"missing_from": expected, "missing_to": seg.base},
                    )
                )
            elif seg.base < expected:
                out.append(
                    Finding(
                        "RMQ-FILE-OVERLAP",
                        str(seg.path),
                        None,
                        f"expected the file after {prev.name} to be {expected:020d}, found {seg.name} (overlaps by {expected - seg.base} bytes)",
                        length=expected - seg.base,
                    )
                )
    return out


def commitlog_findings(store: rmq.RocketMQStore, *, live: bool = False) -> list[Finding]:
    """The continuity facts of a store's CommitLog directory (what every command that reads the
    CommitLog reports before its own answer: a missing middle file is damage for all of them)."""
    return segment_findings(store.commitlog_dir, store.commitlog, store.commitlog_file_size, "commitlog", live=live)


def planned_commitlog_findings(store: rmq.RocketMQStore, outcome: dict[Path, int | None], *, file_size: int | None = None) -> list[Finding]:
    """The continuity facts of the CommitLog directory as a plan would leave it: ``outcome``
    maps a file's path to its size after the plan (``None``: the plan deletes it); files it does
    not name keep their size.  The rules are ``segment_findings``'s, so what recover says it
    cannot fix is exactly what validate will report (upstream ``MappedFileQueue.load`` refuses a
    file of another length, ``MappedFileQueue.checkSelf`` names files that do not follow each
    other)."""
    after: list[rmq.Segment] = []
    for seg in store.commitlog:
        if seg.path in outcome:
            size = outcome[seg.path]
            if size is None:
                continue
            seg = rmq.Segment(seg.path, seg.base, size, seg.mtime)
        after.append(seg)
    return segment_findings(store.commitlog_dir, after, file_size or store.commitlog_file_size, "commitlog")
