"""Locks: probing the broker's own lock read-only, and mqtool's exclusive lock for mutations.

* RocketMQ takes ``FileChannel.tryLock(0, 1)`` on ``<root>/lock`` (a POSIX ``fcntl`` record lock
  on Linux); Kafka takes ``FileChannel.tryLock()`` on ``<logdir>/.lock``.  ``flock`` does not see
  those, so we probe with ``F_GETLK`` on a read-only descriptor: it tests for a conflicting lock
  without taking one and tells the holder's pid.
* mqtool's own lock is ``fcntl.flock`` on ``<root>/.mqtool.lock`` (created on demand), so two
  mutating runs exclude each other without interfering with the broker's record lock.  The file
  is removed when the run ends (unlinked while still locked), so the broker's directory is left
  as it was; a run that locked a file another run has just removed sees that its path no longer
  names the file it holds, and takes the lock again on a fresh one.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from pathlib import Path

from mqtool.errors import LockBusyError, StoreIOError

_FLOCK = struct.Struct("hhqqi4x")  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid

MQTOOL_LOCK_NAME = ".mqtool.lock"


def probe_record_lock(path: Path) -> int | None:
    """Pid holding an fcntl write lock on ``path`` (0 if unknown), or None when free/absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreIOError.from_os_error(exc, path) from None
    try:
        query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        try:
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        except OSError:
            return None
        l_type, _whence, _start, _len, pid = _FLOCK.unpack(answer)
        return None if l_type == fcntl.F_UNLCK else pid
    finally:
        os.close(fd)


class ExclusiveLock:
    """mqtool's own exclusive, non-blocking lock on a store (released on close or exit)."""

    def __init__(self, directory: Path, *, what: str = "this store") -> None:
        self.path = Path(directory) / MQTOOL_LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> ExclusiveLock:
        for _ in range(100):  # each retry means another run removed the file we locked: bounded
            fd = self._try_lock()
            if fd is not None:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return self
        raise LockBusyError(f"the lock file of {self.what} keeps being replaced while this run takes it", path=self.path)

    def _try_lock(self) -> int | None:
        """A locked descriptor on the file ``self.path`` names now, or None when that file was
        removed (or replaced) between the open and the lock."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StoreIOError.from_os_error(exc, self.path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockBusyError(
                    f"another mqtool run holds the lock on {self.what}; try again when it has finished",
                    path=self.path,
                ) from None
            raise StoreIOError.from_os_error(exc, self.path) from None
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            named = None
        held = os.fstat(fd)
        if named is None or (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
            os.close(fd)
            return None
        return fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                self.path.unlink()  # while still locked: no other run holds this file
            except OSError:
                pass  # a read-only or vanished directory: the (empty) lock file stays
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ExclusiveLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
