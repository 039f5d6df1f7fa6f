"""Data prints as it is in tables: neither rich markup nor emoji codes in a topic, key or path
are interpreted."""

from __future__ import annotations

import io

from mqtool.cli.render import Renderer, markup, render_generic


def _table(doc: dict) -> str:
    out = io.StringIO()
    render_generic(Renderer("table", stdout=out).console, doc)
    return out.getvalue()


def test_an_emoji_code_in_the_data_prints_as_is():
    text = _table({"topic": "orders:smile:", "path": "/data/:thumbs_up:/store"})
    assert "orders:smile:" in text and ":thumbs_up:" in text


def test_markup_in_the_data_prints_as_is():
    assert "[red]x[/red]" in _table({"topic": "[red]x[/red]"})


def test_mqtool_s_own_markup_keeps_the_data_as_is():
    text = markup("[bold]{}[/bold] {}", "topic", "a:smile:b [/x]")
    assert text.plain == "topic a:smile:b [/x]"
