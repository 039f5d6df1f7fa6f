"""Every JSON document has a JSON Schema shipped in the package (``mqtool/schemas``), and the real
output of the commands on the fixtures -- healthy and damaged copies, every layout -- validates
against it.

A field added to, renamed in or removed from a document fails here until its schema (and
docs/json.md) says so: the schemas are the documents' contract, not a sketch of them.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

from mqtool.cli.main import run  # noqa: E402
from mqtool.schemas import SCHEMAS, schema  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

LAYOUT_FIXTURES = {"rocketmq": "rocketmq-store", "kafka": "kafka-logs", "jafka": "jafka-data", "metaq": "metaq-data"}
#: 2100-01-01: every segment of the fixtures is expired as of this time
FAR_FUTURE_MS = 4102444800000


def mqtool(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def copy(layout: str, tmp: Path) -> Path:
    target = tmp / f"copy-{layout}"
    if not target.exists():
        shutil.copytree(FIXTURES / LAYOUT_FIXTURES[layout], target)
    return target


def damaged(layout: str, tmp: Path) -> Path:
    """A copy of the layout's fixture with the tail of its newest data file cut (a crash while
    writing) and a byte of an older one flipped: findings, a recover plan with work, a diff that
    is not identical."""
    root = tmp / f"damaged-{layout}"
    if root.exists():
        return root
    shutil.copytree(FIXTURES / LAYOUT_FIXTURES[layout], root)
    if layout == "rocketmq":
        files = sorted((root / "commitlog").iterdir())
        _flip(files[1], 600)
        _cut(files[-2], 4000)
    elif layout == "kafka":
        logs = sorted((root / "orders-0").glob("*.log"))
        _flip(logs[1], 200)
        _cut(logs[-1], logs[-1].stat().st_size - 7)
    elif layout == "jafka":
        segments = sorted((root / "orders-0").glob("*.jafka"))
        _flip(segments[0], 100)
        _cut(segments[-1], segments[-1].stat().st_size - 5)
    else:
        segments = sorted((root / "trade-1").glob("*.meta"))
        _flip(segments[0], 100)
        _cut(segments[-1], segments[-1].stat().st_size - 5)
    return root


def _flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x5A]))


def _cut(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


# --- the cases: (schema, how to get the output) --------------------------------------------------

Case = Callable[[Path], tuple[int, str, str]]


def _cases() -> Iterator[tuple[str, str, Case, tuple[int, ...]]]:
    """``(id, schema name, case, accepted exit codes)``"""
    for layout, name in LAYOUT_FIXTURES.items():
        fixture = FIXTURES / name
        yield f"validate-{layout}", "validate", lambda t, f=fixture: mqtool("validate", f, "--json"), (0,)
        yield f"validate-{layout}-damaged", "validate", lambda t, lay=layout: mqtool("validate", damaged(lay, t), "--json"), (1,)
        yield f"info-{layout}", "info", lambda t, f=fixture: mqtool("info", f, "--json"), (0,)
        yield f"info-{layout}-damaged", "info", lambda t, lay=layout: mqtool("info", damaged(lay, t), "--json"), (0, 1)
        yield f"stats-{layout}", "stats", lambda t, f=fixture: mqtool("stats", f, "--json"), (0,)
        yield f"stats-{layout}-damaged", "stats", lambda t, lay=layout: mqtool("stats", damaged(lay, t), "--json"), (0, 1)
        yield f"recover-{layout}", "plan", lambda t, f=fixture: mqtool("recover", f, "--json"), (0,)
        yield f"recover-{layout}-damaged", "plan", lambda t, lay=layout: mqtool("recover", damaged(lay, t), "--json"), (1,)
        yield f"clean-{layout}", "plan", lambda t, lay=layout: mqtool("clean", copy(lay, t), "--json"), (0, 1)
        yield f"diff-{layout}", "diff", lambda t, lay=layout: mqtool("diff", FIXTURES / LAYOUT_FIXTURES[lay], copy(lay, t), "--json"), (0,)
        yield f"diff-{layout}-damaged", "diff", lambda t, lay=layout: mqtool("diff", FIXTURES / LAYOUT_FIXTURES[lay], damaged(lay, t), "--json"), (1,)
    rocketmq, kafka = FIXTURES / "rocketmq-store", FIXTURES / "kafka-logs"
    ignore = ("--ignore", "RMQ-CL-VALID-END", "--max-findings", "2")
    yield "validate-ignore-truncated", "validate", lambda t: mqtool("validate", damaged("rocketmq", t), "--json", *ignore), (1,)
    expired = ("--reserved-hours", "1", "--now", FAR_FUTURE_MS)
    yield "clean-rocketmq-expired", "plan", lambda t: mqtool("clean", copy("rocketmq", t), "--json", *expired), (1,)
    yield "clean-rocketmq-unconsumed", "plan", lambda t: mqtool("clean", copy("rocketmq", t), "--json", *expired, "--allow-unconsumed"), (1,)
    yield "clean-kafka-expired", "plan", lambda t: mqtool("clean", copy("kafka", t), "--json", "--retention-ms", "1", "--now", FAR_FUTURE_MS, "--allow-unconsumed"), (1,)
    yield "clean-jafka-expired", "plan", lambda t: mqtool("clean", copy("jafka", t), "--json", "--retention-hours", "1", "--now", FAR_FUTURE_MS), (0, 1)
    yield "clean-metaq-archive", "plan", lambda t: mqtool("clean", copy("metaq", t), "--json", "--delete-policy", "archive,1h,true", "--now", FAR_FUTURE_MS), (0, 1)
    yield "lag-rocketmq", "lag", lambda t: mqtool("lag", rocketmq, "--json"), (0,)
    yield "lag-kafka", "lag", lambda t: mqtool("lag", kafka, "--json"), (0,)
    yield "query-rocketmq-key", "query", lambda t: mqtool("query", rocketmq, "--key", "KEY42", "--json"), (0,)
    yield "query-rocketmq-msg-id", "query", lambda t: mqtool("query", rocketmq, "--msg-id", "C0A8000A00002A9F0000000000003812", "--json"), (0,)
    yield "query-rocketmq-queue-offset", "query", lambda t: mqtool("query", rocketmq, "--topic", "TopicTest", "--queue-id", "2", "--queue-offset", "3", "--json"), (0,)
    yield "query-rocketmq-scan", "query", lambda t: mqtool("query", rocketmq, "--key", "order-4", "--scan", "--json"), (0,)
    yield "query-kafka-offset", "query", lambda t: mqtool("query", kafka, "--topic", "orders", "--partition", "0", "--offset", "50", "--max", "3", "--json"), (0,)
    yield "query-kafka-timestamp", "query", lambda t: mqtool("query", kafka / "orders-1", "--timestamp", "2023-11-14T22:13:22Z", "--json"), (0,)
    yield "query-jafka", "query", lambda t: mqtool("query", FIXTURES / "jafka-data", "--topic", "orders", "--partition", "0", "--offset", "0", "--json"), (0,)
    yield "query-metaq", "query", lambda t: mqtool("query", FIXTURES / "metaq-data", "--topic", "trade", "--partition", "0", "--offset", "1602", "--json"), (0,)
    yield "dump-commitlog", "dump-commitlog", lambda t: mqtool("dump", "commitlog", rocketmq, "--jsonl"), (0,)
    yield "dump-commitlog-utf8", "dump-commitlog", lambda t: mqtool("dump", "commitlog", rocketmq, "--jsonl", "--decode", "utf8"), (0,)
    yield "dump-commitlog-no-body", "dump-commitlog", lambda t: mqtool("dump", "commitlog", rocketmq, "--jsonl", "--decode", "none"), (0,)
    yield "dump-consumequeue", "dump-consumequeue", lambda t: mqtool("dump", "consumequeue", rocketmq, "--jsonl"), (0,)
    yield "dump-index", "dump-index", lambda t: mqtool("dump", "index", rocketmq, "--jsonl"), (0,)


CASES = {case_id: (name, case, codes) for case_id, name, case, codes in _cases()}
JSONL = {"dump-commitlog", "dump-consumequeue", "dump-index"}  # one row a line, each row a document


def _documents(name: str, out: str) -> list[object]:
    if name in JSONL:
        return [json.loads(line) for line in out.splitlines() if line.strip()]
    return [json.loads(out)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("schemas")


@pytest.mark.parametrize("case_id", list(CASES))
def test_output_validates_against_its_schema(case_id: str, workdir: Path) -> None:
    name, case, codes = CASES[case_id]
    code, out, err = case(workdir)
    assert code in codes, (code, err[-2000:])
    documents = _documents(name, out)
    assert documents, f"{case_id}: no output"
    validator = jsonschema.Draft202012Validator(schema(name), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for doc in documents:
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, f"{case_id}: " + "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:5])


def test_every_schema_is_valid_and_exercised() -> None:
    for name in SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(schema(name))
    used = {name for name, _, _ in CASES.values()}
    assert set(SCHEMAS) - {"finding"} == used, "a schema no case checks, or a case naming no schema"


def test_findings_have_one_shape_everywhere() -> None:
    """Every document carrying findings embeds the same finding schema (``finding.json``)."""
    finding = {k: v for k, v in schema("finding").items() if k not in ("$schema", "$id")}
    carrying = [name for name in SCHEMAS if "finding" in schema(name).get("$defs", {})]
    assert len(carrying) >= 5, carrying
    for name in carrying:
        assert schema(name)["$defs"]["finding"] == finding, f"{name}.json: $defs/finding differs from finding.json"
    sided = dict(schema("diff")["$defs"]["sided_finding"])  # diff's findings: the same fields plus the side
    properties = dict(sided.pop("properties"))
    assert properties.pop("side") == {"type": "string", "enum": ["A", "B"]}
    assert properties == finding["properties"]
    assert sided.pop("required") == ["side", *finding["required"]]
    assert sided.pop("title") == "finding of one side"
    assert sided == {k: v for k, v in finding.items() if k not in ("properties", "required", "title")}


def test_finding_schema_knows_every_code_severity_and_family() -> None:
    from mqtool.findings import CODES, FAMILIES

    finding = schema("finding")
    assert set(finding["properties"]["family"]["enum"]) == set(FAMILIES)
    validator = jsonschema.Draft202012Validator(finding)
    for code, info in CODES.items():
        doc = {"code": code, "severity": info.severity.value, "family": info.family, "path": "x", "position": 0, "length": None, "message": "m"}
        assert not list(validator.iter_errors(doc)), code


def test_schemas_are_package_data() -> None:
    """pyproject ships ``mqtool/schemas/*.json`` with the package."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from tests.conftest import PROJECT_ROOT

    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert "*.json" in pyproject["tool"]["setuptools"]["package-data"]["mqtool.schemas"]
    assert any(dep.startswith("jsonschema") for dep in pyproject["project"]["optional-dependencies"]["test"])


def test_a_schema_refuses_what_the_document_does_not_hold(workdir: Path) -> None:
    """The schemas are closed: a field the document does not define, a missing one, or a wrong type fails."""
    code, out, _ = mqtool("validate", FIXTURES / "rocketmq-store", "--json")
    doc = json.loads(out)
    validator = jsonschema.Draft202012Validator(schema("validate"))
    assert validator.is_valid(doc)
    assert not validator.is_valid({**doc, "commit_log_offset": 1})
    assert not validator.is_valid({k: v for k, v in doc.items() if k != "counts"})
    assert not validator.is_valid({**doc, "findings": [{"code": "RMQ-NO-SUCH", "severity": "error"}]})
    row = json.loads(mqtool("dump", "commitlog", FIXTURES / "rocketmq-store", "--jsonl", "--limit", "1")[1])
    assert not jsonschema.Draft202012Validator(schema("dump-commitlog")).is_valid({**row, "phy_offset": row["commitlog_offset"]})


# --- one spelling per field ----------------------------------------------------------------------

#: spellings retired for the stable vocabulary (CHANGELOG "Renamed JSON fields"): a CommitLog
#: position is ``commitlog_offset``, a log's range is ``log_start_offset`` / ``log_end_offset``
RETIRED = {
    "commit_log_offset": "commitlog_offset",
    "phy_offset": "commitlog_offset",
    "begin_phy_offset": "begin_commitlog_offset",
    "end_phy_offset": "end_commitlog_offset",
    "max_physic_offset": "max_commitlog_offset",
    "min_offset": "log_start_offset",
    "max_offset": "log_end_offset",
    "valid_end_offset": "log_end_offset",
}
#: per document: stats is computed for every layout, and only RocketMQ has STORETIMESTAMP
RETIRED_IN = {
    "stats": {"first_store_timestamp": "first_timestamp", "last_store_timestamp": "last_timestamp", "store_timestamp": "timestamp"},
}
#: report documents on one store: the store is ``root``
ROOTED = ("validate", "info", "stats", "lag", "plan")


def _declared(node: object, where: str = "") -> Iterator[tuple[str, str, object]]:
    """``(where, property name, its schema)`` for every property any object schema declares."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    yield f"{where}/{name}", name, sub
            yield from _declared(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _declared(value, f"{where}/{i}")


def test_no_schema_declares_a_retired_spelling() -> None:
    for name in SCHEMAS:
        retired = {**RETIRED, **RETIRED_IN.get(name, {})}
        for where, prop, _ in _declared(schema(name)):
            assert prop not in retired, f"{name}.json{where}: retired spelling, the field is {retired[prop]!r}"


def test_a_partition_is_a_number_and_a_store_is_its_root() -> None:
    """``partition`` is the partition's number wherever it appears (a directory name is
    ``directory``), and every report on one store names it ``root``."""
    seen = 0
    for name in SCHEMAS:
        for where, prop, sub in _declared(schema(name)):
            if prop == "partition":
                seen += 1
                types = sub.get("type") if isinstance(sub, dict) else None
                types = [types] if isinstance(types, str) else types
                assert types and set(types) <= {"integer", "null"}, f"{name}.json{where}: {sub}"
    assert seen >= 6, seen
    for name in ROOTED:
        top = schema(name)
        props = top.get("properties", {})
        layouts = [d for d in top.get("$defs", {}).values() if isinstance(d, dict) and "root" in d.get("properties", {})]
        assert "root" in props or layouts, f"{name}.json: no root"
        assert "path" not in props, f"{name}.json: the store is root, not path"


def test_the_retired_check_fails_on_a_retired_spelling() -> None:
    """The vocabulary check is not vacuous: a schema declaring an old spelling is caught."""
    bad = {"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "object", "properties": {"phy_offset": {"type": "integer"}}}}}}
    assert [prop for _, prop, _ in _declared(bad) if prop in RETIRED] == ["phy_offset"]
