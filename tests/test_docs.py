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


# --- the pages ---------------------------------------------------------------------------------------

LAYOUT_PAGES = ("rocketmq", "kafka", "jafka", "metaq")
PAGES = ("index", "options", "exit-codes", "json", "metrics", "architecture", "reliability", "performance")


def test_a_page_per_command() -> None:
    """docs/commands/<name>.md for every top-level command (a group's subcommands on its page)."""
    for words in command_paths():
        page = DOCS / "commands" / f"{words[0]}.md"
        assert page.exists(), f"no page for mqtool {words[0]}: {page.relative_to(PROJECT_ROOT)}"
        if len(words) > 1:
            assert f"mqtool {' '.join(words)}" in page.read_text() or f"`{words[1]}`" in page.read_text(), f"{page.name} does not name {words[1]}"


def test_a_page_per_layout_and_the_reference_pages() -> None:
    from mqtool.layouts import LAYOUTS

    assert set(LAYOUTS) == set(LAYOUT_PAGES)
    for name in LAYOUT_PAGES:
        assert (DOCS / "layouts" / f"{name}.md").exists()
    for name in PAGES:
        assert (DOCS / f"{name}.md").exists()


def test_the_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text()
    linked = {(DOCS / target.partition("#")[0]).resolve() for target in _links(index) if not re.match(r"^[a-z]+:", target)}
    pages = {path.resolve() for path in manual() if path.name != "index.md"}
    assert not pages - linked, f"pages docs/index.md does not link: {sorted(str(p.relative_to(DOCS)) for p in pages - linked)}"


def test_the_exit_codes_page_lists_exactly_the_codes() -> None:
    from mqtool.cli.exit_codes import ExitCode

    page = (DOCS / "exit-codes.md").read_text()
    table = page.split("\n## ", 1)[0]
    assert {int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)} == {int(c) for c in ExitCode}


def test_the_json_page_names_every_schema() -> None:
    from mqtool.schemas import SCHEMAS

    page = (DOCS / "json.md").read_text()
    assert not [name for name in SCHEMAS if f"`{name}.json`" not in page]


def test_the_metrics_page_lists_every_metric() -> None:
    from mqtool.cli.metrics import METRICS

    page = (DOCS / "metrics.md").read_text()
    assert not [m for m in METRICS if f"`{m}`" not in page]


def test_the_manual_cites_nothing_outside_the_repository() -> None:
    """The manual is self-contained: no section numbers of the reference specs, no design notes."""
    outside = re.compile(r"spec [A-Z§]\d|§|design\.md|shared/(?!fixtures-real)|jafka\.md [A-Z]\d|metaq\.md [A-Z]\d")
    cited = {str(path.relative_to(PROJECT_ROOT)): outside.findall(text) for path, text in manual().items() if outside.search(text)}
    assert not cited


# --- links -------------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces as ``-``."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _pages() -> dict[Path, str]:
    return {README: README.read_text(), **manual()}


def _links(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return LINK.findall(text)


@pytest.mark.parametrize("page", list(_pages()), ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_links_resolve(page: Path) -> None:
    """Every relative link of README.md and docs/ names a file that exists, and an anchor that
    the target page has."""
    broken = []
    for target in _links(page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text()):
            broken.append(target)
    assert not broken, f"{page.relative_to(PROJECT_ROOT)}: broken links {broken}"
