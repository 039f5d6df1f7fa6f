"""Options shared by every command, and the small helpers commands use to honour them."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from mqtool.cli.render import BodyDecode, OutputFormat, Renderer

FormatOpt = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output format: table for people, json/jsonl for machines.", case_sensitive=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Shorthand for --format json.")]
JsonlOpt = Annotated[bool, typer.Option("--jsonl", help="Shorthand for --format jsonl.")]
DecodeOpt = Annotated[
    BodyDecode,
    typer.Option("--decode", help="How bodies and other bytes are shown.", case_sensitive=False),
]
LayoutOpt = Annotated[
    Optional[str],
    typer.Option("--layout", help="Force the layout instead of detecting it: rocketmq, kafka, jafka, metaq."),
]


def renderer(fmt: OutputFormat, as_json: bool, as_jsonl: bool, *, quiet: bool = False) -> Renderer:
    if as_json and as_jsonl:
        raise typer.BadParameter("--json and --jsonl exclude each other")
    if as_json:
        fmt = OutputFormat.json
    elif as_jsonl:
        fmt = OutputFormat.jsonl
    return Renderer(fmt, quiet=quiet)
