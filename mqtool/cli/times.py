"""Times for people (``iso_ms``) and times from people (``parse_time``: ``--since``, ``--until``,
``--begin``, ``--end``, ``--timestamp``)."""

from __future__ import annotations

import datetime as _dt
import re

import typer


def iso_ms(ms: int | None) -> str | None:
    """Local-time ISO rendering of a millisecond timestamp (``-`` style None passes through)."""
    if ms is None:
        return None
    try:
        return _dt.datetime.fromtimestamp(ms / 1000).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return str(ms)


_DIGITS = re.compile(r"^-?\d+$")


def parse_time(text: str | None, option: str) -> int | None:
    """``--since/--until``: milliseconds since the epoch, or ISO-8601 (local time when no zone)."""
    if text is None:
        return None
    value = text.strip()
    if _DIGITS.match(value):
        ms = int(value)
    else:
        try:
            ms = int(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            raise typer.BadParameter(
                f"expected milliseconds since the epoch or an ISO-8601 time, found {text!r}", param_hint=option
            ) from None
    if ms < 0:  # before 1970: no store holds such a time (Kafka's -1/-2 are ListOffsets codes, not times)
        raise typer.BadParameter(f"expected a time at or after 1970-01-01, found {text!r}", param_hint=option)
    return ms
