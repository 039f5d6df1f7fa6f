"""Times for people (``iso_ms``) and times from people (``parse_time``: ``--since``, ``--until``,
``--begin``, ``--end``, ``--timestamp``).

A time is printed as ISO-8601 with its zone (the machine's local zone, or UTC with ``--utc``),
so a report read elsewhere says which instant it means.  A time given without a zone is refused
with a hint (``2023-11-14T22:13:20`` could be any of 24 instants), unless ``--utc`` says to read
it as UTC; milliseconds since the epoch are always accepted."""

from __future__ import annotations

import datetime as _dt
import re
from typing import overload

import typer


def zone() -> _dt.tzinfo | None:
    """The zone times print in: UTC with ``--utc``, else the machine's (None: local)."""
    from mqtool.cli import settings

    return _dt.timezone.utc if settings.utc() else None


def iso_ms(ms: int | None, *, timespec: str = "milliseconds") -> str | None:
    """ISO-8601 rendering of a millisecond timestamp with its zone offset (``-`` style None
    passes through)."""
    if ms is None:
        return None
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).astimezone(zone()).isoformat(timespec=timespec)
    except (OverflowError, OSError, ValueError):
        return str(ms)


_DIGITS = re.compile(r"^-?\d+$")


@overload
def parse_time(text: str, option: str) -> int: ...
@overload
def parse_time(text: None, option: str) -> None: ...
@overload
def parse_time(text: str | None, option: str) -> int | None: ...


def parse_time(text: str | None, option: str) -> int | None:
    """``--since/--until``: milliseconds since the epoch, or ISO-8601 with a zone (``Z``,
    ``+08:00``); without one only under ``--utc`` (read as UTC)."""
    if text is None:
        return None
    value = text.strip()
    if _DIGITS.match(value):
        ms = int(value)
    else:
        try:
            when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise typer.BadParameter(f"expected milliseconds since the epoch or an ISO-8601 time, found {text!r}", param_hint=option) from None
        if when.tzinfo is None:
            if zone() is None:
                raise typer.BadParameter(
                    f"expected a time with its zone, found {text!r}: add one ({value}Z for UTC, {value}+08:00 ...) or pass --utc to read it as UTC",
                    param_hint=option,
                )
            when = when.replace(tzinfo=_dt.timezone.utc)
        ms = int(when.timestamp() * 1000)
    if ms < 0:  # before 1970: no store holds such a time (Kafka's -1/-2 are ListOffsets codes, not times)
        raise typer.BadParameter(f"expected a time at or after 1970-01-01, found {text!r}", param_hint=option)
    return ms
