"""JSON Schemas (draft 2020-12) of mqtool's JSON documents: the stable interface of ``--json`` and
``--jsonl``.

One file per document, ``<name>.json`` beside this module (shipped as package data);
``schema(name)`` loads one.  docs/json.md describes each document in prose; the tests run the
commands on the fixtures and validate their real output against these schemas.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

#: name -> the output it describes
SCHEMAS: dict[str, str] = {
    "finding": "one finding, wherever a document carries findings",
    "validate": "validate --json",
    "info": "info --json",
    "stats": "stats --json",
    "lag": "lag --json (--jsonl: one `lag` row a line)",
    "plan": "clean --json and recover --json: the plan (without --apply)",
    "diff": "diff --json",
    "query": "query --json (--jsonl: one row a line)",
    "dump-commitlog": "dump commitlog --jsonl: one row (--json: an array of them)",
    "dump-consumequeue": "dump consumequeue --jsonl: one row",
    "dump-index": "dump index --jsonl: one row (a header or an entry)",
}


@cache
def schema(name: str) -> dict[str, Any]:
    """The schema of document ``name`` (a key of ``SCHEMAS``), parsed."""
    if name not in SCHEMAS:
        raise KeyError(f"no schema named {name!r}; one of {', '.join(SCHEMAS)}")
    text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc
