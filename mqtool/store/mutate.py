"""The one file layer through which every destructive command changes a store.

Every mutation (write bytes, zero a range, delete, rename, replace a file, fsync) goes through a
``Mutator``, so that

* crash safety is uniform: new files are written as temp + fsync + ``os.replace`` + directory
  fsync; in-place writes are followed by fsync of the file;
* faults can be injected for the tests: ``Faults`` makes the N-th mutation raise ``ENOSPC``/
  ``EIO`` or SIGKILL the process.  The CLI reads ``MQTOOL_FAULT_INJECT`` (``kill@N``,
  ``enospc@N``, ``eio@N``) so the fault matrix can run the real command; nothing else reads it;
* paths are confined: a mutation outside the store root (or through a symlink leading out of it)
  is refused.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mqtool.errors import StoreIOError, StoreLayoutError

_T = TypeVar("_T")


@dataclass
class Faults:
    """Inject a fault at the ``at``-th mutation (1-based): ``kill``, ``enospc`` or ``eio``."""

    kind: str | None = None
    at: int = 0

    @classmethod
    def from_env(cls) -> Faults:
        spec = os.environ.get("MQTOOL_FAULT_INJECT", "")
        if not spec or "@" not in spec:
            return cls()
        kind, _, n = spec.partition("@")
        try:
            return cls(kind.strip().lower(), int(n))
        except ValueError:
            return cls()


class Mutator:
    """Performs (and counts) the mutations of one destructive run under ``root``."""

    def __init__(self, root: Path, *, extra_roots: tuple[Path, ...] = (), faults: Faults | None = None) -> None:
        self.root = Path(root).resolve()
        self.allowed = (self.root, *(Path(p).resolve() for p in extra_roots))
        self.faults = faults or Faults()
        self.count = 0

    # --- guards --------------------------------------------------------------------------------
    def _confine(self, path: Path) -> Path:
        path = Path(path)
        resolved = path.parent.resolve() / path.name
        if not any(resolved == r or r in resolved.parents for r in self.allowed):
            raise StoreLayoutError("refusing to modify a path outside the store", path=path, expected=f"a path under {self.root}", found=str(resolved))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return path
        if stat.S_ISLNK(st.st_mode):
            raise StoreLayoutError("refusing to modify through a symbolic link", path=path, expected="a regular file", found="a symlink")
        return path

    def _tick(self, what: str, path: Path) -> None:
        self.count += 1
        f = self.faults
        if f.kind and self.count == f.at:
            if f.kind == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            code = {"enospc": errno.ENOSPC, "eio": errno.EIO}.get(f.kind)
            if code is not None:
                raise StoreIOError(f"{os.strerror(code)} (injected at mutation {self.count}: {what})", path=path)

    def _os(self, fn: Callable[..., _T], path: Path, *args: Any) -> _T:
        try:
            return fn(*args)
        except OSError as exc:
            raise StoreIOError.from_os_error(exc, path) from None

    # --- operations ----------------------------------------------------------------------------
    def write_at(self, path: Path, position: int, data: bytes) -> None:
        """Overwrite bytes in place (the file keeps its size unless the write extends it)."""
        path = self._confine(path)
        self._tick("write", path)
        fd = self._os(os.open, path, path, os.O_WRONLY)
        try:
            view = memoryview(data)
            done = 0
            while done < len(view):
                done += self._os(os.pwrite, path, fd, view[done:], position + done)
            self._os(os.fsync, path, fd)
        finally:
            os.close(fd)

    def zero_range(self, path: Path, position: int, length: int) -> None:
        chunk = 1 << 20
        done = 0
        while done < length:
            n = min(chunk, length - done)
            self.write_at(path, position + done, bytes(n))
            done += n

    def truncate(self, path: Path, size: int) -> None:
        path = self._confine(path)
        self._tick("truncate", path)
        fd = self._os(os.open, path, path, os.O_WRONLY)
        try:
            self._os(os.ftruncate, path, fd, size)
            self._os(os.fsync, path, fd)
        finally:
            os.close(fd)

    def delete(self, path: Path) -> None:
        path = self._confine(path)
        self._tick("delete", path)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreIOError.from_os_error(exc, path) from None
        self.fsync_dir(path.parent)

    def rename(self, src: Path, dst: Path) -> None:
        src, dst = self._confine(src), self._confine(dst)
        self._tick("rename", src)
        self._os(os.replace, src, src, dst)
        self.fsync_dir(dst.parent)
        if src.parent != dst.parent:
            self.fsync_dir(src.parent)

    def replace_file(self, path: Path, data: bytes) -> None:
        """Atomically give ``path`` the content ``data``: temp + fsync + replace + dir fsync."""
        path = self._confine(path)
        tmp = path.with_name(f".mqtool-tmp-{path.name}")
        self.create_file(tmp, data)
        self.rename(tmp, path)

    def create_file(self, path: Path, data: bytes = b"", size: int | None = None) -> None:
        """Write a new file (fsynced); ``size`` extends it with zeros (sparse)."""
        path = self._confine(path)
        self._tick("create", path)
        fd = self._os(os.open, path, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            done = 0
            while done < len(view):
                done += self._os(os.write, path, fd, view[done:])
            if size is not None and size > len(data):
                self._os(os.ftruncate, path, fd, size)
            self._os(os.fsync, path, fd)
        finally:
            os.close(fd)
        self.fsync_dir(path.parent)

    def copy_file(self, src: Path, dst: Path, *, position: int = 0, length: int | None = None) -> None:
        """Copy ``src`` (or ``length`` bytes of it from ``position``) to a new ``dst``, fsynced,
        streaming in 1 MiB chunks."""
        dst = self._confine(dst)
        self._tick("copy", dst)
        try:
            with open(src, "rb") as fin, open(dst, "wb") as fout:
                fin.seek(position)
                left = length
                while left is None or left > 0:
                    chunk = fin.read(1 << 20 if left is None else min(1 << 20, left))
                    if not chunk:
                        break
                    fout.write(chunk)
                    if left is not None:
                        left -= len(chunk)
                fout.flush()
                os.fsync(fout.fileno())
        except OSError as exc:
            raise StoreIOError.from_os_error(exc, dst) from None
        self.fsync_dir(dst.parent)

    def rmdir(self, path: Path) -> None:
        """Remove an empty directory."""
        path = self._confine(path)
        self._tick("rmdir", path)
        self._os(os.rmdir, path, path)
        self.fsync_dir(path.parent)

    def mkdir(self, path: Path) -> None:
        path = self._confine(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreIOError.from_os_error(exc, path) from None
        self.fsync_dir(path.parent)

    @staticmethod
    def fsync_dir(path: Path) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
