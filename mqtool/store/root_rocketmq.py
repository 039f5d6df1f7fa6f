"""Where a RocketMQ store root is, from the names in a directory alone.

Split from ``store.rocketmq`` so that layout detection (``mqtool.layouts``) can ask "is this a
RocketMQ store?" without loading the RocketMQ readers and format decoders: ``mqtool info`` on a
Kafka, Jafka or MetaQ directory asks it first.  The markers are those of upstream
``DefaultMessageStore``'s store root: ``commitlog/``, ``consumequeue/``, ``index/``,
``checkpoint`` and ``config/``."""

from __future__ import annotations

from pathlib import Path

from mqtool.store.files import is_directory, is_regular_file

ROOT_MARKERS = ("commitlog", "consumequeue", "index", "checkpoint", "config")


def is_rocketmq_root(path: Path) -> bool:
    """A RocketMQ store root: a ``commitlog/`` directory, or two of the root markers with a
    ``consumequeue/`` directory or a ``checkpoint`` file."""
    if not is_directory(path):
        return False
    if is_directory(path / "commitlog"):
        return True
    markers = sum(1 for m in ROOT_MARKERS if (path / m).exists())
    return markers >= 2 and (is_directory(path / "consumequeue") or is_regular_file(path / "checkpoint"))


def find_rocketmq_root(path: Path) -> Path | None:
    """The store root for ``path``: the root itself, or a root above a family dir or file."""
    path = Path(path)
    for candidate in [path, *path.parents][:5]:
        if is_rocketmq_root(candidate):
            return candidate
    return None


def is_rocketmq_path(path: Path) -> bool:
    """A RocketMQ store root, or a directory/file inside one."""
    return find_rocketmq_root(Path(path)) is not None
