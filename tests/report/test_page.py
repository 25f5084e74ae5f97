"""The page shell every HTML view shares, and the rules for the file it is written to."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.core.errors import UsageError
from agentx.report.page import (
    HEAD_BYTES,
    check_page,
    page,
    page_source,
    source_of,
    table,
    write_page,
)

from .test_html import parse


class TestPage:
    def test_self_contained_and_well_formed(self) -> None:
        html = page("a <title>", "<p>body</p>", page_source("somewhere"))
        parsed = parse(html)
        assert parsed.unbalanced == [] and parsed.stack == []
        assert parsed.count("script") == 0 and parsed.count("link") == 0
        assert parsed.count("style") == 1
        assert "<title>a &lt;title&gt;</title>" in html

    def test_the_marker_is_in_the_head_before_the_styles(self, tmp_path: Path) -> None:
        source = page_source(tmp_path / "run")
        html = page("t", "x" * 10_000, source)
        assert html.index(source) < html.index("<style>") < HEAD_BYTES
        path = tmp_path / "p.html"
        write_page(html, path, source=source)
        assert source_of(path) == source

    def test_the_marker_names_no_path(self, tmp_path: Path) -> None:
        source = page_source(tmp_path / "run", tmp_path / "other")
        assert source == page_source(tmp_path / "other", tmp_path / "." / "run")
        assert str(tmp_path) not in page("t", "", source)

    def test_a_file_agentx_did_not_write_has_no_source(self, tmp_path: Path) -> None:
        mine = tmp_path / "mine.html"
        mine.write_text("<html><head><title>mine</title></head></html>")
        assert source_of(mine) is None
        assert source_of(tmp_path / "missing.html") is None


class TestCheckPage:
    def test_the_page_of_the_same_results_is_rewritten(self, tmp_path: Path) -> None:
        source = page_source(tmp_path / "run")
        path = tmp_path / "r.html"
        write_page(page("one", "", source), path, force=False, source=source)
        write_page(page("two", "", source), path, force=False, source=source)
        assert "<title>two</title>" in path.read_text()

    def test_a_page_of_other_results_is_refused_without_force(self, tmp_path: Path) -> None:
        path, source = tmp_path / "r.html", page_source(tmp_path / "a")
        write_page(page("one", "", source), path, force=False, source=source)
        other = page_source(tmp_path / "b")
        with pytest.raises(UsageError, match="agentx's page of other results"):
            check_page(path, other, force=False)
        check_page(path, other, force=True)

    def test_any_other_file_is_refused_without_force(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.html"
        path.write_text("the user's own file")
        with pytest.raises(UsageError):
            write_page(page("t", ""), path, force=False, source=page_source(tmp_path))
        assert path.read_text() == "the user's own file"


class TestTable:
    @given(st.lists(st.text(max_size=8), min_size=1, max_size=3), st.text(max_size=12))
    def test_cells_are_escaped_unless_raw(self, headers: list[str], cell: str) -> None:
        html = table(headers, [[cell] * len(headers)])
        parsed = parse(html)
        assert parsed.unbalanced == [] and parsed.stack == []
        assert parsed.count("th") == len(headers) and parsed.count("td") == len(headers)
        assert "".join(parsed.text) == "".join(headers) + cell * len(headers)

    def test_a_raw_cell_keeps_its_markup(self) -> None:
        assert "<td><b>x</b></td>" in table(["h"], [["<b>x</b>"]], raw=True)
