"""File access for the data sources: local paths and any filesystem pyarrow can open.

A local path is read through ``store.files.ReadOnlyFile`` (``pread``, size fixed at open).  A
URI (``scheme://...``: ``file://``, ``hdfs://``, ``s3://``, ``gs://``, ...) goes through
``pyarrow.fs``; ``ArrowFile`` has the same ``pread`` / ``size`` / ``path`` interface, so the
walkers in ``store`` and ``formats`` run unchanged on either.

Paths may hold glob characters (``*``, ``?``, ``[...]``) in any component; they are expanded
against the filesystem's listing, never by the shell.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from typing import Any

from mqtool.errors import StoreIOError, StoreLayoutError
from mqtool.store.files import ReadOnlyFile

_MAGIC = "*?["


def is_uri(path: str) -> bool:
    head, sep, _ = path.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").replace(".", "").isalnum() and "/" not in head


class ArrowFile:
    """A file of a pyarrow filesystem, read with ``read_at`` (``ReadOnlyFile``'s interface)."""

    def __init__(self, uri: str) -> None:
        from pyarrow import fs as pafs

        self.path = uri
        try:
            filesystem, inner = pafs.FileSystem.from_uri(uri)
            self._file = filesystem.open_input_file(inner)
            self.size = self._file.size()
        except (OSError, ValueError) as exc:
            raise StoreIOError(str(exc), path=uri) from None

    def pread(self, position: int, size: int) -> bytes:
        size = max(0, min(size, self.size - position))
        if size == 0:
            return b""
        try:
            raw = self._file.read_at(size, position)  # pyarrow's Buffer or bytes
            data: bytes = raw if isinstance(raw, bytes) else raw.to_pybytes()
        except OSError as exc:
            raise StoreIOError(str(exc), path=self.path, position=position) from None
        if len(data) < size:
            raise StoreIOError("file shrank while being read", path=self.path, position=position + len(data))
        return data

    def read_all(self, limit: int = 64 << 20) -> bytes:
        if self.size > limit:
            raise StoreLayoutError("file too large to read at once", path=self.path, expected=f"at most {limit} bytes", found=f"{self.size} bytes")
        return self.pread(0, self.size)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ArrowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


AnyFile = ReadOnlyFile | ArrowFile


def open_file(path: str) -> AnyFile:
    return ArrowFile(path) if is_uri(path) else ReadOnlyFile(path)


class Entry:
    """One name in a directory listing."""

    __slots__ = ("path", "name", "is_dir", "size")

    def __init__(self, path: str, name: str, is_dir: bool, size: int) -> None:
        self.path = path
        self.name = name
        self.is_dir = is_dir
        self.size = size


def _split_uri(uri: str) -> tuple[Any, str, str]:
    """The pyarrow FileSystem of ``uri`` (untyped: pyarrow ships no types), the path inside it,
    and the URI's prefix before that path."""
    from pyarrow import fs as pafs

    filesystem, inner = pafs.FileSystem.from_uri(uri)
    base = uri.split("?", 1)[0]
    prefix = base[: len(base) - len(inner)] if base.endswith(inner) else base.split("://", 1)[0] + "://"
    return filesystem, inner, prefix


def stat_path(path: str) -> Entry | None:
    """What ``path`` is (None when it does not exist)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not is_uri(path):
        try:
            st = os.stat(path)
        except OSError:
            return None
        return Entry(path, name, stat.S_ISDIR(st.st_mode), st.st_size)
    from pyarrow import fs as pafs

    filesystem, inner, _ = _split_uri(path)
    info = filesystem.get_file_info(inner)
    if info.type == pafs.FileType.NotFound:
        return None
    return Entry(path, name, info.type == pafs.FileType.Directory, info.size or 0)


def join(parent: str, name: str) -> str:
    return parent.rstrip("/") + "/" + name if is_uri(parent) else os.path.join(parent, name)


def listdir(path: str) -> list[Entry]:
    """The entries of directory ``path``, sorted by name (empty when it is not a directory)."""
    if not is_uri(path):
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return []
        out = []
        for name in names:
            full = os.path.join(path, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            out.append(Entry(full, name, stat.S_ISDIR(st.st_mode), st.st_size))
        return out
    from pyarrow import fs as pafs

    filesystem, inner, prefix = _split_uri(path)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, recursive=False))
    except (OSError, FileNotFoundError):
        return []
    out = [Entry(prefix + i.path, i.base_name, i.type == pafs.FileType.Directory, i.size or 0) for i in infos]
    return sorted(out, key=lambda e: e.name)


def expand(pattern: str) -> list[str]:
    """``pattern`` itself when it names something, else its glob matches (sorted)."""
    if not any(c in pattern for c in _MAGIC):
        return [pattern] if stat_path(pattern) is not None else []
    head, rest = pattern.split("://", 1) if is_uri(pattern) else ("", pattern)
    head = head + "://" if head else ""
    parts = rest.split("/")
    first = next(i for i, part in enumerate(parts) if any(c in part for c in _MAGIC))
    root = head + "/".join(parts[:first])
    roots = [root if root not in ("", head) else (head + "/" if rest.startswith("/") else head or ".")]
    for part in parts[first:]:
        if not part:
            continue
        nxt: list[str] = []
        for root in roots:
            if any(c in part for c in _MAGIC):
                nxt.extend(e.path for e in listdir(root) if fnmatch.fnmatchcase(e.name, part))
            elif stat_path(join(root, part)) is not None:
                nxt.append(join(root, part))
        roots = nxt
    if not head and not rest.startswith("/"):
        roots = [r[2:] if r.startswith("./") else r for r in roots]
    return sorted(set(roots))
