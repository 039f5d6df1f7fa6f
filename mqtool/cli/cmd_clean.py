"""``mqtool clean``: retention for every layout, safe under cron."""

import dataclasses
import inspect
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqtool.cli.common import metrics_renderer, report_metrics
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import INT, JsonlOpt, JsonOpt, LayoutOpt, MetricsFileOpt, MetricsFormat, MetricsFormatOpt, flag

if TYPE_CHECKING:
    from rich.console import Console

    from mqtool.ops.recover import ApplyContext, RecoverPlan, Step

BROKER_LOCKS = {"rocketmq": "lock", "kafka": ".lock"}


def clean(
    path: Annotated[Path, typer.Argument(help="The store root / log dir to apply retention to.")],
    apply: Annotated[bool, flag("--apply", help="Delete (default: only show the plan; exit 1 when there is work).")] = False,
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help="safe (default: cron decides when; Kafka: the active segment is kept) "
            "or broker (the broker's exact rules; Kafka: the active segment goes too, after a roll).",
        ),
    ] = "safe",
    config: Annotated[
        Path | None, typer.Option("--config", help="The broker's config file (broker.conf / server.properties / server.ini) to read retention settings from.")
    ] = None,
    reserved_hours: Annotated[float | None, typer.Option("--reserved-hours", help="RocketMQ fileReservedTime in hours (72).")] = None,
    delete_when: Annotated[str | None, typer.Option("--delete-when", help='RocketMQ deleteWhen hours, e.g. "04" or "04;16".')] = None,
    disk_max_used: Annotated[int | None, typer.Option("--disk-max-used", help="RocketMQ diskMaxUsedSpaceRatio percent (75).")] = None,
    clean_forcibly: Annotated[int | None, typer.Option("--clean-forcibly-ratio", help="RocketMQ diskSpaceCleanForciblyRatio (85).")] = None,
    force_when_full: Annotated[bool, flag("--force-when-full", help="Above the clean-forcibly ratio, delete unexpired files too (the broker's default).")] = False,
    manual: Annotated[bool, flag("--manual", help="RocketMQ: like mqadmin deleteExpiredCommitLog (ignore the hour gate).")] = False,
    batch_max: Annotated[int | None, typer.Option("--batch-max", min=1, metavar=INT, help="RocketMQ deleteFileBatchMax (10).")] = None,
    retention_hours: Annotated[float | None, typer.Option("--retention-hours", help="Jafka log.retention.hours (168).")] = None,
    retention_bytes: Annotated[
        int | None, typer.Option("--retention-bytes", help="Kafka retention.bytes / Jafka log.retention.size: bytes kept per partition (-1: no size limit).")
    ] = None,
    retention_ms: Annotated[int | None, typer.Option("--retention-ms", help="Kafka retention.ms (604800000 = 7 days; -1: no time limit).")] = None,
    delete_policy: Annotated[
        str | None, typer.Option("--delete-policy", help='MetaQ deletePolicy: "delete,168" (default), "archive,72h" or "archive,72h,true" (zip).')
    ] = None,
    max_delete: Annotated[int | None, typer.Option("--max-delete", min=0, metavar=INT, help="Delete at most this many data files this run.")] = None,
    interval_ms: Annotated[int, typer.Option("--interval-ms", min=0, metavar=INT, help="Pause between data-file deletions (deletePhysicFilesInterval).")] = 100,
    protect_unconsumed: Annotated[
        bool, flag("--protect-unconsumed", help="The default: never delete a file holding messages some consumer group has not consumed.")
    ] = False,
    allow_unconsumed: Annotated[
        bool,
        flag(
            "--allow-unconsumed",
            help="RocketMQ, Kafka: delete files holding messages some consumer group has not consumed (named in the plan); by default they are kept.",
        ),
    ] = False,
    live: Annotated[bool, flag("--live", help="Clean although the broker holds its lock (it keeps deleted files mapped until it restarts).")] = False,
    quiet: Annotated[bool, flag("--quiet", "-q", help="For cron: print nothing but errors.")] = False,
    now: Annotated[int | None, typer.Option("--now", help="Judge ages as of this time (ms since epoch) instead of now.")] = None,
    layout: LayoutOpt = None,
    fmt: MetricsFormatOpt = MetricsFormat.table,
    metrics_file: MetricsFileOpt = None,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
    all_rows: Annotated[bool, flag("--all", help="List every step of a long plan (by default a plan of more than 20 steps shows its first and last ones).")] = False,
) -> int:
    """Apply the store's own retention policy: show what goes, delete only with --apply.

    A second run while one holds the store's lock exits 75 with one line on stderr; a running
    broker (holding its own lock) exits 5 unless --live."""
    import humanize

    from mqtool.layouts import detect_layout
    from mqtool.ops.clean import cleaner
    from mqtool.ops.clean.config import read_policy_file
    from mqtool.ops.recover import apply_plan

    out, as_metrics = metrics_renderer(fmt, as_json, as_jsonl, quiet=quiet)
    layout_name = detect_layout(path, layout)
    plan_fn, options_cls = cleaner(layout_name)
    if protect_unconsumed and allow_unconsumed:
        raise typer.BadParameter("--protect-unconsumed and --allow-unconsumed contradict each other")
    if policy not in ("safe", "broker"):
        raise typer.BadParameter("--policy is safe or broker")
    settings: dict[str, object] = read_policy_file(config, layout_name) if config is not None else {}
    given = {
        "policy": policy,
        "file_reserved_hours": reserved_hours,
        "delete_when": delete_when,
        "disk_max_used_ratio": disk_max_used,
        "clean_forcibly_ratio": clean_forcibly,
        "force_when_full": force_when_full or None,
        "manual": manual or None,
        "batch_max": batch_max,
        "retention_hours": retention_hours,
        "retention_bytes": retention_bytes,
        "retention_ms": retention_ms,
        "delete_policy": delete_policy,
        "max_delete": max_delete,
        "protect_unconsumed": False if allow_unconsumed else (True if protect_unconsumed else None),
    }
    settings.update({k: v for k, v in given.items() if v is not None})
    # a module whose options serve several layouts (Jafka, MetaQ) says which each reads
    fields = set(getattr(inspect.getmodule(plan_fn), "LAYOUT_FIELDS", {}).get(layout_name, ())) or {f.name for f in dataclasses.fields(options_cls)}
    unsupported = sorted(k for k in settings if k not in fields and given.get(k) is not None)
    if unsupported:
        raise typer.BadParameter(f"{', '.join('--' + u.replace('_', '-') for u in unsupported)} do not apply to the {layout_name} layout")
    try:
        options = options_cls(**{k: v for k, v in settings.items() if k in fields})
    except ValueError as exc:  # a value the broker would never act on, given here or in --config
        raise typer.BadParameter(str(exc) + (f" (read from {config})" if config is not None else "")) from None
    plan: RecoverPlan = plan_fn(path, options, now_ms=now)
    if not apply:
        if not quiet and not as_metrics:
            from mqtool.cli.render import paged

            out.document(plan.to_dict(), lambda console: paged(console, lambda c: render_clean_plan(c, plan, all_rows=all_rows)))
        code = ExitCode.FINDINGS if plan.has_work else ExitCode.OK
        report_metrics("clean", plan.to_dict(), code, to_stdout=as_metrics, metrics_file=metrics_file)
        return code
    last_removal = [0.0]

    def pace(step: "Step", ctx: "ApplyContext") -> bool:
        if step.details.get("kind") in ("commitlog", "segment", "log") and interval_ms:
            wait = last_removal[0] + interval_ms / 1000 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            last_removal[0] = time.monotonic()
        return True

    # a layout's own plan actions (MetaQ's ``archive``) are run by its cleaner module's apply_custom
    custom = getattr(inspect.getmodule(plan_fn), "apply_custom", None)
    result = apply_plan(plan, custom=custom, force=live, broker_lock=BROKER_LOCKS.get(layout_name), command="clean", before_step=pace, force_flag="--live")
    archived = [s.to_dict() for s in result.applied if s.details.get("archive")]
    deleted = [s.to_dict() for s in result.applied if not s.details.get("archive") and s.action == "remove"]
    doc = {"deleted": deleted, "archived": archived, "bytes_freed": plan.bytes_cut, "plan": plan.to_dict()}
    summary = f"deleted {len(deleted)} file(s)" + (f", archived {len(archived)}" if archived else "")
    if not quiet and not as_metrics:
        out.document(doc, lambda c: c.print(f"DONE: {summary}, {humanize.naturalsize(plan.bytes_cut, binary=True)} freed in {plan.root}", highlight=False))
    report_metrics("clean", doc, ExitCode.OK, to_stdout=as_metrics, metrics_file=metrics_file, store=plan.root)
    return ExitCode.OK


