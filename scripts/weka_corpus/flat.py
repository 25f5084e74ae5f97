"""Flat parallel agents: chains of requests recorded among the main agent's own, as the real
traces with flat agents have them (the three of tests/formats/data/weka-flat; the reference
corpus's split in docs/corpus.md).

An episode follows a main request ``m`` (one with a server time, stopped on ``tool_use``):

- **inline agent**: starts just before ``m`` ended, from ``m``'s whole context, and runs while
  the main agent waits; the main agent's next prompt holds the agent's last one and its report
  (trace_0062's ``fa:000``: 8 requests forked at all 2557 blocks of ``m``);
- **parallel agent**: starts after ``m`` from a fresh context sharing only the tools and system
  blocks, and runs beside the main agent, which goes on (trace_0269's ``fa:003``, forked at
  248 blocks);
- **worker group**: three such agents at once, while the main agent waits for their reports
  (trace_0269's ``wg:000_*``);
- **reduction**: one request just before ``m`` ended, ``m``'s context and a little more,
  answered briefly (a summary: the ``aux:001`` of trace_0062 and trace_0269);
- **sidecar**: one request on another model from a small fresh context (a web-fetch summary).

A chain's requests grow and re-hash trailing blocks as a subagent's do (seams). What keeps the
split unambiguous (each chain found as it was made): a chain's prompts stay shorter than the
main agent's next one, and the main agent does not compact right after an episode (a
compaction sharing only the system blocks would be as close to a longer chain as to it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .params import BLOCK_SIZE, HAIKU, Params

if TYPE_CHECKING:
    from .session import Request, SessionBuilder


@dataclass
class Episode:
    """An episode's chains (each its requests, in order) and, when the main agent waits for it,
    when it ended and what its next prompt holds."""

    chains: list[list[Request]] = field(default_factory=list)
    resume_at: float | None = None  # the main agent's next request waits until then
    min_next_in: int = 0  # its next prompt is at least this long
    report_tokens: int = 0  # added to its next prompt's growth


KINDS = ("inline", "parallel", "workers", "reduction", "sidecar")  # Params.flat_kinds' order


class FlatPlanner:
    """A session's flat episodes, drawn from a generator of their own: a session without flat
    agents draws nothing from the main one, so its file is what it was before they existed."""

    def __init__(self, rng: np.random.Generator, p: Params, scale: float) -> None:
        self.rng = rng
        self.p = p
        self.scale = scale
        self.on = bool(rng.random() < p.p_flat)
        self.episodes = 1 + int(rng.poisson(p.flat_extra_episodes)) if self.on else 0
        self.at: list[int] = []  # the main requests episodes follow (the next ones that fit)
        self.chains = 0  # chains made so far: the next one's index
        self.kinds: list[str] = []  # each chain's kind (a KINDS name), by index

    def plan(self, n_main: int) -> None:
        """Where the episodes go in a session of ``n_main`` main requests."""
        slots = range(1, max(1, n_main - 1))
        n = min(self.episodes, len(slots))
        self.at = sorted(int(k) for k in self.rng.choice(slots, size=n, replace=False)) if n else []

    def _logn(self, median: float, sigma: float) -> float:
        return float(median * np.exp(sigma * self.rng.standard_normal()))

    def _tokens(self, x: float) -> int:
        return max(1, round(x * self.scale))

    def _pick(self, weights: tuple[float, ...]) -> int:
        x = self.rng.random() * sum(weights)
        for i, w in enumerate(weights):
            x -= w
            if x < 0:
                return i
        return len(weights) - 1

    def wants(self, k: int, m: Request) -> bool:
        """Whether an episode follows main request ``m`` (the ``k``-th): one is due, and ``m``
        has a server time and stopped on a tool call."""
        due = bool(self.at) and k >= self.at[0]
        return due and m.api_time is not None and m.stop == "tool_use"

    def episode(self, b: SessionBuilder, m: Request) -> Episode | None:
        """The episode after main request ``m`` (``None``: its kind does not fit ``m``; the
        next main request tries again)."""
        kind = KINDS[self._pick(self.p.flat_kinds)]
        made = {
            "inline": self._inline,
            "parallel": self._parallel,
            "workers": self._workers,
            "reduction": self._reduction,
            "sidecar": self._sidecar,
        }[kind](b, m)
        if made is not None:
            self.at.pop(0)
            for chain in made.chains:
                for r in chain:
                    r.chain = self.chains
                self.chains += 1
                self.kinds.append(kind)
        return made

    # -- the kinds ----------------------------------------------------------------------------

    def _overlapping(self, m: Request) -> float:
        """A start just before ``m`` ended: its interval overlaps ``m``'s, so it never extends
        ``m``'s chain."""
        assert m.api_time is not None
        early = float(self.rng.uniform(0.05, min(0.5, m.api_time / 2)))
        return round(m.t + m.api_time - early, 2)

    def _after(self, m: Request) -> float:
        assert m.api_time is not None
        return round(m.t + m.api_time + float(self.rng.uniform(0.3, 1.2)), 2)

    def _agent(
        self,
        b: SessionBuilder,
        m: Request,
        start: float,
        first_in: int,
        fork_blocks: int,
        cap_in: int,
        *,
        rehash: bool,
    ) -> list[Request]:
        """An agent's requests from ``start``: the first of ``first_in`` tokens sharing
        ``fork_blocks`` leading blocks with ``m``, then growing (and re-hashing, with
        ``rehash``) as a subagent's, none beyond ``cap_in`` tokens; the last one reports."""
        from .session import Request

        p = self.p
        n = int(np.clip(round(self._logn(p.flat_agent_median, p.flat_agent_sigma)), 2, 300))
        reqs: list[Request] = []
        t, n_in = start, first_in
        for k in range(n):
            prev = reqs[-1] if reqs else None
            if prev is not None:
                growth = self._tokens(self._logn(p.sub_growth_median, p.sub_growth_sigma))
                n_in = prev.in_tokens + prev.out_tokens + growth
                if n_in > cap_in:
                    break
            last = k == n - 1
            out = self._tokens(self._logn(p.sub_out_median, p.sub_out_sigma))
            if last:
                out = self._tokens(self._logn(p.sub_report_median, p.sub_report_sigma))
            api = b.api_s(m.model, n_in, out, self.rng)
            think = 0.0
            shared = 0
            if prev is not None:
                assert prev.api_time is not None
                think = float(round(self._logn(p.flat_think_median, p.flat_think_sigma)))
                t = float(round(prev.t + prev.api_time + think))
                shared = (
                    max(0, prev.blocks - self._pick(p.rehash_blocks)) if rehash else prev.blocks
                )
            stop, otypes = (
                ("end_turn", ("text", "thinking"))
                if last
                else ("tool_use", ("thinking", "tool_use"))
            )
            req = Request(
                t, "n", m.model, n_in, out, shared, ("tool_result",), otypes, stop, api, None, think
            )
            reqs.append(req)
        reqs[0].fork, reqs[0].fork_blocks = m, fork_blocks
        if reqs[-1].stop != "end_turn":  # cut by the cap: its last request still reports
            reqs[-1].stop, reqs[-1].output_types = "end_turn", ("text", "thinking")
        return reqs

    def _inline(self, b: SessionBuilder, m: Request) -> Episode | None:
        first_in = m.in_tokens + m.out_tokens + self._tokens(self._logn(600, 1.0))
        if first_in >= b.compact_at:
            return None
        # never re-hashed: m, still the main agent's last request, would then be the longest
        # complete prefix of the agent's next prompt (the main agent going on, as read)
        start = self._overlapping(m)
        chain = self._agent(b, m, start, first_in, m.blocks, b.compact_at, rehash=False)
        last = chain[-1]
        assert last.api_time is not None
        report = self._tokens(float(self.rng.uniform(200, 1_500)))
        return Episode(
            [chain],
            resume_at=last.t + last.api_time,
            min_next_in=last.in_tokens + last.out_tokens + report,
        )

    def _fresh(self, b: SessionBuilder, m: Request, start: float) -> list[Request] | None:
        """An agent from a fresh context sharing the tools and system blocks with ``m``, its
        prompts shorter than ``m``'s (``None``: ``m``'s context is too small for one)."""
        first_in = b.prefix_tokens + self._tokens(self._logn(self.p.sub_task_median * 4, 0.5))
        cap = m.in_tokens - BLOCK_SIZE
        if first_in + 8 * BLOCK_SIZE >= cap:
            return None
        chain = self._agent(b, m, start, first_in, b.prefix_tokens // BLOCK_SIZE, cap, rehash=True)
        return chain if len(chain) >= 2 else None  # one request would be a sidecar

    def _parallel(self, b: SessionBuilder, m: Request) -> Episode | None:
        chain = self._fresh(b, m, self._after(m))
        return None if chain is None else Episode([chain])

    def _workers(self, b: SessionBuilder, m: Request) -> Episode | None:
        start = self._after(m)
        chains = []
        for w in range(self.p.flat_workers):
            chain = self._fresh(b, m, round(start + 0.01 * w, 2))
            if chain is None:
                return None
            chains.append(chain)
        end = max(r.t + (r.api_time or 0.0) for c in chains for r in c)
        return Episode(chains, resume_at=end, report_tokens=sum(c[-1].out_tokens for c in chains))

    def _reduction(self, b: SessionBuilder, m: Request) -> Episode | None:
        from .session import Request

        out = int(np.clip(self._logn(self.p.flat_reduction_out_median, 0.5), 50, 3_500))
        extra = min(m.out_tokens // 2, self._tokens(float(self.rng.uniform(20, 400))))
        n_in = m.in_tokens + max(1, extra)
        if n_in < 16_384 or n_in <= 21 * out:  # the harness's reduction: large in, short out
            return None
        api = b.api_s(m.model, n_in, out, self.rng)
        req = Request(
            self._overlapping(m),
            "n",
            m.model,
            n_in,
            out,
            0,
            ("tool_result",),
            ("text",),
            "end_turn",
            api,
            None,
            0.0,
        )
        req.fork, req.fork_blocks = m, m.blocks
        return Episode([[req]])

    def _sidecar(self, b: SessionBuilder, m: Request) -> Episode | None:
        from .session import Request

        n_in = self._tokens(self._logn(6_000, 0.5))
        out = self._tokens(self._logn(300, 0.5))
        api = b.api_s(HAIKU, n_in, out, self.rng)
        req = Request(
            self._after(m),
            "n",
            HAIKU,
            n_in,
            out,
            0,
            ("text",),
            ("text",),
            "end_turn",
            api,
            None,
            0.0,
        )
        return Episode([[req]])
