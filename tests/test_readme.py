"""The README is a short overview that links the manual under docs/; the manual documents every
command and finding code; CI runs exactly the README's test command."""

from __future__ import annotations

import re

import typer

from mqtool.cli.main import _click_command
from tests.conftest import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text()
DOCS = PROJECT_ROOT / "docs"
MANUAL = "\n".join(path.read_text() for path in sorted(DOCS.rglob("*.md")))
FINDINGS_REFERENCE = (DOCS / "reference" / "findings.md").read_text()
MAX_README_LINES = 250


def _command_paths() -> list[str]:
    root = _click_command()
    ctx = typer.Context(root, info_name="mqtool")
    paths = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, f"{path} {name}")
        else:
            paths.append(path)

    for name in root.list_commands(ctx):
        walk(root.get_command(ctx, name), f"mqtool {name}")
    return paths


def test_the_readme_is_short() -> None:
    lines = README.count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES}: the rest belongs in docs/)"


def test_the_readme_names_the_four_layouts_and_links_their_pages() -> None:
    for name, page in (("RocketMQ", "rocketmq"), ("Kafka", "kafka"), ("Jafka", "jafka"), ("MetaQ", "metaq")):
        assert f"[{name}](docs/layouts/{page}.md)" in README


def test_the_readme_lists_every_command_with_a_link_to_its_page() -> None:
    root = _click_command()
    ctx = typer.Context(root, info_name="mqtool")
    for name in root.list_commands(ctx):
        assert re.search(rf"^\| \[`mqtool {name}\b[^`]*`\]\(docs/commands/{name}\.md\) \| .+ \|$", README, re.M), f"README's command table lacks mqtool {name}"
    assert "(docs/index.md)" in README


def test_every_command_is_documented() -> None:
    paths = _command_paths()
    assert len(paths) >= 3
    missing = [p for p in paths if p not in MANUAL]
    assert not missing, f"commands missing from docs/: {missing}"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (PROJECT_ROOT / ".ci" / "run").read_text()
    test_command = "bash scripts/test.sh"
    assert re.search(rf"^{re.escape(test_command)}\s*$", ci, re.M)
    assert f"```sh\n{test_command}\n```" in README


def test_every_exit_code_is_documented() -> None:
    """In the README's table and on docs/exit-codes.md."""
    from mqtool.cli.exit_codes import ExitCode

    exit_codes = (DOCS / "exit-codes.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} |" in README, f"exit code {int(code)} ({code.name}) missing from README"
        assert f"| {int(code)} |" in exit_codes, f"exit code {int(code)} ({code.name}) missing from docs/exit-codes.md"


def test_every_finding_code_is_documented() -> None:
    from mqtool.findings import CODES

    missing = [code for code in CODES if f"`{code}`" not in MANUAL]
    assert not missing, f"finding codes missing from docs/: {missing}"


def test_jafka_and_metaq_code_tables_match_the_code() -> None:
    """The findings reference's Jafka/MetaQ tables say what ``findings/codes_legacy.py`` says, row by row."""
    from mqtool.findings.codes_legacy import CODES

    rows = {
        m[0]: (m[1], m[2], m[3] or None, m[4].replace("&lt;", "<").replace("\\|", "|"))
        for m in re.findall(r"^\| `((?:JAFKA|METAQ)-[A-Z0-9-]+)` \| (\w+) \| (\w+) \| ([a-z-]*) \| (.*) \|$", FINDINGS_REFERENCE, re.MULTILINE)
    }
    assert rows == {code: (info.severity.value, info.family, info.ends, info.summary) for code, info in CODES.items()}


def test_the_readme_cites_nothing_outside_the_repository() -> None:
    outside = re.compile(r"spec [A-Z§]\d|§|design\.md|jafka\.md [A-Z]\d|metaq\.md [A-Z]\d")
    assert not outside.findall(README)


def test_the_changelog_names_what_changed() -> None:
    changelog = (PROJECT_ROOT / "CHANGELOG.md").read_text()
    unreleased = changelog.split("## Unreleased", 1)[1].split("\n## ", 1)[0]
    for item in ("`mqtool lag PATH`", "--format openmetrics", "--metrics-file", "--allow-unconsumed", "Exit code 5", ".mqtool.lock", "completion"):
        assert item in unreleased, f"CHANGELOG's Unreleased entry does not name {item}"
