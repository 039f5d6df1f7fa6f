"""``mqtool recover``: show the recovery plan; act only with --apply; keep every byte it cuts."""

import dataclasses
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqtool.cli.common import broker_settings, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import INT, BrokerConfigOpt, BrokerVersionOpt, FormatOpt, JsonlOpt, JsonOpt, LayoutOpt, OutputFormat, flag
from mqtool.cli.render import markup

if TYPE_CHECKING:
    from rich.console import Console

    from mqtool.ops.recover import ApplyResult, RecoverPlan


def recover(
    path: Annotated[Path | None, typer.Argument(help="The store to recover (not needed with --undo).")] = None,
    apply: Annotated[bool, flag("--apply", help="Execute the plan (default: only show it).")] = False,
    mode: Annotated[str, typer.Option("--mode", help="RocketMQ: auto (from the abort file), normal or abnormal recovery.")] = "auto",
    full: Annotated[bool, flag("--full", help="Kafka: recover every segment, not only those after the recovery point.")] = False,
    rebuild_cq: Annotated[bool, flag("--rebuild-cq", help="RocketMQ: rebuild ConsumeQueues from the CommitLog.")] = False,
    queue: Annotated[list[str] | None, typer.Option("--queue", metavar="<str>...", help="With --rebuild-cq: only TOPIC/QUEUE_ID (repeatable).")] = None,
    rebuild_index: Annotated[bool, flag("--rebuild-index", help="Rebuild every index file from the data.")] = False,
    quarantine: Annotated[Path | None, typer.Option("--quarantine", help="Where cut bytes are kept (default: mqtool-quarantine/ beside the store).")] = None,
    force: Annotated[
        bool, flag("--force", help="Apply even if the broker holds its lock, the plan cuts valid records after a broken one, or it leaves errors it cannot fix.")
    ] = False,
    verify: Annotated[bool, flag("--verify/--no-verify", help="Validate the store after applying (abort is kept if it fails).")] = True,
    plan_out: Annotated[Path | None, typer.Option("--plan-out", help="Also write the plan as JSON to this file.")] = None,
    from_plan: Annotated[Path | None, typer.Option("--from-plan", help="Apply this saved plan (re-checked) instead of planning.")] = None,
    undo: Annotated[Path | None, typer.Option("--undo", help="Restore what a run quarantined: the run's manifest.json.")] = None,
    config: BrokerConfigOpt = None,
    broker_version: BrokerVersionOpt = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, metavar=INT, help="Parallel processes for the verification.")] = None,
    layout: LayoutOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Bring a store to the state its broker reaches on a clean start: torn tails cut, dirty
    derived files truncated or rebuilt.  Prints the plan and exits 1 when there is work (or damage
    it leaves alone, named in a note or as an error it cannot fix), 0 when none; --apply executes exactly that plan after re-checking every file, quarantining every
    byte first (`--undo MANIFEST` puts them back)."""
    from mqtool.layouts import detect_layout
    from mqtool.ops.recover import load_plan, recoverer, undo_manifest
    from mqtool.ops.validate import default_jobs

    out = renderer(fmt, as_json, as_jsonl)
    if undo is not None:
        restored = undo_manifest(undo, force=force)
        doc = {"undone": str(undo), "restored": [dataclasses.asdict(r) for r in restored]}
        out.document(doc, lambda c: c.print(f"restored {len(restored)} item(s) from {undo}"))
        return ExitCode.OK
    if from_plan is not None:
        plan = load_plan(from_plan)
        _plan_fn, apply_fn, _options_cls = recoverer(plan.layout)
    else:
        if path is None:
            raise typer.BadParameter("give the store PATH (or --undo MANIFEST)")
        layout_name = detect_layout(path, layout)
        plan_fn, apply_fn, options_cls = recoverer(layout_name)
        fields = {f.name for f in dataclasses.fields(options_cls)}
        wanted = {
            "mode": mode,
            "full": full,
            "rebuild_cq": rebuild_cq,
            "queues": tuple(queue or ()),
            "rebuild_index": rebuild_index,
            "broker_version": broker_version,
        }
        unsupported = [name for name, value in wanted.items() if value not in (False, (), "auto", None) and name not in fields]
        if unsupported:
            raise typer.BadParameter(f"{', '.join('--' + u.replace('_', '-') for u in unsupported)} do not apply to the {layout_name} layout")
        if "mode" in fields and mode not in ("auto", "normal", "abnormal"):
            raise typer.BadParameter("--mode is auto, normal or abnormal")
        if queue and not rebuild_cq:
            raise typer.BadParameter("--queue chooses the queues of --rebuild-cq: give --rebuild-cq too")
        for q in queue or ():
            topic, _, qid = q.rpartition("/")
            if not topic or not qid.isdigit():
                raise typer.BadParameter(f"expected TOPIC/QUEUE_ID (e.g. TopicTest/0), found {q!r}", param_hint="--queue")
        cfg = broker_settings(config)
        sizes = cfg.store_sizes()
        wanted.update({k: v for k, v in sizes.items() if v is not None and k in fields})
        wanted.update({"version_hints": cfg.version_hints, "config_path": str(config) if config is not None else None})
        if cfg.message_index_enable is not None:
            wanted["message_index_enable"] = cfg.message_index_enable
        plan = plan_fn(path, options_cls(**{k: v for k, v in wanted.items() if k in fields}))
    if quarantine is not None and quarantine.resolve().is_relative_to(Path(plan.root).resolve()):
        # the broker would load it as data: RocketMQ refuses a commitlog/ holding a directory,
        # Kafka a log dir holding one that is no partition
        raise typer.BadParameter(f"expected a directory outside the store {plan.root}, found {quarantine} inside it", param_hint="--quarantine")
    if plan_out is not None:
        plan_out.write_text(json.dumps(plan.to_dict(), indent=2) + "\n")
    # damage recover sees but leaves alone (a Kafka segment the broker would split): exit 1 even with no work
    unrepaired = bool(plan.facts.get("unrepaired")) or bool(plan.unfixable)
    if not apply:
        out.document(plan.to_dict(), lambda c: render_plan(c, plan))
        return ExitCode.FINDINGS if plan.has_work or unrepaired else ExitCode.OK
    if not plan.has_work:
        out.document({"applied": [], "manifest": None, "plan": plan.to_dict()}, lambda c: _render_nothing(c, plan))
        return ExitCode.FINDINGS if unrepaired else ExitCode.OK
    result = apply_fn(plan, quarantine_root=quarantine, force=force, verify=verify, jobs=jobs or default_jobs())
    out.document(result.to_dict(), lambda c: render_result(c, result))
    for note in result.notes:
        out.warn(note)
    failed = result.verification is not None and getattr(result.verification, "failed", False)
    return ExitCode.FINDINGS if failed else ExitCode.OK


def _render_nothing(console: "Console", plan: "RecoverPlan") -> None:
    console.print("nothing to recover" + (f", but {_unfixable_count(plan)} it cannot fix remain" if plan.unfixable else ""))
    for note in plan.notes:
        console.print(f"note: {note}")
    _render_unfixable(console, plan)


def _finding_line(f: dict[str, Any]) -> str:
    position = f.get("position")
    return f"{f['severity']} {f['code']} {f['path']}:{position if position is not None else '-'}: {f['message']}"


def _unfixable_count(plan: "RecoverPlan") -> str:
    """What the plan cannot fix, counted by severity: "1 error(s)", "2 warning(s)", "1 error(s) and 2 warning(s)"."""
    errors = sum(1 for f in plan.unfixable if f.get("severity") == "error")
    others = len(plan.unfixable) - errors
    parts = ([f"{errors} error(s)"] if errors else []) + ([f"{others} warning(s)"] if others else [])
    return " and ".join(parts)


def _render_unfixable(console: "Console", plan: "RecoverPlan") -> None:
    """The errors the plan leaves: named before --apply, which then needs --force."""
    if not plan.unfixable:
        return
    fails = any(f.get("severity") == "error" for f in plan.unfixable)
    consequence = "; the store would still fail validation" if fails else "; validate names them after recover too"
    console.print(markup("[bold]cannot fix[/bold] ({}{}):", _unfixable_count(plan), consequence))
    for f in plan.unfixable:
        console.print(markup("  {}", _finding_line(f)))


def _render_broker(console: "Console", plan: "RecoverPlan") -> None:
    """The broker version the plan models, and where its recovery starts."""
    broker = plan.facts.get("broker")
    if not broker:
        return
    more = f"; {', '.join(broker['evidence'])}" if broker.get("evidence") else ""
    restart = plan.facts.get("restart")
    if plan.layout == "kafka" and restart:
        drops = restart["drops"]
        console.print(
            markup(
                "broker modelled: Kafka {} ({}{}); its restart: {} recovery, reads {} byte(s) of .log, cuts {} byte(s) ({} record(s)) and deletes {} segment(s)",
                broker["broker_version"],
                broker["source"],
                more,
                restart["recovery"],
                restart["scan_bytes"],
                drops["bytes"],
                drops["records"],
                len(drops["files_deleted"]),
            ),
            overflow="fold",
        )
        return
    start = plan.facts.get("scan_start_file")
    console.print(
        markup(
            "broker modelled: RocketMQ {} ({}{}); its {} recovery starts at {}",
            broker["broker_version"],
            broker["source"],
            more,
            plan.mode,
            f"commitlog/{start} (commitlog offset {plan.facts.get('scan_start_offset')})" if start else "no CommitLog file",
        ),
        overflow="fold",
    )


def render_plan(console: "Console", plan: "RecoverPlan") -> None:
    import humanize

    if not plan.has_work:
        ends = f" (valid data ends at {plan.valid_end})" if plan.valid_end is not None else ""  # None: one end per partition (facts)
        console.print(f"{plan.layout} store {plan.root}: nothing to recover{ends}")
        for note in plan.notes:
            console.print(f"note: {note}")
        _render_broker(console, plan)
        _render_unfixable(console, plan)
        return
    from rich.padding import Padding
    from rich.text import Text

    # the verdict first: what the plan does, then one block per step (file and range whole on
    # one line, the reason wrapped under it)
    console.print(
        Text.assemble(
            ("PLAN", "bold yellow"),
            f": {len(plan.steps)} step(s) for {plan.layout} store {plan.root} ({plan.mode} mode); "
            + (f"valid data ends at {plan.valid_end}; " if plan.valid_end is not None else "")
            + f"{humanize.naturalsize(plan.bytes_cut, binary=True)} cut (all quarantined), {plan.files_deleted} file(s) deleted, "
            f"{plan.records_dropped} valid record(s) dropped" + (f"; {_unfixable_count(plan)} it cannot fix" if plan.unfixable else ""),
        )
    )
    console.print()
    for i, s in enumerate(plan.steps, 1):
        rng = ""
        if s.position is not None and s.length is not None:
            rng = f"  {s.position}+{humanize.naturalsize(s.length, binary=True)}"
        elif s.action == "delete" and s.expect.get("size") is not None:
            rng = f"  whole file ({humanize.naturalsize(s.expect['size'], binary=True)})"
        console.print(Text.assemble(f"{i:>3}. ", (s.action, "bold"), f"  {s.path}{rng}"), overflow="fold")
        console.print(Padding(Text(s.reason), (0, 0, 0, 5), expand=False), overflow="fold")
    for note in plan.notes:
        console.print(f"note: {note}")
    _render_broker(console, plan)
    _render_unfixable(console, plan)
    if plan.needs_force:
        console.print(markup("[bold]--force required[/bold]: {}", "; ".join(plan.needs_force)))
    force = plan.needs_force or plan.unfixable
    console.print("run again with --apply" + (" --force" if force else "") + " to execute this plan")


def render_result(console: "Console", result: "ApplyResult") -> None:
    console.print(f"applied {len(result.applied)} step(s) to {result.plan.root}")
    if result.manifest:
        # each on a line of its own, never wrapped: a path and a command to copy whole
        console.print(f"quarantine manifest: {result.manifest}", soft_wrap=True, markup=False, highlight=False)
        console.print(f"undo: mqtool recover --undo {shlex.quote(str(result.manifest))}", soft_wrap=True, markup=False, highlight=False)
    report: Any = result.verification  # validate's report (ApplyResult holds it untyped)
    if report is not None:
        counts = report.counts
        verdict = "FAILED" if report.failed else "OK"
        console.print(f"verification: {verdict} ({counts['error']} error(s), {counts['warning']} warning(s))")
        for finding in report.findings:
            if finding.level.value in ("error", "warning"):
                console.print(markup("  {}", _finding_line(finding.to_dict())))
        if getattr(report, "truncated", False):
            console.print("  (more findings: see `mqtool validate`)")
