"""How far a scan has got: the job's stages, and the store files its reads have finished.

``jobs.run`` reports to a ``Progress``: ``begin`` with the names of its stages, ``stage`` as each
starts, ``files`` while one reads store files.  ``Silent`` draws nothing; ``mqtool scan`` draws
it on a terminal.

Files done are counted by the data sources themselves, since the Python workers that read them
are not this process.  Given the ``progressFile`` option (a local path), a read's planner appends
one JSON line naming the files of every partition it planned (``{"plan": [[file, ...], ...]}``),
and each partition, once read to its end, appends its number (``{"done": 3}``); a file is done
when every partition holding a part of it is.  ``FileTally`` reads that file back.  The file is
local, so this works where the workers run on the driver's machine (``local`` masters); on a
cluster only the stages are shown.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

#: How often the driver looks at a read's progress file (seconds).
POLL_INTERVAL = 0.2


class Progress(Protocol):
    """Where ``jobs.run`` says how far it has got."""

    def begin(self, stages: Sequence[str]) -> None:
        """The stages to come, in order (the first ``stage`` call starts the first of them)."""

    def stage(self, name: str) -> None:
        """The next stage starts."""

    def files(self, done: int, total: int) -> None:
        """The running stage has read ``done`` of its ``total`` store files."""


class Silent:
    """A ``Progress`` that draws nothing."""

    def begin(self, stages: Sequence[str]) -> None:
        pass

    def stage(self, name: str) -> None:
        pass

    def files(self, done: int, total: int) -> None:
        pass


# --- the data sources' side (in the Python workers) ---------------------------------------------


def _append(path: str, line: str) -> None:
    """One ``write`` of one line in append mode: lines from concurrent workers never interleave."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return  # not the driver's machine: progress is best effort, the read goes on
    try:
        os.write(fd, line.encode("utf-8"))
    except OSError:
        pass
    finally:
        os.close(fd)


def record_plan(path: str, files_per_part: Sequence[Sequence[str]]) -> None:
    """The planner's line: the files of each partition, by partition number."""
    _append(path, json.dumps({"plan": [list(files) for files in files_per_part]}, separators=(",", ":")) + "\n")


def record_done(path: str, index: int) -> None:
    """A partition's line, once it has been read to its end."""
    _append(path, json.dumps({"done": index}) + "\n")


# --- the driver's side ------------------------------------------------------------------------


class FileTally:
    """Reads a progress file as it grows: ``poll()`` is (files done, files planned), or None
    before the planner has written its line.  Spark may plan a read more than once; the first
    plan counts.  A partition read twice (a retried task) counts once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._position = 0
        self._pending = b""
        self._parts: list[list[str]] | None = None
        self._remaining: dict[str, int] = {}
        self._finished: set[int] = set()
        self.done = 0

    @property
    def total(self) -> int:
        return len(self._remaining)

    def poll(self) -> tuple[int, int] | None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._position)
                data = handle.read()
        except FileNotFoundError:
            data = b""
        self._position += len(data)
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()  # a line still being written
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # not a line of ours (or an empty one)
            if isinstance(record, dict):
                self._take(record)
        return None if self._parts is None else (self.done, self.total)

    def _take(self, record: dict[str, Any]) -> None:
        if "plan" in record:
            if self._parts is None:
                self._parts = record["plan"]
                for files in self._parts:
                    for name in files:
                        self._remaining[name] = self._remaining.get(name, 0) + 1
            return
        index = record.get("done")
        if self._parts is None or not isinstance(index, int) or index in self._finished or not 0 <= index < len(self._parts):
            return
        self._finished.add(index)
        for name in self._parts[index]:
            self._remaining[name] -= 1
            if self._remaining[name] == 0:
                self.done += 1


class FileWatch:
    """Progress files for the reads of one job, in a temporary directory, and the thread that
    passes each read's files done on to ``progress``."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.directory = tempfile.mkdtemp(prefix="mqtool-scan-progress-")
        self._count = 0

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    @contextlib.contextmanager
    def read(self) -> Iterator[dict[str, str]]:
        """The reader options of one read (``progressFile``), with a thread watching its file
        while the read runs (and a last look when it ends)."""
        self._count += 1
        tally = FileTally(os.path.join(self.directory, f"read-{self._count}.jsonl"))
        stop = threading.Event()

        def report() -> None:
            counts = tally.poll()
            if counts is not None:
                self.progress.files(*counts)

        def watch() -> None:
            while not stop.wait(POLL_INTERVAL):
                report()

        thread = threading.Thread(target=watch, name="mqtool-scan-progress", daemon=True)
        thread.start()
        try:
            yield {"progressFile": tally.path}
        finally:
            stop.set()
            thread.join()
            report()
