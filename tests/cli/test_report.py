"""``mqtool report`` and ``validate --format html``: exit codes, --overwrite, equal pages, and
exit 4 naming mqtool[report] when Jinja2 / matplotlib cannot be imported."""

import builtins
import re
import shutil
from pathlib import Path

import pytest

from mqtool.cli.main import run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _page(text: str) -> str:
    """The page without what changes between two runs: the time it was made, and the disk-full
    chart (it reads the filesystem's free space, which the first page written changed)."""
    text = re.sub(r"generated [^<]*</p>", "generated -</p>", text)
    return re.sub(r'<div class="chart forecast">.*?</svg>', "", text, flags=re.S)


@pytest.mark.parametrize("store", ["rocketmq-store", "kafka-logs", "jafka-data", "metaq-data"])
def test_report_every_layout(store: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert run(["report", str(FIXTURES / store), "--out", str(out)]) == run(["validate", str(FIXTURES / store), "-f", "json"])
    html = out.read_text()
    for hook in ('id="verdict"', 'id="map"', 'id="findings"', 'id="recover"', 'id="clean"', 'id="topics"', 'id="lag"', 'class="segment"'):
        assert hook in html
    # the modelled broker's restart (the layout's recover plan has a preview: RocketMQ)
    assert 'id="restart"' in html or store != "rocketmq-store"
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|(?:src|href)=\"(?!#|data:)|url\((?!#|data:)", html), "no external resources"


def test_refuses_existing_out_without_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    out.write_text("keep")
    assert run(["report", str(FIXTURES / "rocketmq-store"), "--out", str(out)]) == 2
    assert out.read_text() == "keep"
    assert run(["report", str(FIXTURES / "rocketmq-store"), "--out", str(out), "--overwrite"]) == 0
    assert 'id="verdict"' in out.read_text()


def test_damaged_store_exits_1(tmp_path: Path) -> None:
    store = tmp_path / "s"
    shutil.copytree(FIXTURES / "rocketmq-store", store)
    sorted((store / "commitlog").iterdir())[2].unlink()
    assert run(["report", str(store), "--out", str(tmp_path / "r.html")]) == 1
    assert "exit code 1" in (tmp_path / "r.html").read_text()


def test_validate_format_html_equals_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert run(["report", str(FIXTURES / "rocketmq-store"), "--out", str(out), "--utc"]) == 0
    capsys.readouterr()
    assert run(["validate", str(FIXTURES / "rocketmq-store"), "--format", "html", "--utc"]) == 0
    assert _page(capsys.readouterr().out) == _page(out.read_text())


@pytest.mark.parametrize("argv", [["report", "--out", "{out}"], ["validate", "--format", "html"]])
def test_missing_extra_exits_4(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = builtins.__import__

    def no_jinja(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".")[0] in ("jinja2", "matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jinja)
    out = tmp_path / "r.html"
    args = [a.replace("{out}", str(out)) for a in argv]
    assert run([args[0], str(FIXTURES / "rocketmq-store"), *args[1:]]) == 4
    err = capsys.readouterr().err
    assert "pip install 'mqtool[report]'" in err and "Traceback" not in err
    assert not out.exists()


def test_config_sets_the_file_sizes_validate_judges_by(tmp_path: Path) -> None:
    store = str(FIXTURES / "rocketmq-store")
    good, bad = tmp_path / "good.conf", tmp_path / "bad.conf"
    good.write_text("mappedFileSizeCommitLog=16384\n")
    bad.write_text("mappedFileSizeCommitLog=32768\n")
    assert run(["report", store, "--out", str(tmp_path / "a.html"), "--config", str(good)]) == 0
    assert run(["report", store, "--out", str(tmp_path / "b.html"), "--config", str(bad)]) == run(["validate", store, "--config", str(bad), "-q"]) == 1
    assert run(["report", str(FIXTURES / "kafka-logs"), "--out", str(tmp_path / "k.html"), "--config", str(good)]) == 2


def test_config_message_index_enable_reaches_validate_and_recover(tmp_path: Path) -> None:
    import shutil

    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", store)
    shutil.rmtree(store / "index")
    conf = tmp_path / "broker.conf"
    conf.write_text("messageIndexEnable=false\n")
    out = tmp_path / "r.html"
    assert run(["report", str(store), "--out", str(out), "--config", str(conf)]) == 0
    html = out.read_text()
    assert "broker.conf sets messageIndexEnable=false" in html and "<td>rebuild-index</td>" not in html
    assert run(["report", str(store), "--out", str(out), "--overwrite"]) == 0
    assert "<td>rebuild-index</td>" in out.read_text()
