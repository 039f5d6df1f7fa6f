"""recover: plan first, act only with --apply, keep every byte it cuts, never make things worse.

A plan is data: a list of ``Step`` objects, each naming its action, the file, the byte range, why,
and the *preconditions* observed while planning (size, mtime, CRC-32 of the affected region).
``apply_plan`` executes exactly those steps, in order, through one ``Mutator`` (fsync, atomic
replace, fault injection) after re-checking every precondition (all of them before the first
step, so a changed store is refused untouched); before a byte is cut or a file removed it is
copied into the run's quarantine with a manifest.

Generic actions (every layout):

* ``cut``: keep ``[position, position+length)`` then overwrite it with zeros (the file keeps its
  size: RocketMQ files are pre-allocated at full size);
* ``truncate``: keep ``[position, size)`` then shrink the file to ``position`` (Kafka, Jafka, MetaQ);
* ``delete``: keep the whole file, then delete it;
* ``rename``: rename ``path`` to ``details["to"]`` (keeping the replaced target, if any);
* ``patch``: keep ``[position, position+length)`` then write ``details["hex"]`` (as many bytes) there;
* ``remove``: delete without keeping (``clean``: retention is the point; the plan lists it).

Layout actions (e.g. RocketMQ ``dispatch-cq``, ``rebuild-index``, ``write-checkpoint``,
``remove-abort``) are executed by the layout module's ``apply_custom``.

Idempotence: a plan is computed from the store as it is, so rerunning ``recover --apply`` after a
crash plans only what is left and converges to the same final store; the first run's quarantine
still holds every byte it removed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast, get_args

from mqtool.errors import BrokerRunningError, PlanChangedError, StoreIOError, StoreLayoutError
from mqtool.layouts import Layout, for_layout
from mqtool.store.lock import ExclusiveLock, probe_record_lock
from mqtool.store.mutate import Faults, Mutator
from mqtool.store.quarantine import Quarantine, Restored, default_quarantine_root, region_crc, undo

#: Every action a plan step takes (recover's and clean's plans); a plan read back
#: (``--from-plan``) with any other is refused before anything is applied.
StepAction = Literal[
    "archive",
    "archive-segment",
    "begin-cq-rebuild",
    "create-segment",
    "cut",
    "delete",
    "dispatch-cq",
    "end-cq-rebuild",
    "extend",
    "finish-index-swap",
    "patch",
    "rebuild-index",
    "remove",
    "remove-abort",
    "rename",
    "rename-swap",
    "truncate",
    "write-checkpoint",
    "write-leader-epochs",
]
STEP_ACTIONS: frozenset[str] = frozenset(get_args(StepAction))


@dataclass
class Step:
    action: StepAction
    path: str
    reason: str
    position: int | None = None
    length: int | None = None
    expect: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "path": self.path,
            "position": self.position,
            "length": self.length,
            "reason": self.reason,
            "expect": self.expect,
            "details": self.details,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Step:
        action = d["action"]
        if action not in STEP_ACTIONS:
            raise ValueError(f"step action {action!r} is none of {', '.join(sorted(STEP_ACTIONS))}")
        return cls(cast(StepAction, action), d["path"], d.get("reason", ""), d.get("position"), d.get("length"), d.get("expect", {}), d.get("details", {}))


@dataclass
class RecoverPlan:
    layout: str
    root: str
    mode: str
    steps: list[Step] = field(default_factory=list)
    valid_end: int | None = None  # layout-specific: commitlog offset / log end offset
    records_dropped: int = 0  # valid records the plan cuts (they follow a broken one)
    bytes_cut: int = 0
    files_deleted: int = 0
    needs_force: list[str] = field(default_factory=list)  # reasons --force is required
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    #: error findings (``Finding.to_dict()``) the store would still have after the plan: what it
    #: cannot fix, named before ``--apply`` (which then needs ``--force``)
    unfixable: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_work(self) -> bool:
        return bool(self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "root": self.root,
            "mode": self.mode,
            "has_work": self.has_work,
            "valid_end": self.valid_end,
            "records_dropped": self.records_dropped,
            "bytes_cut": self.bytes_cut,
            "files_deleted": self.files_deleted,
            "needs_force": self.needs_force,
            "notes": self.notes,
            "facts": self.facts,
            "unfixable": self.unfixable,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RecoverPlan:
        plan = cls(d["layout"], d["root"], d["mode"], [Step.from_dict(s) for s in d["steps"]], d.get("valid_end"))
        plan.records_dropped = d.get("records_dropped", 0)
        plan.bytes_cut = d.get("bytes_cut", 0)
        plan.files_deleted = d.get("files_deleted", 0)
        plan.needs_force = list(d.get("needs_force", []))
        plan.notes = list(d.get("notes", []))
        plan.facts = dict(d.get("facts", {}))
        plan.unfixable = list(d.get("unfixable", []))
        return plan

    def add(self, step: Step) -> None:
        if step.action in ("cut", "truncate") and step.length:
            self.bytes_cut += step.length
        if step.action in ("delete", "remove"):
            self.files_deleted += 1
            self.bytes_cut += step.expect.get("size", 0) or 0
        self.steps.append(step)


def load_plan(path: Path) -> RecoverPlan:
    try:
        return RecoverPlan.from_dict(json.loads(Path(path).read_text()))
    except OSError as exc:
        raise StoreIOError.from_os_error(exc, path) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreLayoutError(path=path, expected="a plan written by `mqtool recover --json`", found=f"{type(exc).__name__}: {exc}") from None


# --- preconditions ------------------------------------------------------------------------------


def observe(path: Path, position: int | None = None, length: int | None = None) -> dict[str, Any]:
    """What a step expects to find: size and mtime of the file (and the region's CRC)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {"exists": False}
    expect: dict[str, Any] = {"exists": True, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if position is not None and length is not None:
        expect["crc32"] = region_crc(path, position, length)
    return expect


def check_expect(step: Step, root: Path) -> None:
    """Refuse (``PlanChangedError``) when a file the step acts on is not as it was planned:
    the step's own file, and every file of ``expect["files"]`` (steps acting on several)."""
    _check_file(root, step.path, step.expect, step.position, step.length)
    for name, expect in step.expect.get("files", {}).items():
        _check_file(root, name, expect, None, None)


def _check_file(root: Path, name: str, expect: Mapping[str, Any], position: int | None, length: int | None) -> None:
    path = resolve(root, name)
    region = "crc32" in expect
    now = observe(path, position if region else None, length if region else None)
    for key in ("exists", "size", "mtime_ns", "crc32"):
        if key in expect and now.get(key) != expect[key]:
            raise PlanChangedError(
                f"{name} changed since the plan was made; plan again",
                path=path,
                position=position,
                expected=f"{key} {expect[key]}",
                found=f"{key} {now.get(key)}",
            )


def resolve(root: Path, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(root) / p


def relative(root: Path, path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


# --- apply --------------------------------------------------------------------------------------


@dataclass
class ApplyContext:
    root: Path
    mutator: Mutator
    quarantine: Quarantine
    plan: RecoverPlan
    done: list[Step] = field(default_factory=list)


@dataclass
class ApplyResult:
    plan: RecoverPlan
    applied: list[Step]
    manifest: str | None
    verification: object | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": [s.to_dict() for s in self.applied],
            "manifest": self.manifest,
            "verified": None if self.verification is None else not getattr(self.verification, "failed", True),
            "verification": verification_dict(self.verification),
            "notes": self.notes,
            "plan": self.plan.to_dict(),
        }


def verification_dict(report: object | None) -> dict[str, Any] | None:
    """The validation after an apply as data: verdict, counts and every finding it still sees
    (a count alone does not say what the broker would refuse)."""
    if report is None:
        return None
    findings = getattr(report, "findings", [])
    return {
        "ok": not getattr(report, "failed", True),
        "counts": dict(getattr(report, "counts", {})),
        "truncated": bool(getattr(report, "truncated", False)),
        "findings": [f.to_dict() for f in findings],
    }


def apply_plan(
    plan: RecoverPlan,
    *,
    custom: Callable[[Step, ApplyContext], None] | None = None,
    quarantine_root: Path | None = None,
    force: bool = False,
    broker_lock: str | None = None,
    command: str = "recover",
    before_step: Callable[[Step, ApplyContext], bool] | None = None,
    force_flag: str = "--force",
) -> ApplyResult:
    """Execute ``plan`` under mqtool's exclusive lock.  ``before_step`` may veto a step (return
    False) — used to keep ``abort`` when verification failed.  ``force_flag`` is the caller's name
    for ``force`` (``clean`` calls it ``--live``), so messages name a flag the command has."""
    root = Path(plan.root)
    if plan.needs_force and not force:
        raise PlanChangedError(
            "the plan cuts more than a torn tail: " + "; ".join(plan.needs_force) + f" (every byte is quarantined; pass {force_flag} to go ahead)",
            path=root,
        )
    qroot = Path(quarantine_root) if quarantine_root else default_quarantine_root(root)
    with ExclusiveLock(root, what=f"the store {root}"):
        if broker_lock:
            pid = probe_record_lock(root / broker_lock)
            if pid is not None and not force:
                raise BrokerRunningError(
                    f"the broker (pid {pid or 'unknown'}) holds {broker_lock}: stop it before changing its files, or pass {force_flag}",
                    path=root / broker_lock,
                )
        mutator = Mutator(root, extra_roots=(qroot,), faults=Faults.from_env())
        quarantine = Quarantine(mutator, root, qroot, command)
        ctx = ApplyContext(root, mutator, quarantine, plan)
        for step in plan.steps:  # all of them first: a changed file refuses the plan before any step
            check_expect(step, root)
        for step in plan.steps:
            if before_step is not None and not before_step(step, ctx):
                continue
            check_expect(step, root)
            run_step(step, ctx, custom)
            ctx.done.append(step)
        manifest = str(quarantine.manifest_path) if quarantine.entries else None
        return ApplyResult(plan, ctx.done, manifest)


def _region(step: Step, path: Path) -> tuple[int, int]:
    """The byte range (position, length) a range action (cut, truncate, extend, patch) acts on: every
    planner sets both; a plan file without them was not written by mqtool."""
    if step.position is None or step.length is None:
        raise StoreLayoutError(
            f"a {step.action} step without its byte range", path=path, expected="position and length", found=f"position {step.position}, length {step.length}"
        )
    return step.position, step.length


def run_step(step: Step, ctx: ApplyContext, custom: Callable[[Step, ApplyContext], None] | None) -> None:
    path = resolve(ctx.root, step.path)
    if step.action == "cut":
        position, length = _region(step, path)
        ctx.quarantine.keep_range(path, position, length)
        ctx.mutator.zero_range(path, position, length)
    elif step.action == "truncate":
        position, length = _region(step, path)
        ctx.quarantine.keep_range(path, position, length)
        ctx.mutator.truncate(path, position)
    elif step.action == "extend":  # zeros appended from position (the file's size) on: nothing goes
        position, length = _region(step, path)
        ctx.quarantine.record_extended(path, position, length)
        ctx.mutator.zero_range(path, position, length)
    elif step.action == "delete":
        if path.exists():
            ctx.quarantine.keep_file(path)
            ctx.mutator.delete(path)
    elif step.action == "remove":
        # retention: the file goes without a copy (the plan and report say exactly what went)
        ctx.mutator.delete(path)
    elif step.action == "patch":  # bytes rewritten in place (a field recomputed): the old ones kept first
        position, length = _region(step, path)
        ctx.quarantine.keep_range(path, position, length)
        ctx.mutator.write_at(path, position, bytes.fromhex(step.details["hex"]))
    elif step.action == "rename":
        target = resolve(ctx.root, step.details["to"])
        if target.exists():
            ctx.quarantine.keep_file(target)
        ctx.mutator.rename(path, target)
    elif custom is not None:
        custom(step, ctx)
    else:
        raise StoreLayoutError(f"unknown plan action {step.action!r}", path=path)


def undo_manifest(manifest: Path, *, force: bool = False) -> list[Restored]:
    """``recover --undo``: restore everything a run quarantined (under the store's lock)."""
    from mqtool.store.quarantine import load_manifest

    doc = load_manifest(manifest)
    store = Path(doc["store"])
    with ExclusiveLock(store, what=f"the store {store}"):
        return undo(manifest, lambda root, qdir: Mutator(root, extra_roots=(qdir,), faults=Faults.from_env()))


class PlanRecover(Protocol):
    """A layout's planner: ``plan_<layout>(path, options)``, ``options`` an instance of the layout's
    own ``RecoverOptions``."""

    def __call__(self, path: str | Path, options: Any, /) -> RecoverPlan: ...


class ApplyRecover(Protocol):
    """A layout's ``apply_<layout>(plan, ...)``: ``apply_plan`` with the layout's actions, then validation."""

    def __call__(self, plan: RecoverPlan, /, *, quarantine_root: Path | None = ..., force: bool = ..., verify: bool = ..., jobs: int = ...) -> ApplyResult: ...


#: layout -> (plan function, apply function, options class: each layout has its own dataclass)
Recoverer = tuple[PlanRecover, ApplyRecover, type[Any]]


def recoverers() -> dict[Layout, Recoverer]:
    """layout -> (plan function(path, options), apply function(plan, **kw), options class).
    Imported here, not at the top: each recoverer imports this module."""
    from mqtool.ops.recover import kafka as recover_kafka
    from mqtool.ops.recover import legacy as recover_legacy
    from mqtool.ops.recover import rocketmq as recover_rocketmq

    return {
        Layout.ROCKETMQ: (recover_rocketmq.plan_rocketmq, recover_rocketmq.apply_rocketmq, recover_rocketmq.RecoverOptions),
        Layout.KAFKA: (recover_kafka.plan_kafka, recover_kafka.apply_kafka, recover_kafka.RecoverOptions),
        Layout.JAFKA: (recover_legacy.plan_jafka, recover_legacy.apply_legacy, recover_legacy.RecoverOptions),
        Layout.METAQ: (recover_legacy.plan_metaq, recover_legacy.apply_legacy, recover_legacy.RecoverOptions),
    }


def recoverer(layout: str) -> Recoverer:
    """``(plan_fn, apply_fn, options_cls)`` of a layout (UnsupportedFormatError when it has none)."""
    return for_layout(recoverers(), layout, "recover")
