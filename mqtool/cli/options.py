"""Options and arguments shared by several commands, and the choices they take.

Imported when the CLI starts (every command's signature uses it), so it imports typer and the
standard library only: the layout registry loads when a ``--layout`` is checked or completed,
never for ``--help``.

``--help`` shows a type beside an option only where it says something: flags take no value and
show none (``flag``), ranged numbers show ``<int>`` followed by their range, repeatable options
their item type with ``...``.  That is said with each option's ``metavar``.
"""

import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from mqtool.cli.completion import complete_layout


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


class BodyDecode(str, enum.Enum):
    base64 = "base64"
    utf8 = "utf8"
    hex = "hex"
    none = "none"


def flag(*param_decls: str, help: str, **kwargs: Any) -> Any:
    """A boolean option: it takes no value, so ``--help`` shows no type beside it (unless ``metavar``
    says otherwise)."""
    return typer.Option(*param_decls, help=help, **{"metavar": "", **kwargs})


#: the metavar of a number option with ``min``/``max``: the range follows it in ``--help``
INT = "<int>"
FLOAT = "<float>"


def check_layout(value: str | None) -> str | None:
    """``--layout`` takes one of the four layout names, or a variant's (``kafka07``: read as its
    layout, ``jafka``): anything else is a usage error (exit 2)."""
    if value is None:
        return None
    from mqtool.layouts import LAYOUTS, VARIANTS

    if value in VARIANTS:
        return VARIANTS[value][0].value
    if value not in LAYOUTS:
        raise typer.BadParameter(f"expected one of {', '.join((*LAYOUTS, *VARIANTS))}, found {value!r}")
    return value


FormatOpt = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", metavar="<format>", help="Output format: table for people, json or jsonl for machines.", case_sensitive=False),
]


class MetricsFormat(str, enum.Enum):
    """The formats of a command that also reports metrics (validate has its own, with junit)."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    openmetrics = "openmetrics"


MetricsFormatOpt = Annotated[
    MetricsFormat,
    typer.Option("--format", "-f", metavar="<format>", help="table for people, json or jsonl for machines, openmetrics for monitoring.", case_sensitive=False),
]
MetricsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--metrics-file",
        metavar="<path>",
        help="Also write this run's metrics (Prometheus text format) to PATH, atomically: for node_exporter's textfile collector.",
    ),
]
BrokerConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="<path>",
        help="The broker's config file (broker.conf / server.properties): file sizes, IndexFile geometry and the disk threshold; flags win.",
    ),
]


def check_broker_version(value: str | None) -> str | None:
    """``--broker-version`` takes X.Y.Z (or X.Y): anything else is a usage error (exit 2)."""
    if value is None:
        return None
    parts = value.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise typer.BadParameter(f"expected a broker version X.Y.Z (e.g. RocketMQ 4.9.8 or 5.3.3, Kafka 2.2.1 or 3.7.0), found {value!r}")
    return value.strip()


BrokerVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--broker-version",
        metavar="<X.Y.Z>",
        callback=check_broker_version,
        help="RocketMQ: the broker version whose restart to model (4.x-5.3.1 recover from the third-last CommitLog file, 5.3.2+ from the "
        "ConsumeQueue maximum); default: from --config, else the store's 5.x marks, else the newest. Kafka: before 2.3.0 odd-size indexes "
        "are rebuilt at load, 3.0.0+ recover the KRaft metadata log at every start; default: the newest.",
    ),
]
ColumnsOpt = Annotated[
    str | None,
    typer.Option("--columns", metavar="<key,...>", help="Table columns to show: keys of the JSON rows, comma-separated (e.g. commitlog_offset,topic,keys,body)."),
]
JsonOpt = Annotated[bool, flag("--json", help="Shorthand for --format json.")]
JsonlOpt = Annotated[bool, flag("--jsonl", help="Shorthand for --format jsonl.")]
DecodeOpt = Annotated[
    BodyDecode,
    typer.Option("--decode", metavar="<decode>", help="How bodies and other bytes are shown: base64, utf8, hex or none.", case_sensitive=False),
]
LayoutOpt = Annotated[
    str | None,
    typer.Option(
        "--layout",
        callback=check_layout,
        autocompletion=complete_layout,
        help="Force the layout instead of detecting it: rocketmq, kafka, jafka, metaq (kafka07: Kafka 0.7, read as jafka).",
    ),
]
StorePathArg = Annotated[Path, typer.Argument(help="A store root, Kafka log dir or partition, Jafka or MetaQ data dir.")]

# --- dump ---------------------------------------------------------------------------------
DumpPathArg = Annotated[Path, typer.Argument(help="A store root, the family's directory, or one file.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=0, metavar=INT, help="Stop after this many rows.")]
TopicOpt = Annotated[str | None, typer.Option("--topic", help="Only this topic.")]
QueueOpt = Annotated[int | None, typer.Option("--queue-id", min=0, metavar=INT, help="Only this queue id.")]
PartitionOpt = Annotated[int | None, typer.Option("--partition", min=0, metavar=INT, help="Only this partition number.")]
IndexSlotsOpt = Annotated[int | None, typer.Option("--index-hash-slots", min=1, metavar=INT, help="maxHashSlotNum when not inferable.")]
IndexNumOpt = Annotated[int | None, typer.Option("--index-num", min=1, metavar=INT, help="maxIndexNum when not inferable.")]
