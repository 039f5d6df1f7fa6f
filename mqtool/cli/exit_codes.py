"""The one exit-code enum, and the one place exceptions become exit codes."""

from __future__ import annotations

import enum

from mqtool.errors import (
    BrokerRunningError,
    CorruptDataError,
    LockBusyError,
    MqError,
    PlanChangedError,
    StoreIOError,
    StoreLayoutError,
    UnsupportedFormatError,
)


class ExitCode(enum.IntEnum):
    OK = 0
    FINDINGS = 1  # findings at/above --fail-on, corrupt data met, or a plan with work to do
    USAGE = 2
    IO = 3  # I/O error, or the path is not a store
    UNSUPPORTED = 4
    BROKER_RUNNING = 5  # the broker holds its lock: stop it first (retrying will not help)
    INTERNAL = 70  # EX_SOFTWARE: a bug in mqtool
    BUSY = 75  # EX_TEMPFAIL: another run holds the lock
    INTERRUPTED = 130


def exit_code_for(exc: object) -> ExitCode:
    """The exit status a problem stands for: an ``MqError`` by its kind, an ``OSError`` 3, an
    interrupt 130; anything else (another exception, a problem given as text) 70."""
    if isinstance(exc, LockBusyError):
        return ExitCode.BUSY
    if isinstance(exc, BrokerRunningError):
        return ExitCode.BROKER_RUNNING
    if isinstance(exc, UnsupportedFormatError):
        return ExitCode.UNSUPPORTED
    if isinstance(exc, (StoreIOError, StoreLayoutError)):
        return ExitCode.IO
    if isinstance(exc, (CorruptDataError, PlanChangedError)):
        return ExitCode.FINDINGS
    if isinstance(exc, MqError):
        return ExitCode.IO
    if isinstance(exc, OSError):
        return ExitCode.IO
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.INTERNAL
