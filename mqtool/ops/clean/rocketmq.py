"""clean for RocketMQ stores (``DefaultMessageStore.CleanCommitLogService``, ``CleanConsumeQueueService``, ``IndexService.deleteExpiredFile``).

The broker's rules, and where mqtool's default (``policy="safe"``) differs:

| rule | broker (``policy="broker"``) | safe (default) |
|---|---|---|
| when | hour in ``deleteWhen`` ("04"), or disk above ``diskMaxUsedSpaceRatio`` (75 %), or a manual request | every run (cron decides when); ``--delete-when`` restores the hour gate |
| which CommitLog files | oldest first while expired (``mtime + fileReservedTime`` 72 h), never the last file, stop at the first unexpired one | same, and never the active file (the last one holding data) |
| disk above ``diskSpaceCleanForciblyRatio`` (85 %) | unexpired files go too (``cleanFileForciblyEnable``) | reported; unexpired files go only with ``--force-when-full`` |
| per run | at most ``deleteFileBatchMax`` 10, ``deletePhysicFilesInterval`` 100 ms apart | same (``--max-delete``, ``--interval-ms``) |
| then | ConsumeQueue files (never the last) whose last unit points below the new CommitLog min offset; IndexFiles (never the last) whose endPhyOffset is below it | same |
| unconsumed messages | deleted | kept (``--allow-unconsumed`` deletes them, naming each group): no CommitLog file holding a message some group (config/consumerOffset.json) has not consumed |
"""  # noqa: E501 -- a markdown table row cannot be wrapped (for a string ruff reads the noqa at its closing line)

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from mqtool.errors import MqError
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.ops.clean import HOUR_MS, DiskProbe, statvfs_usage
from mqtool.ops.recover import RecoverPlan, Step, observe, relative
from mqtool.store import rocketmq as rmq
from mqtool.store.model import consumers as model_consumers


@dataclass(frozen=True)
class CleanOptions:
    policy: str = "safe"  # "safe" or "broker"
    file_reserved_hours: float = 72.0
    delete_when: str | None = None  # "04" or "04;05"; None: no hour gate (safe) / "04" (broker)
    disk_max_used_ratio: int = 75
    clean_forcibly_ratio: int = 85
    warning_ratio: int = 90
    force_when_full: bool = False
    clean_file_forcibly_enable: bool = True  # broker policy: cleanFileForciblyEnable
    manual: bool = False
    batch_max: int = 10
    max_delete: int | None = None
    protect_unconsumed: bool = True

    def __post_init__(self) -> None:
        """A value the broker would choke on or never act on is refused here (ValueError naming
        the setting), not left to make a cron job silently delete nothing for ever."""
        if self.file_reserved_hours < 0:
            raise ValueError(f"fileReservedTime (--reserved-hours): expected hours >= 0, found {self.file_reserved_hours:g}")
        if self.delete_when is not None:
            _hours(self.delete_when)
        for name, flag, value in (
            ("diskMaxUsedSpaceRatio", "--disk-max-used", self.disk_max_used_ratio),
            ("diskSpaceCleanForciblyRatio", "--clean-forcibly-ratio", self.clean_forcibly_ratio),
            ("diskSpaceWarningLevelRatio", "", self.warning_ratio),
        ):
            if not 0 <= value <= 100:
                where = f" ({flag})" if flag else ""
                raise ValueError(f"{name}{where}: expected a percentage 0-100, found {value}")


def _hours(spec: str) -> set[int]:
    """deleteWhen's hours: ``"04"`` or ``"04;16"``.  The broker parses each with
    Integer.parseInt (a word throws) and compares it with the hour of day (25 never matches)."""
    hours = set()
    for part in spec.split(";"):
        part = part.strip()
        if not (part.isdigit() and 0 <= int(part) <= 23):
            raise ValueError(f"deleteWhen (--delete-when): expected hours 0-23 separated by ';', found {spec!r}")
        hours.add(int(part))
    return hours


