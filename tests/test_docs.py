"""The manual under docs/: the generated references are current, and every command, finding code,
exit code, JSON schema and metric is documented.

``python scripts/gen_docs.py`` rewrites docs/reference/cli.md and docs/reference/findings.md; a
test here fails when either differs from what the script would write (a new option or finding
code without the regenerated reference).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"
README = PROJECT_ROOT / "README.md"


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", PROJECT_ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen_docs()


def manual() -> dict[Path, str]:
    """Every Markdown page of the manual (the benchmark and fuzz artefacts under docs/ are not pages)."""
    return {path: path.read_text() for path in sorted(DOCS.rglob("*.md"))}


def manual_text() -> str:
    return "\n".join(manual().values())


def command_paths() -> list[tuple[str, ...]]:
    """Every command as its words: ``("info",)``, ``("dump", "commitlog")``."""
    import typer

    from mqtool.cli.main import _click_command

    root = _click_command()
    ctx = typer.Context(root, info_name="mqtool")
    paths = []
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        subs = getattr(command, "commands", None)
        if subs:
            paths += [(name, sub) for sub in subs]
        else:
            paths.append((name,))
    return paths


# --- the generated references ----------------------------------------------------------------------


@pytest.mark.parametrize("path", list(GEN.OUTPUTS), ids=lambda p: p.name)
def test_generated_reference_is_current(path: Path) -> None:
    assert path.exists(), f"{path.relative_to(PROJECT_ROOT)} missing: run python scripts/gen_docs.py"
    assert path.read_text() == GEN.OUTPUTS[path](), f"{path.relative_to(PROJECT_ROOT)} is stale: run python scripts/gen_docs.py"


def test_gen_docs_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text("old\n")
    monkeypatch.setattr(GEN, "OUTPUTS", {stale: lambda: "new\n"})
    assert GEN.main(["--check"]) == 1
    assert stale.read_text() == "old\n"  # --check writes nothing
    assert GEN.main([]) == 0 and stale.read_text() == "new\n"
    assert GEN.main(["--check"]) == 0


def test_cli_reference_has_every_command_and_option() -> None:
    """Every command path has its section, and every option of it is in the reference."""
    import typer

    from mqtool.cli.main import _click_command

    text = GEN.CLI_MD.read_text()
    root = _click_command()
    ctx = typer.Context(root, info_name="mqtool")
    for words in command_paths():
        assert f"`mqtool {' '.join(words)}`" in text
        command = root
        for word in words:
            command = command.get_command(ctx, word)
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert opt in text, f"mqtool {' '.join(words)} {opt} missing from docs/reference/cli.md"


def test_findings_reference_has_every_code_with_its_severity_and_family() -> None:
    from mqtool.findings import CODES

    rows = re.findall(r"^\| `([A-Z0-9-]+)` \| (\w+) \| (\w+) \| (.*) \|$", GEN.FINDINGS_MD.read_text(), re.M)
    assert {code: (severity, family) for code, severity, family, _ in rows} == {code: (i.severity.value, i.family) for code, i in CODES.items()}


# --- what the manual documents ---------------------------------------------------------------------


def test_every_command_appears_in_the_docs() -> None:
    text = manual_text()
    missing = [" ".join(words) for words in command_paths() if f"mqtool {' '.join(words)}" not in text]
    assert not missing, f"commands missing from docs/: {missing}"


def test_every_finding_code_appears_in_the_docs() -> None:
    from mqtool.findings import CODES

    text = manual_text()
    missing = [code for code in CODES if f"`{code}`" not in text]
    assert not missing, f"finding codes missing from docs/: {missing}"
