"""``mqtool bench flush``'s presentation: progress bars, tables, the terminal chart (drawn with rich:
a latency CDF and p99 against throughput per mode) and ``--plot FILE.png`` through matplotlib (the
optional ``plot`` extra)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import humanize
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mqtool.cli.options import OutputFormat
from mqtool.cli.render import Renderer, markup
from mqtool.errors import UnsupportedFormatError
from mqtool.ops import bench as ops_bench

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
COLOURS = ["red", "green", "blue", "magenta", "cyan", "yellow", "bright_red", "bright_green", "bright_blue", "bright_magenta", "bright_cyan"]


class ProgressBars(ops_bench.BenchProgress):
    """One bar per mode on stderr (a terminal, table output only)."""

    def __init__(self, out: Renderer, count: int) -> None:
        self.out = out
        self.count = count
        self.index = 0
        self.enabled = not out.quiet and out.fmt is OutputFormat.table and out.err_console.is_terminal
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> ProgressBars:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[unit]}"),
                TimeElapsedColumn(),
                console=self.out.err_console,
                transient=True,
            )
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def start(self, mode: str, total: int, unit: str) -> None:
        self.index += 1
        if self.bar is not None:
            self.tasks[mode] = self.bar.add_task(f"[{self.index}/{self.count}] {mode}", total=total, unit=unit)

    def update(self, mode: str, done: int) -> None:
        if self.bar is not None and mode in self.tasks:
            self.bar.update(self.tasks[mode], completed=done)

    def finish(self, mode: str) -> None:
        if self.bar is not None and mode in self.tasks:
            self.bar.remove_task(self.tasks.pop(mode))


# --- table and terminal chart ------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.2f} ms"
    return f"{value * 1000:.0f} µs"


def _num(ms: float) -> str:
    """Milliseconds with three significant digits (0.0234 -> 0.0234, 32.72 -> 32.7, 1234 -> 1,234)."""
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3g}"


def render_bench(console: Console, doc: dict[str, Any], *, chart: bool = True) -> None:
    duration = f"{doc['duration_s']:g} s" if doc["duration_s"] is not None else f"{humanize.intcomma(doc['messages'])} messages"
    title = (
        f"bench flush: {duration} per mode, {doc['producers']} producer(s), {humanize.naturalsize(doc['size'], binary=True)} bodies, "
        f"--io {doc['io']}, in {doc['directory']}"
    )
    console.print(title)
    speed = Table(title="throughput, and append latency in ms (submit to acknowledgement)", title_justify="left", box=box.SIMPLE_HEAD)
    speed.add_column("mode", no_wrap=True)
    for col in ("msg/s", "MB/s", "p50", "p99", "p99.9", "max"):
        speed.add_column(col, justify="right", no_wrap=True)
    safety = Table(title="fsyncs, and the durability window: acknowledged but not yet flushed", title_justify="left", box=box.SIMPLE_HEAD)
    safety.add_column("mode", no_wrap=True)
    for col in ("fsyncs", "avg fsync", "max bytes", "max msgs", "max ms"):
        safety.add_column(col, justify="right", no_wrap=True)
    for m in doc["modes"]:
        lat = m["latency_ms"]
        w = m["durability_window"]
        name = m["mode"] + (" (interrupted)" if m["interrupted"] else "")
        speed.add_row(
            name,
            humanize.intcomma(round(m["messages_per_s"])),
            f"{m['bytes_per_s'] / 1e6:.1f}",
            _num(lat["p50"]),
            _num(lat["p99"]),
            _num(lat["p999"]),
            _num(lat["max"]),
        )
        row = [
            name,
            humanize.intcomma(m["fsyncs"]),
            _ms(m["fsync_avg_ms"]),
            humanize.naturalsize(w["max_bytes"], binary=True) if w["max_bytes"] else "0",
            humanize.intcomma(w["max_messages"]),
            _ms(w["max_ms"]) if w["max_ms"] else "0",
        ]
        safety.add_row(*row)
    console.print(speed)
    console.print(safety)
    checked = [m for m in doc["modes"] if m["validation"] is not None]
    if checked:
        bad = [f"{m['mode']} ({m['validation']['error']} error(s))" for m in checked if not m["validation"]["ok"]]
        if bad:
            console.print(markup("[red]validate FAILED[/red] for {}", ", ".join(bad)))
        else:
            console.print(f"validate: the {len(checked)} written store(s) are clean")
    timeouts = [f"{m['mode']}: {m['flush_timeouts']}" for m in doc["modes"] if m["flush_timeouts"]]
    if timeouts:
        console.print(f"flush timeouts (FLUSH_DISK_TIMEOUT): {', '.join(timeouts)}")
    console.print("a power loss can take up to the window: acknowledged messages the disk does not hold yet")
    if chart and doc["modes"]:
        console.print(render_chart(doc["modes"]))


def _scale(value: float, lo: float, hi: float, cells: int, log: bool) -> int:
    if log:
        value, lo, hi = math.log10(max(value, 1e-9)), math.log10(max(lo, 1e-9)), math.log10(max(hi, 1e-9))
    if hi <= lo:
        return 0
    return max(0, min(cells - 1, round((value - lo) / (hi - lo) * (cells - 1))))


def _grid_plot(
    series: list[tuple[str, str, list[tuple[float, float]]]],
    *,
    width: int,
    height: int,
    xlog: bool,
    ylog: bool,
    xlabel: str,
    ylabel: str,
    fmt_x: Callable[[float], str],
    fmt_y: Callable[[float], str],
) -> Text:
    xs = [x for _, _, pts in series for x, _ in pts]
    ys = [y for _, _, pts in series for _, y in pts]
    text = Text()
    if not xs:
        return text
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), min(ys), max(ys)
    if xlog:
        x_lo = max(x_lo, 1e-6)
    grid: list[list[tuple[str, str] | None]] = [[None] * width for _ in range(height)]
    for symbol, colour, pts in series:
        for x, y in pts:
            col = _scale(x, x_lo, x_hi, width, xlog)
            row = height - 1 - _scale(y, y_lo, y_hi, height, ylog)
            grid[row][col] = (symbol, colour)
    label_w = max(len(fmt_y(y_hi)), len(fmt_y(y_lo)), len(ylabel))
    text.append(f"{ylabel:>{label_w}}\n")
    for r, cells in enumerate(grid):
        label = fmt_y(y_hi) if r == 0 else fmt_y(y_lo) if r == height - 1 else ""
        text.append(f"{label:>{label_w}} │")
        for cell in cells:
            if cell is None:
                text.append(" ")
            else:
                text.append(cell[0], style=cell[1])
        text.append("\n")
    text.append(" " * label_w + " └" + "─" * width + "\n")
    left, right = fmt_x(x_lo), fmt_x(x_hi)
    text.append(" " * (label_w + 2) + left + " " * max(1, width - len(left) - len(right)) + right + "\n")
    text.append(" " * (label_w + 2) + f"{xlabel:^{width}}\n")
    return text


def render_chart(modes: list[dict[str, Any]], width: int = 64, height: int = 12) -> Text:
    """A latency CDF per mode and p99 latency against throughput, drawn with characters."""
    keyed = [(SYMBOLS[i % len(SYMBOLS)], COLOURS[i % len(COLOURS)], m) for i, m in enumerate(modes)]
    text = Text()
    text.append("\nappend latency CDF (x: latency, log scale; y: share of appends)\n", style="bold")
    cdf = [(s, c, [(x, y * 100) for x, y in m["latency_cdf"] if x > 0]) for s, c, m in keyed]
    text.append_text(_grid_plot(cdf, width=width, height=height, xlog=True, ylog=False, xlabel="latency", ylabel="%", fmt_x=_ms, fmt_y=lambda v: f"{v:.0f}%"))
    text.append("\np99 latency vs throughput (x: messages/s; y: p99, log scale)\n", style="bold")
    scatter = [(s, c, [(m["messages_per_s"], max(m["latency_ms"]["p99"], 1e-6))]) for s, c, m in keyed if m["messages"]]
    text.append_text(
        _grid_plot(scatter, width=width, height=height, xlog=False, ylog=True, xlabel="messages/s", ylabel="p99", fmt_x=lambda v: humanize.intcomma(round(v)), fmt_y=_ms)
    )
    for i, (s, c, m) in enumerate(keyed):
        text.append(f" {s}", style=f"bold {c}")
        text.append(f" {m['mode']:<22}")
        if i % 3 == 2 or i == len(keyed) - 1:
            text.append("\n")
    return text


# --- PNG (matplotlib, optional) ------------------------------------------------------------------


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UnsupportedFormatError("--plot needs matplotlib: pip install 'mqtool[plot]'", expected="matplotlib installed", found="not installed") from None


def render_png(doc: dict[str, Any], path: Path) -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5))
    for m in doc["modes"]:
        if not m["messages"]:
            continue
        left.scatter([m["messages_per_s"]], [m["latency_ms"]["p99"]], s=40)
        left.annotate(m["mode"], (m["messages_per_s"], m["latency_ms"]["p99"]), fontsize=8, xytext=(4, 4), textcoords="offset points")
        xs = [p[0] for p in m["latency_cdf"]]
        ys = [p[1] * 100 for p in m["latency_cdf"]]
        right.step(xs, ys, where="post", label=m["mode"])
    left.set(xlabel="messages/s", ylabel="p99 append latency (ms)", yscale="log", title="throughput vs latency")
    left.grid(True, which="both", alpha=0.3)
    right.set(xlabel="append latency (ms)", ylabel="appends at or below (%)", xscale="log", title="latency CDF")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=7)
    fig.suptitle(f"mqtool bench flush: --io {doc['io']}, {doc['producers']} producer(s), {doc['size']}-byte bodies")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
