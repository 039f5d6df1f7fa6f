"""recover for Jafka and MetaQ data dirs (spec jafka.md B2/B4, metaq.md C2.1/C3/C5).

Both brokers repair exactly one file per partition at start-up: the **last** live segment, which
recovery truncates after the last message it can read.  mqtool plans the same cut, without the
brokers' quirks, and keeps every byte it cuts:

* **Jafka** (``FileMessageSet.recover``): messages are kept while ``LENGTH >= 6``, the entry fits
  and the CRC-32 of the payload matches; the rest of the file is truncated (``truncate``).  A magic
  byte other than 1 ends the valid data (Jafka's own recovery throws ``UnknownMagicByteException``
  there and the broker does not start).  The cut is planned whether or not
  ``.jafka_cleanshutdown`` is present (with the marker Jafka skips recovery and appends after a
  damaged tail).  The marker itself is never created: Jafka has no lock file, so mqtool cannot
  know that the broker is stopped, and a marker written under a running broker would make it skip
  recovery after its next crash.
* **Kafka 0.7** (the Jafka layout's ``kafka07`` dialect, ``.kafka`` segments): the same loop as
  Jafka's (``FileMessageSet.recover``/``validateMessage`` of 0.7.2: ``LENGTH >= 5``, the entry
  fits, ``Message.isValid``), magic 0 and 1 both valid, ``.kafka_cleanshutdown`` the marker.
* **MetaQ** (always at load): the same loop with MetaQ's 20-byte header and
  ``CRC32(data) & 0x7FFFFFFF``.  Twenty zero bytes are a valid empty message to MetaQ, so its
  recovery reads *through* zero runs: a zero gap whose length is a multiple of 20 followed by
  valid messages is kept, as the loader expects (cutting it would drop the messages after it, and
  removing it would move every later offset).  A zero run at the very end is cut: MetaQ would keep
  it as phantom empty messages (id 0) that consumers receive; nothing wrote them.
* **Gaps between segments**: both loaders refuse a partition whose live segments do not join
  (``start + size == next start``, ``validateSegments``).  The live log is the contiguous run of
  segments that ends at the active (last) one; the segments before the last hole are taken out of
  it the way the broker itself disposes of old segments: MetaQ's are renamed to ``NNN.meta.arc``
  (its archive name, ignored at load, still readable by ``mqtool dump``), Jafka's (which has no
  archive) are deleted, whole files kept in the quarantine.  Either needs ``--force``: consumers
  can no longer fetch those offsets.

Where valid messages follow the cut point (a broken message in the middle of the last segment, or
a zero gap MetaQ cannot read through), the plan counts them and needs ``--force``, as for
RocketMQ; they are quarantined either way.  Segments before the last are never rewritten: their
damage is reported by the verification (``validate``) that follows ``--apply``.

The recovery loops are the store model's (``store.model.legacy.recovery_tail``, and
``tail_from_reading`` that takes the answer from the one reading validate also makes), as is the
count of valid messages after a cut (``count_valid_from``): this module plans from their answers.

Neither broker has a lock file: stop the broker before ``--apply`` (mqtool's own
``.mqtool.lock`` still keeps two mqtool runs apart).  The default quarantine is a sibling of the
*data dir* even when one partition is given: a ``mqtool-quarantine`` directory inside the data
dir would stop Jafka (and MetaQ) from loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from mqtool.errors import StoreLayoutError
from mqtool.findings import Finding
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops import log_findings
from mqtool.ops.recover import ApplyContext, ApplyResult, RecoverPlan, Step, apply_plan, observe, relative, resolve
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.files import nonzero_extent
from mqtool.store.legacy import DataDir, Partition, Segment, SegmentReader
from mqtool.store.model import legacy as lm
from mqtool.store.quarantine import default_quarantine_root

MODE = "last-segment"


@dataclass(frozen=True)
class RecoverOptions:
    """Options of a Jafka/MetaQ recovery.  None of ``--mode``, ``--full``, ``--rebuild-cq``,
    ``--queue`` or ``--rebuild-index`` applies: there is no recovery mode (the last segment is
    always the one repaired), no queue and no index file to rebuild."""


class _PartitionIds(TypedDict):
    topic: str | None
    partition: int | None
    directory: str


def _partition_ids(part: Partition) -> _PartitionIds:
    """How a fact or a step names its partition: ``topic``, ``partition`` (the number) and the
    ``directory``'s name."""
    return {"topic": part.topic, "partition": part.partition, "directory": part.name}


def _unresolved(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` without resolving it (a symbolic link is named, not followed)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _open(layout: str, path: str | Path) -> DataDir:
    data = sj.open_jafka(path) if layout == "jafka" else sm.open_metaq(path)
    if data.kind == "segment":
        raise StoreLayoutError(
            f"`mqtool recover` repairs a whole partition: give its directory ({Path(path).parent}) or the data dir",
            path=path,
            expected=f"a {layout} data dir or partition directory",
            found="a segment file",
        )
    return data


def _reader(layout: str, seg: Segment) -> SegmentReader:
    return sj.open_segment(seg) if layout == "jafka" else sm.open_segment(seg)


# --- planning ---------------------------------------------------------------------------------------------


def plan_jafka(path: str | Path, options: RecoverOptions = RecoverOptions()) -> RecoverPlan:
    return _plan("jafka", path, options)


def plan_metaq(path: str | Path, options: RecoverOptions = RecoverOptions()) -> RecoverPlan:
    return _plan("metaq", path, options)


def _plan(layout: str, path: str | Path, options: RecoverOptions) -> RecoverPlan:
    data = _open(layout, path)
    root = data.root
    plan = RecoverPlan(layout, str(root.absolute()), MODE)
    plan.facts["kind"] = data.kind
    plan.facts["data_dir"] = str(data.data_dir.absolute()) if data.data_dir is not None else None
    marker = sj.clean_shutdown_marker(data) if layout == "jafka" else None
    dialect = sj.dialect_of(data)
    if layout == "jafka":
        plan.facts["clean_shutdown_marker"] = marker
    # the store model's one reading: validate's findings (what the plan leaves unfixed) and where
    # each last segment's recovery stops (``lm.tail_from_reading``; ``lm.recovery_tail`` where the reading cannot tell)
    found: list[Finding] = []
    results: dict[str, lm.SegmentResult] = {}
    for item in lm.read_store(data, layout):
        if isinstance(item, lm.SegmentRead):
            results[item.task.path] = item.result
            found.extend(item.result.findings)
        else:
            found.extend(item)
    partitions = []
    for part in data.partitions:
        fact = _plan_partition(layout, plan, part, root, dialect, results)
        if fact is not None:
            partitions.append(fact)
    plan.facts["partitions"] = partitions
    if len(partitions) == 1:
        plan.valid_end = partitions[0]["log_end_offset"]
    if plan.has_work and marker:
        plan.notes.append(f"{dialect.marker} is present: {dialect.broker} would skip its own recovery at the next start and append after these tails")
    if plan.has_work:
        plan.notes.append(f"{dialect.broker if layout == 'jafka' else 'MetaQ'} has no lock file mqtool could test: stop the broker before --apply")
    for bad, reason in data.bad_dirs:
        plan.notes.append(f"{bad.name}: {reason} (not repaired by recover)")
    links = list(data.links) + [p for part in data.partitions for p in part.links]
    if links:
        shown = ", ".join(_unresolved(root, p) for p in links[:5]) + (f" and {len(links) - 5} more" if len(links) > 5 else "")
        plan.notes.append(f"symbolic links are never followed: {shown}")
    if plan.records_dropped:
        plan.needs_force.append(f"{plan.records_dropped} valid message(s) after the cut point(s) would be cut (the broker's recovery drops them too)")
    # what validate still finds after the plan (a gap between segments, damage before the last
    # segment's tail): named, the plan exits 1
    plan.unfixable = [f.to_dict() for f in log_findings.unfixed(path, layout, plan.root, plan.steps, found=log_findings.select(found))]
    return plan


def _plan_partition(
    layout: str, plan: RecoverPlan, part: Partition, root: Path, dialect: sj.Dialect = sj.JAFKA, results: dict[str, lm.SegmentResult] | None = None
) -> dict[str, Any] | None:
    segs = part.segments
    if not segs:
        return None
    last = segs[-1]
    res = (results or {}).get(str(last.path))
    tail: lm.RecoveryTail | None = None
    if res is not None and res.opened:  # the store model's reading of it: not read again
        tail = lm.tail_from_reading(layout, res, last, dialect)
    if tail is None:
        tail = lm.recovery_tail(layout, last, dialect)
    fact: dict[str, Any] = {
        **_partition_ids(part),
        "last_segment": relative(root, last.path),
        "size": last.size,
        "valid_end": tail.cut_from,
        "log_end_offset": last.start_offset + tail.cut_from,
        "broker_recovery_end_offset": last.start_offset + tail.broker_end,
        "end": tail.kind,
    }
    if layout == "metaq":
        fact["kept_zero_gaps"] = [{"offset": last.start_offset + p, "length": n} for p, n in tail.kept_gaps or []]
        for p, n in tail.kept_gaps or []:
            plan.notes.append(
                f"{part.name}: {n} zero bytes at offset {last.start_offset + p} are kept: MetaQ's recovery reads them as "
                f"{n // mq.HEADER_LEN} empty message(s) and the valid messages after them stay readable"
            )
    _plan_holes(layout, plan, part, root)
    if tail.cut_from < tail.size:
        _plan_cut(layout, plan, part, last, tail, root, fact, dialect)
    return fact


def _plan_cut(
    layout: str, plan: RecoverPlan, part: Partition, seg: Segment, tail: lm.RecoveryTail, root: Path, fact: dict[str, Any], dialect: sj.Dialect = sj.JAFKA
) -> None:
    start, cut, size = seg.start_offset, tail.cut_from, tail.size
    with _reader(layout, seg) as reader:
        extent = nonzero_extent(reader, cut)
    dropped = lm.count_valid_from(layout, seg, cut, dialect) if extent is not None else 0
    plan.records_dropped += dropped
    fact["valid_messages_cut"] = dropped
    at = f"offset {start + cut}"
    if tail.kind == "magic":
        why = f"the entry at {at} has {tail.detail}"
    elif tail.kind == "broken":
        why = f"no valid message at {at} ({tail.detail})"
    elif extent is None:
        why = f"zero tail after the last message ({size - cut} bytes from {at})"
    elif tail.kind == "partial":
        why = f"torn tail: a partially written message at {at}"
    else:
        why = f"zeros then other bytes after the last message at {at}"
    if dropped:
        why += f"; {dropped} valid message(s) follow it"
    if layout == "metaq" and tail.trailing_empties:
        why += f"; MetaQ's own recovery would keep {tail.trailing_empties} empty message(s) (id 0) from the zeros, mqtool cuts them"
    if tail.broker_end > cut and layout == "metaq" and not tail.trailing_empties:
        why += f"; MetaQ's recovery stops at offset {start + tail.broker_end}"
    plan.add(
        Step(
            "truncate",
            relative(root, seg.path),
            f"{part.name}: {why}; the last segment is truncated to {cut} bytes (log end offset {start + cut})",
            position=cut,
            length=size - cut,
            expect=observe(seg.path, cut, size - cut),
            details={**_partition_ids(part), "start_offset": start, "log_end_offset": start + cut, "valid_records_cut": dropped},
        )
    )


def _plan_holes(layout: str, plan: RecoverPlan, part: Partition, root: Path) -> None:
    """Live segments before the last hole (or overlap) leave the live log."""
    segs = part.segments
    breaks = [i for i in range(1, len(segs)) if segs[i - 1].start_offset + (segs[i - 1].size or 0) != segs[i].start_offset]
    if not breaks:
        return
    b = breaks[-1]
    prev, nxt = segs[b - 1], segs[b]
    expected = prev.start_offset + (prev.size or 0)
    what = (
        f"offsets {expected}..{nxt.start_offset - 1} are in no live segment"
        if nxt.start_offset > expected
        else (f"{nxt.name} overlaps {prev.name} by {expected - nxt.start_offset} bytes")
    )
    moved = segs[:b]
    total = sum(s.size or 0 for s in moved)
    how = "renamed to .meta.arc (MetaQ's archive name, ignored at load)" if layout == "metaq" else "deleted (kept in the quarantine)"
    plan.needs_force.append(f"{part.name}: {len(moved)} segment(s) before offset {nxt.start_offset} ({total} bytes) are {how}: consumers can no longer fetch them")
    for seg in moved:
        reason = f'{part.name}: {what}; the broker refuses the partition ("The following segments don\'t validate"): the live log starts at {nxt.name}'
        if layout == "metaq" and seg.size:
            target = seg.path.with_name(segnames.metaq_archive_name(seg.name, compress=False))
            plan.add(
                Step(
                    "archive-segment",
                    relative(root, seg.path),
                    reason + "; archived",
                    expect={**observe(seg.path), "files": {relative(root, target): observe(target)}},
                    details={"to": relative(root, target), **_partition_ids(part), "start_offset": seg.start_offset, "size": seg.size},
                )
            )
        else:
            plan.add(
                Step(
                    "delete",
                    relative(root, seg.path),
                    reason + ("; an empty segment" if not seg.size else ""),
                    expect=observe(seg.path),
                    details={**_partition_ids(part), "start_offset": seg.start_offset, "size": seg.size},
                )
            )


# --- apply ----------------------------------------------------------------------------------------------


def apply_custom(step: Step, ctx: ApplyContext) -> None:
    if step.action != "archive-segment":
        raise StoreLayoutError(f"unknown {ctx.plan.layout} plan action {step.action!r}", path=resolve(ctx.root, step.path))
    source = resolve(ctx.root, step.path)
    target = resolve(ctx.root, step.details["to"])
    # undo (entries restored last first): the archive goes, the segment comes back, then any
    # archive the rename replaced
    if target.exists():
        ctx.quarantine.keep_file(target)
    ctx.quarantine.keep_file(source)
    ctx.quarantine.record_created(target)
    ctx.mutator.rename(source, target)


def quarantine_root_for(plan: RecoverPlan) -> Path:
    """``mqtool-quarantine`` beside the data dir (never inside it: the loaders would refuse a
    directory they cannot parse as ``<topic>-<partition>``)."""
    base = plan.facts.get("data_dir") if plan.facts.get("kind") == "partition" else None
    return default_quarantine_root(Path(base) if base else Path(plan.root))


def apply_legacy(plan: RecoverPlan, *, quarantine_root: Path | None = None, force: bool = False, verify: bool = True, jobs: int = 1) -> ApplyResult:
    """Apply a Jafka/MetaQ plan, then validate the result."""
    from mqtool.ops.validate import ValidateOptions
    from mqtool.ops.validate.legacy import validate_jafka, validate_metaq

    qroot = Path(quarantine_root) if quarantine_root is not None else quarantine_root_for(plan)
    result = apply_plan(plan, custom=apply_custom, quarantine_root=qroot, force=force, broker_lock=None, command="recover")
    if verify:
        fn = validate_jafka if plan.layout == "jafka" else validate_metaq
        report = fn(plan.root, ValidateOptions(jobs=jobs))
        result.verification = report
        if report.failed:
            result.notes.append(f"the recovered {plan.layout} store still has validation errors that recover does not repair (see `mqtool validate {plan.root}`)")
    return result


__all__ = ["RecoverOptions", "apply_custom", "apply_legacy", "plan_jafka", "plan_metaq", "quarantine_root_for"]
