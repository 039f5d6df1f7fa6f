"""``mqtool.cli.coercion``: str, Path and enum parameters are coerced without pydantic, to the
values typer's own (pydantic) coercion gives; anything else, and every refused value, is typer's."""

from __future__ import annotations

import typer
from typer._coercion import build_runtime_param

from mqtool.cli import coercion, main
from tests.conftest import FIXTURES

SAMPLES = ["table", "JSON", "jsonl", "kafka", "rocketmq", "xml", "", "-", str(FIXTURES / "rocketmq-store"), "no/such/dir", "0"]


def _params():
    root = main._click_command()
    stack = [root]
    while stack:
        command = stack.pop()
        if isinstance(command, typer.core.TyperGroup):
            stack.extend(command.commands.values())
            continue
        for param in command.params:
            yield command.name, param


def _outcome(runtime, value, param, ctx):
    try:
        return "ok", runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # the message typer prints
        return type(exc).__name__, getattr(exc, "message", str(exc))


def test_plain_parameters_coerce_as_typer_does():
    plain = 0
    for name, param in _params():
        descriptor = param.type_descriptor
        if not coercion._plain(descriptor.annotation, descriptor.parameter_info) or descriptor.file_annotation is not None:
            continue
        plain += 1
        ours = coercion.PlainParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
        theirs = build_runtime_param(descriptor)
        ctx = typer.Context(main._click_command())
        for value in SAMPLES:
            assert _outcome(ours, value, param, ctx) == _outcome(theirs, value, param, ctx), (name, param.name, value)
    assert plain >= 10


def test_info_installs_plain_coercion_on_its_parameters():
    info = main._click_command().commands["info"]
    for param in info.params:
        param._runtime_param = None
    coercion.plain_coercion(info.params)
    kinds = {param.name: type(param._runtime_param).__name__ for param in info.params if param._runtime_param is not None}
    assert kinds == {"path": "PlainParam", "layout": "PlainParam", "fmt": "PlainParam"}