def _losing_groups(facts: "dict[str, Any]") -> list[str]:
    """The consumer groups whose unconsumed messages the plan deletes (``--allow-unconsumed``):
    RocketMQ names them store-wide, Kafka per partition (as ``group (topic/queue)`` or ``group``)."""
    named = list(facts.get("unconsumed_deleted_for") or [])
    for part in facts.get("partitions") or []:
        if isinstance(part, dict):
            named.extend(part.get("unconsumed_deleted_for") or [])
    return sorted({str(n).split(" (", 1)[0] for n in named})


def _protected(facts: "dict[str, Any]") -> bool:
    return bool(facts.get("protected_by")) or any(isinstance(p, dict) and p.get("protected_by") for p in facts.get("partitions") or [])


def render_clean_plan(console: "Console", plan: "RecoverPlan", *, all_rows: bool = False) -> None:
    """``PLAN: delete N file(s) (size) ...`` or ``nothing to clean`` first, with the consumer
    groups that would lose unconsumed data; then one line per step (the file whole, its size, the
    reason under it) -- a plan of more than ``ALL_ROWS_UP_TO`` steps shows its first and last
    ones unless ``all_rows`` -- then the notes."""
    import humanize
    from rich.padding import Padding
    from rich.text import Text

    from mqtool.cli.render import ALL_ROWS_UP_TO

    facts = plan.facts
    losing = _losing_groups(facts)
    kept = "; files holding unconsumed messages are kept" if _protected(facts) else ""
    if plan.has_work:
        head = Text.assemble(
            ("PLAN", "bold yellow"),
            f": delete {plan.files_deleted} file(s) ({humanize.naturalsize(plan.bytes_cut, binary=True)}), keep the rest{kept}; ",
            (f"{len(losing)} consumer group(s) would lose unconsumed data", "bold red") if losing else "no consumer group loses unconsumed data",
        )
    else:
        head = Text.assemble(("nothing to clean", "bold green"), kept)
    console.print(head, overflow="fold")
    console.print(Text(f"{plan.layout} store {plan.root}; policy {plan.mode}", style="dim"), overflow="fold")
    if "disk_used_ratio" in facts:
        console.print(f"disk {facts['disk_used_ratio']:.0%} used")
    if losing:
        console.print(Text("losing unconsumed data: " + ", ".join(losing), style="red"), overflow="fold")
    if plan.has_work:
        console.print()
        steps = list(enumerate(plan.steps, 1))
        if not all_rows and len(steps) > ALL_ROWS_UP_TO:
            head_steps, tail_steps = steps[:10], steps[-5:]
        else:
            head_steps, tail_steps = steps, []
        for part, chunk in enumerate((head_steps, tail_steps)):
            if part and chunk:
                console.print(Text(f"  ... {len(steps) - len(head_steps) - len(tail_steps)} more step(s) (--all lists them)", style="dim"))
            for i, s in chunk:
                size = s.details.get("size", s.expect.get("size"))
                size_text = f"  {humanize.naturalsize(size, binary=True)}" if size is not None else ""
                console.print(Text.assemble(f"{i:>3}. ", (s.action, "bold"), f"  {s.path}{size_text}"), overflow="fold")
                console.print(Padding(Text(s.reason), (0, 0, 0, 5), expand=False), overflow="fold")
        console.print()
    for note in plan.notes:
        console.print(Text(f"note: {note}"), overflow="fold")
    if plan.has_work:
        console.print("run with --apply to delete")
