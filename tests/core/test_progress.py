"""The shared progress display: periodic lines when piped, a live bar on a terminal, and
nothing at all for a command that finishes before the first period."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from agentx.core.progress import BarProgress, LineProgress, Progress, progress_for


def test_the_base_class_only_counts() -> None:
    p = Progress()
    p.phase("importing", total=10, unit="files")
    p.advance(4)
    p.count("exchanges", 300)
    p.phase(None, total=20, unit="files")  # a data source: keeps the command's label
    assert (p.label, p.total, p.done, p.counts) == ("importing", 20, 0.0, {"exchanges": 300})
    p.close()


def test_summary_has_counts_rates_and_eta() -> None:
    p = Progress()
    p.phase("importing", total=700, unit="files")
    p._phase_t0 = p._t0 = time.monotonic() - 10  # ten seconds in
    p.advance(350)
    p.count("exchanges", 20_000)
    text = p.summary()
    assert "importing" in text and "350/700 files (50%)" in text
    assert "20,000 exchanges (2,000/s)" in text and "35 files/s" in text
    assert "ETA 10 s" in text and "10 s elapsed" in text
    p.phase("reading", total=2e9, unit="B")
    p.advance(5e8)
    assert "500.0 MB of 2.0 GB (25%)" in p.summary()
    q = Progress()
    q.phase("simulating", total=None, unit="")  # counts nothing: no stray amount
    assert q.summary() == "simulating, 0 s elapsed"


def test_lines_come_every_period_and_a_last_one_at_the_end() -> None:
    out = io.StringIO()
    with LineProgress("convert", out, period_s=0.05).start() as p:
        p.phase("importing", total=3, unit="files")
        for _ in range(3):
            p.advance()
            time.sleep(0.06)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("agentx convert: ") for line in lines)
    assert "3/3 files (100%)" in lines[-1]


def test_a_short_command_prints_nothing() -> None:
    out = io.StringIO()
    with LineProgress("stats", out, period_s=5).start() as p:
        p.advance(10)
    assert out.getvalue() == ""


def test_the_bar_draws_on_a_terminal() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    with BarProgress("stats", console).start() as p:
        p.phase("reading", total=100, unit="rows")
        p.advance(42)
        p.draw()
    assert "stats" in buf.getvalue() and "42/100 rows" in buf.getvalue()


@pytest.mark.parametrize(
    ("mode", "kind"), [("off", Progress), ("lines", LineProgress), ("bar", BarProgress)]
)
def test_the_environment_chooses(monkeypatch: pytest.MonkeyPatch, mode: str, kind: type) -> None:
    monkeypatch.setenv("AGENTX_PROGRESS", mode)
    p = progress_for("stats", stream=io.StringIO(), console=Console(file=io.StringIO()))
    try:
        assert type(p) is kind
    finally:
        p.close()


def test_not_a_terminal_means_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTX_PROGRESS", raising=False)
    p = progress_for("stats", stream=io.StringIO())
    p.close()
    assert type(p) is LineProgress
