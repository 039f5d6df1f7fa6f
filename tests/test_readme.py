"""The README documents every command, and CI runs exactly the README's test command."""

from __future__ import annotations

import re

import typer

from mqtool.cli.app import app
from tests.conftest import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text()


def _command_paths(group: typer.Typer, prefix: str = "mqtool") -> list[str]:
    command = typer.main.get_command(group)
    paths = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, f"{path} {name}")
        else:
            paths.append(path)

    walk(command, prefix)
    return paths


def test_every_command_is_documented():
    paths = _command_paths(app)
    assert len(paths) >= 3
    missing = [p for p in paths if p not in README]
    assert not missing, f"commands missing from README.md: {missing}"


def test_ci_runs_the_readme_test_command():
    ci = (PROJECT_ROOT / ".ci" / "run").read_text()
    test_command = "bash scripts/test.sh"
    assert re.search(rf"^{re.escape(test_command)}\s*$", ci, re.M)
    assert f"```sh\n{test_command}\n```" in README


def test_every_exit_code_is_documented():
    from mqtool.cli.exit_codes import ExitCode

    for code in ExitCode:
        assert f"| {int(code)} |" in README, f"exit code {int(code)} ({code.name}) missing from README"


def test_every_finding_code_is_documented():
    from mqtool.findings import CODES

    missing = [code for code in CODES if f"`{code}`" not in README]
    assert not missing, f"finding codes missing from README.md: {missing}"


def test_jafka_and_metaq_code_tables_match_the_code():
    """README's Jafka/MetaQ code tables say what ``ops/codes_legacy.py`` says, row by row."""
    from mqtool.findings.codes_legacy import CODES

    rows = {m[0]: m[1:] for m in re.findall(r"^\| `((?:JAFKA|METAQ)-[A-Z0-9-]+)` \| (\w+) \| (\w+) \| (.*) \|$", README, re.MULTILINE)}
    assert rows == {code: (info.severity.value, info.family, info.summary) for code, info in CODES.items()}