def plan_clean_rocketmq(path: str | Path, options: CleanOptions = CleanOptions(), *, now_ms: int | None = None, probe: DiskProbe = statvfs_usage) -> RecoverPlan:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    store = rmq.open_store(path)
    root = store.root
    plan = RecoverPlan("rocketmq", str(root), f"clean ({options.policy} policy)")
    broker = options.policy == "broker"

    # --- when: time gate, disk space, manual -----------------------------------------------------
    delete_when = options.delete_when if options.delete_when is not None else ("04" if broker else None)
    hour = time.localtime(now_ms / 1000).tm_hour
    time_ok = delete_when is None or hour in _hours(delete_when)
    ratios = []
    for directory in (store.commitlog_dir, store.consumequeue_dir):
        if directory.exists():
            ratios.append(probe(directory).used_ratio)
    ratio = max(ratios) if ratios else 0.0
    space_ok = ratio * 100 > options.disk_max_used_ratio
    clean_immediately = ratio * 100 > options.clean_forcibly_ratio
    plan.facts.update(
        {
            "now_ms": now_ms,
            "disk_used_ratio": round(ratio, 4),
            "time_gate": delete_when,
            "time_ok": time_ok,
            "space_ok": space_ok,
            "clean_immediately": clean_immediately,
            "file_reserved_hours": options.file_reserved_hours,
        }
    )
    if ratio * 100 > options.warning_ratio:
        plan.notes.append(f"disk {ratio:.0%} used, above diskSpaceWarningLevelRatio {options.warning_ratio} %: the broker rejects new messages")
    if not (time_ok or space_ok or options.manual):
        plan.notes.append(f"not the hour to delete (deleteWhen {delete_when}), disk at {ratio:.0%}: nothing is deleted")
        return plan
    force = clean_immediately and ((broker and options.clean_file_forcibly_enable) or options.force_when_full)
    if clean_immediately and not force:
        plan.notes.append(
            f"disk {ratio:.0%} used, above diskSpaceCleanForciblyRatio {options.clean_forcibly_ratio} %: the broker would now delete "
            "unexpired files; pass --force-when-full to do the same"
        )

    # --- which CommitLog files ---------------------------------------------------------------------
    segments = store.commitlog
    if not segments:
        return plan
    candidates = segments[:-1]
    if not broker:
        last_data = max(rmq.last_data_index(segments), 0)
        candidates = segments[: max(0, min(len(segments) - 1, last_data))]
    protected_from, holders = _unconsumed_boundary(store)
    losing: set[str] = set()
    reserved_ms = int(options.file_reserved_hours * HOUR_MS)
    cap = min(options.batch_max, options.max_delete) if options.max_delete is not None else options.batch_max
    deleted: list[rmq.Segment] = []
    for seg in candidates:
        if len(deleted) >= cap:
            plan.notes.append(f"at most {cap} CommitLog file(s) per run (deleteFileBatchMax / --max-delete); run again for more")
            break
        expired = now_ms >= int(seg.mtime * 1000) + reserved_ms
        if not (expired or force):
            break
        if protected_from is not None and seg.base + max(seg.size, 1) > protected_from:
            held = sorted({f"{g} ({t}/{q})" for g, t, q, off in holders if off < seg.base + max(seg.size, 1)})
            if options.protect_unconsumed:
                plan.notes.append(f"{seg.name} and later files hold messages not yet consumed by: {', '.join(held[:10])} (--allow-unconsumed deletes them)")
                plan.facts["protected_by"] = held
                break
            losing.update(held)
        age_h = (now_ms - int(seg.mtime * 1000)) / HOUR_MS
        why = (
            f"expired: last modified {age_h:.1f} h ago (fileReservedTime {options.file_reserved_hours:g} h)"
            if expired
            else (f"disk {ratio:.0%} used (above {options.clean_forcibly_ratio} %): deleted before expiry")
        )
        plan.add(
            Step(
                "remove",
                relative(root, seg.path),
                why,
                expect=observe(seg.path),
                details={"kind": "commitlog", "base_offset": seg.base, "size": seg.size, "mtime": seg.mtime, "offsets": [seg.base, seg.base + seg.size]},
            )
        )
        deleted.append(seg)
    if losing:
        names = sorted(losing)
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        plan.notes.append(f"--allow-unconsumed: deletes messages not yet consumed by: {', '.join(names[:10])}{more}")
        plan.facts["unconsumed_deleted_for"] = names
    # --- ConsumeQueue and IndexFiles follow the CommitLog min offset (also on a run that deletes no
    # CommitLog file: an interrupted earlier run may have left them behind) ----------------------
    new_min = segments[len(deleted)].base
    plan.facts["commitlog"] = {"new_log_start_offset": new_min}

    for topic, qid in store.queues():
        segs = store.cq_segments(topic, qid)
        for seg in segs[:-1]:
            last_offset = _last_unit_offset(seg)
            if last_offset is None or last_offset >= new_min:
                break
            plan.add(
                Step(
                    "remove",
                    relative(root, seg.path),
                    f"ConsumeQueue file of {topic}/{qid} whose last unit points at {last_offset}, below the new CommitLog min {new_min}",
                    expect=observe(seg.path),
                    details={
                        "kind": "consumequeue",
                        "topic": topic,
                        "queue_id": qid,
                        "size": seg.size,
                        "queue_offsets": [seg.base // cqf.CQ_UNIT_SIZE, (seg.base + seg.size) // cqf.CQ_UNIT_SIZE],
                    },
                )
            )
    index_files = store.index_files()
    for p in index_files[:-1]:
        try:
            with rmq.IndexFileView(p) as view:
                end = view.header.end_phy_offset
        except MqError:
            break
        if end >= new_min:
            break
        plan.add(
            Step(
                "remove",
                relative(root, p),
                f"IndexFile whose entries end at {end}, below the new CommitLog min {new_min}",
                expect=observe(p),
                details={"kind": "index", "size": p.stat().st_size, "end_commitlog_offset": end},
            )
        )
    return plan


def _last_unit_offset(seg: rmq.Segment) -> int | None:
    """commitLogOffset of the unit at ``fileSize - 20`` (what ``deleteExpiredFileByOffset`` reads)."""
    unit = rmq.last_cq_unit(seg)
    return unit.commitlog_offset if unit is not None else None


def _unconsumed_boundary(store: rmq.RocketMQStore) -> tuple[int | None, list[tuple[str, str, int, int]]]:
    """The lowest commitlog offset of a message some consumer group has not consumed yet, and
    ``(group, topic, queue, offset)`` for every group position."""
    offsets = model_consumers.load_consumer_offsets(store).value
    if offsets is None:
        return None, []
    holders = []
    for (topic, group), table in offsets.items():
        for qid, offset in table.items():
            unit = rmq.read_cq_unit(store, topic, qid, offset)
            if unit is not None and not unit.unit.is_filler:
                holders.append((group, topic, qid, unit.unit.commitlog_offset))
    if not holders:
        return None, []
    return min(h[3] for h in holders), holders
