"""Coercing mqtool's plain parameter values without pydantic.

typer (0.26 and later) coerces the value of every parameter that is not a flag through a pydantic
``TypeAdapter`` it builds when the command runs (``typer._coercion.RuntimeParam``): importing
pydantic and building the adapters costs ~70 ms, more than ``mqtool info`` spends reading a store.
Most of mqtool's parameters are plain: a ``str``, a ``Path`` or a ``str`` enum.  For those,
``PlainParam`` coerces a command-line string with typer's own helpers, the ones its adapters
call (``coerce_cli_choice`` for an enum, ``coerce_cli_path`` given a ``Path``), so the value is
the one typer's adapter returns; any other type, and any value those helpers refuse, goes to
typer's own coercion, so error messages stay typer's.

``plain_coercion`` installs it on a command's parameters (``cli/main.py``'s ``Command.parse_args``,
typer's ``cls`` hook).  It relies on typer's ``RuntimeParam`` contract (``_runtime_param``,
``type_descriptor``); with a typer without it nothing is installed and typer coerces as before.
``tests/cli/test_coercion.py`` holds the values equal to typer's.
"""

import enum
from pathlib import Path
from typing import Any

try:  # typer >= 0.26: the vendored click and the runtime coercion contract
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
except ImportError:  # pragma: no cover - depends on the installed typer
    RuntimeParam = None  # type: ignore[assignment,misc]


def _plain(annotation: Any, info: Any) -> bool:
    """A type ``PlainParam`` coerces as typer does: ``str``, ``Path``, a ``str`` enum (no custom
    parser, no path-type or dash handling)."""
    if getattr(info, "parser", None) is not None:
        return False
    if annotation is str:
        return True
    if annotation is Path:
        return getattr(info, "path_type", None) is None and not getattr(info, "allow_dash", False)
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum) and issubclass(annotation, str)


if RuntimeParam is not None:

    class PlainParam(RuntimeParam):
        """typer's coercion of a plain value, without pydantic (see the module docstring)."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            annotation = self.annotation
            if isinstance(value, str):
                try:
                    if annotation is str:
                        return value
                    if annotation is Path:
                        return coerce_cli_path(Path(value), self.parameter_info, path_type=Path, param=param, ctx=ctx)
                    return coerce_cli_choice(value, choices=tuple(annotation), case_sensitive=self.parameter_info.case_sensitive, ctx=ctx)
                except Exception:  # typer's own coercion says what is wrong, in its words
                    pass
            elif isinstance(value, annotation):
                return value
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)


def plain_coercion(params: list[Any]) -> None:
    """Give each plain parameter of ``params`` that typer has not coerced yet a ``PlainParam``."""
    if RuntimeParam is None:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", "absent") is not None:
            continue
        if descriptor.file_annotation is None and _plain(descriptor.annotation, descriptor.parameter_info):
            param._runtime_param = PlainParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
