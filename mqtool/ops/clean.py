"""clean: retention for every layout, safe under cron.

Plans are ``RecoverPlan`` objects whose steps are ``remove`` (delete a file without keeping it:
retention is the point — the plan and the JSON report say exactly what goes), ``rename`` (Kafka's
``.deleted`` step) and ``archive`` (MetaQ).  Applying takes mqtool's exclusive lock (a second run
exits 75) and deletes oldest first, so a crash at any point leaves a consistent store and a rerun
finishes the job.

Policies default to the upstream broker defaults; ``ops.clean_<layout>`` modules implement them.
The disk-usage probe is injectable so the space rules are testable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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


#: layout -> (module, plan function(path, options, now_ms, probe))
CLEANERS = {
    "rocketmq": ("mqtool.ops.clean_rocketmq", "plan_clean_rocketmq", "CleanOptions"),
    "kafka": ("mqtool.ops.clean_kafka", "plan_clean_kafka", "CleanOptions"),
    "jafka": ("mqtool.ops.clean_legacy", "plan_clean_jafka", "CleanOptions"),
    "metaq": ("mqtool.ops.clean_legacy", "plan_clean_metaq", "CleanOptions"),
}


def cleaner(layout: str):
    """``(plan_fn, options_cls)`` of a layout (UnsupportedFormatError when it has none)."""
    import importlib

    from mqtool.errors import UnsupportedFormatError

    module, plan_name, options_name = CLEANERS.get(layout, (None, None, None))
    try:
        mod = importlib.import_module(module) if module else None
        if mod is not None:
            return getattr(mod, plan_name), getattr(mod, options_name)
    except (ImportError, AttributeError):
        pass
    raise UnsupportedFormatError(f"`mqtool clean` does not handle the {layout} layout", expected="rocketmq", found=layout)
