"""The report as one self-contained HTML page: Jinja2 templates shipped with the package
(``templates/report.html.j2``, autoescape on), charts drawn by matplotlib (Agg backend) as
inline SVG with text kept as text (``svg.fonttype = 'none'``).  Geometry (left / width
percentages) comes computed in the model (``mqtool.ops.report``); markup lives in the template.

Raises ``UnsupportedFormatError`` naming ``pip install 'mqtool[report]'`` when Jinja2 or
matplotlib is not installed."""

from __future__ import annotations

import datetime as dt
import io
from typing import TYPE_CHECKING, Any

from mqtool.errors import UnsupportedFormatError

if TYPE_CHECKING:
    from mqtool.ops.report import Report

INSTALL_HINT = "the HTML report needs Jinja2 and matplotlib: pip install 'mqtool[report]'"


def require() -> tuple[Any, Any]:
    try:
        import jinja2
        import matplotlib
    except ImportError:
        raise UnsupportedFormatError(INSTALL_HINT) from None
    return jinja2, matplotlib


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    start = text.find("<svg")  # drop the XML prolog and doctype: the SVG is inline
    return text[start:] if start >= 0 else text


def charts(report: Report, matplotlib: Any) -> dict[str, str]:
    """Inline SVG charts: bytes written per hour (or day) over the store's lifetime, the disk-full forecast."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 8, "svg.hashsalt": "mqtool"}):
        fig, ax = plt.subplots(figsize=(6, 1.8))
        if report.hourly:
            hours = [dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc) for ms, _ in report.hourly]
            ax.bar(
                hours,  # type: ignore[arg-type]
                [b for _, b in report.hourly],
                width=report.bucket_ms / 86_400_000,
                color="#4a78b5",
            )
        per = "hour" if report.bucket_ms == 3_600_000 else "day" if report.bucket_ms == 86_400_000 else f"{report.bucket_ms // 3_600_000} h"
        ax.set_ylabel(f"bytes / {per}")
        ax.set_title(f"bytes written per {per} over the store's lifetime ({report.time_source}, UTC)")
        fig.autofmt_xdate()
        out["hourly"] = _svg(fig)
        plt.close(fig)
        f = report.forecast
        fig, ax = plt.subplots(figsize=(6, 1.2))
        total = f.get("filesystem_total") or 0
        avail = f.get("filesystem_available") or 0
        if total:
            used = total - avail
            ax.barh([0], [used], color="#c0504d")
            ax.barh([0], [avail], left=[used], color="#9bbb59")
            ax.axvline(total * float(f.get("threshold") or 1.0), color="black", linestyle="--")
        ax.set_yticks([])
        ax.set_title(f.get("forecast") or "disk-full forecast: no write rate or disk figures")
        out["forecast"] = _svg(fig)
        plt.close(fig)
    return out


def _time(ms: int | None, utc: bool) -> str:
    if ms is None:
        return "-"
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return (t if utc else t.astimezone()).strftime("%Y-%m-%d %H:%M:%S%z")


def render_html(report: Report, *, utc: bool = False) -> str:
    """The page for ``report``."""
    jinja2, matplotlib = require()
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mqtool.ops.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["time"] = lambda ms: _time(ms, utc)
    return str(env.get_template("report.html.j2").render(r=report, charts=charts(report, matplotlib)))
