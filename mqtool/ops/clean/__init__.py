"""clean: retention for every layout, safe under cron.

Plans are ``RecoverPlan`` objects whose steps are ``remove`` (delete a file without keeping it:
retention is the point — the plan and the JSON report say exactly what goes), ``rename`` (Kafka's
``.deleted`` step) and ``archive`` (MetaQ).  Applying takes mqtool's exclusive lock (a second run
exits 75) and deletes oldest first, so a crash at any point leaves a consistent store and a rerun
finishes the job.

Policies default to the upstream broker defaults; the layout modules ``ops.clean.<layout>`` implement them.
The disk-usage probe is injectable so the space rules are testable.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mqtool.layouts import Layout, for_layout

if TYPE_CHECKING:
    from mqtool.ops.recover import RecoverPlan

HOUR_MS = 3_600_000


@dataclass(frozen=True)
class DiskUsage:
    total: int
    free: int  # f_bfree * f_frsize (root included)
    available: int  # f_bavail * f_frsize

    @property
    def used_ratio(self) -> float:
        """RocketMQ ``getDiskPartitionSpaceUsedPercent``: (total-free)/(total-free+usable)."""
        used = self.total - self.free
        denom = used + self.available
        return used / denom if denom > 0 else 0.0


def statvfs_usage(path: Path) -> DiskUsage:
    st = os.statvfs(path)
    return DiskUsage(st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize)


DiskProbe = Callable[[Path], DiskUsage]


class PlanClean(Protocol):
    """A layout's planner: ``plan_clean_<layout>(path, options, now_ms=...)``, ``options`` an instance
    of the layout's own ``CleanOptions`` (RocketMQ's also takes the disk probe, ``probe=``)."""

    def __call__(self, path: str | Path, options: Any, /, *, now_ms: int | None = ...) -> RecoverPlan: ...


#: layout -> (plan function, options class: each layout has its own dataclass)
Cleaner = tuple[PlanClean, type[Any]]


def cleaners() -> dict[Layout, Cleaner]:
    """layout -> (plan function(path, options, now_ms, probe), options class).  Imported here,
    not at the top: the cleaners import this module."""
    from mqtool.ops.clean import kafka as clean_kafka
    from mqtool.ops.clean import legacy as clean_legacy
    from mqtool.ops.clean import rocketmq as clean_rocketmq

    return {
        Layout.ROCKETMQ: (clean_rocketmq.plan_clean_rocketmq, clean_rocketmq.CleanOptions),
        Layout.KAFKA: (clean_kafka.plan_clean_kafka, clean_kafka.CleanOptions),
        Layout.JAFKA: (clean_legacy.plan_clean_jafka, clean_legacy.CleanOptions),
        Layout.METAQ: (clean_legacy.plan_clean_metaq, clean_legacy.CleanOptions),
    }


def cleaner(layout: str) -> Cleaner:
    """``(plan_fn, options_cls)`` of a layout (UnsupportedFormatError when it has none)."""
    return for_layout(cleaners(), layout, "clean")
