"""``mqtool report``: one self-contained HTML page of a store -- the verdict, a map of its logs
with every finding, the recover and clean plans drawn on it, topics with charts, consumer lag."""

from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.common import broker_settings
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import INT, BrokerConfigOpt, BrokerVersionOpt, LayoutOpt, StorePathArg, flag
from mqtool.findings import Severity


def report(
    path: StorePathArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")],
    layout: LayoutOpt = None,
    overwrite: Annotated[bool, flag("--overwrite", help="Replace an existing --out file.")] = False,
    fail_on: Annotated[Severity, typer.Option("--fail-on", help="Exit 1 when a finding has at least this severity (as validate).")] = Severity.error,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, metavar=INT, help="Parallel processes (default: the number of cores).")] = None,
    config: BrokerConfigOpt = None,
    broker_version: BrokerVersionOpt = None,
) -> int:
    """Write an HTML report of the store: verdict, map of logs and findings, recover and clean plans
    (planned, never applied), topics and charts, consumer lag.

    Exit as validate would: 0 when no finding reaches --fail-on, 1 when one does, 3 when PATH is
    not a store, 4 when the report extra (Jinja2, matplotlib) is not installed."""
    from mqtool.cli import settings
    from mqtool.layouts import detect_layout
    from mqtool.ops.validate import default_jobs

    if out.exists() and not overwrite:
        raise typer.BadParameter(f"{out} exists: give --overwrite to replace it, or name another file", param_hint="--out")
    detected = detect_layout(path, layout)
    sizes: dict[str, int | None] = {}
    broker: dict[str, object] = {}
    if broker_version is not None and detected not in ("rocketmq", "kafka"):
        raise typer.BadParameter(f"--broker-version models a RocketMQ or Kafka broker, not a {detected} store's")
    if config is not None:
        if detected != "rocketmq":
            raise typer.BadParameter(f"--config reads a RocketMQ broker.conf, not a {detected} store's settings", param_hint="--config")
        cfg = broker_settings(config)
        sizes = cfg.store_sizes()
        broker = {"version_hints": cfg.version_hints, "config_path": str(config)}
        if cfg.message_index_enable is not None:  # validate and recover judge the index by it
            broker["message_index_enable"] = cfg.message_index_enable
        if cfg.timer_precision_ms is not None:  # validate's timer checks: the wheel's slot width
            sizes["timer_precision_ms"] = cfg.timer_precision_ms
    if broker_version is not None:
        broker["broker_version"] = broker_version
    html, code = build(path, detected, fail_on=fail_on, jobs=jobs or default_jobs(), utc=settings.utc(), sizes=sizes, broker=broker)
    out.write_text(html, encoding="utf-8")
    if not settings.quiet():
        typer.echo(f"report written to {out}", err=True)
    return code


def build(path: Path, layout: str, *, fail_on: Severity, jobs: int, utc: bool, sizes: dict[str, int | None], broker: dict[str, object] | None = None) -> tuple[str, int]:
    """The page and the exit code validate would give (checks mqtool[report] first)."""
    from mqtool.ops.report import gather
    from mqtool.ops.report.html import render_html, require

    require()
    rep = gather(path, str(layout), fail_on=fail_on, jobs=jobs, sizes=sizes, broker=broker)
    return render_html(rep, utc=utc), ExitCode.FINDINGS if rep.exit_code else ExitCode.OK
