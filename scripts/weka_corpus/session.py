"""One session's plan: token counts, prefix sharing, timing and subagents (no hash ids yet)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .flat import FlatPlanner
from .params import (
    BLOCK_SIZE,
    HAIKU,
    OPUS,
    RESET_INPUT,
    SONNET,
    SUBAGENT_TYPES,
    THINKING_END_TURN,
    THINKING_TOOL_USE,
    Params,
)


@dataclass
class Request:
    t: float
    type: str
    model: str
    in_tokens: int
    out_tokens: int
    shared_blocks: int  # leading blocks equal to the previous request of the thread
    input_types: tuple[str, ...]
    output_types: tuple[str, ...]
    stop: str
    api_time: float | None
    ttft: float | None
    think_time: float
    hash_ids: np.ndarray | None = None
    chain: int | None = None  # a flat chain's index (None: the main thread)
    fork: Request | None = None  # a chain's first request: whose leading blocks it repeats
    fork_blocks: int = 0  # ... how many of them

    @property
    def blocks(self) -> int:
        return self.in_tokens // BLOCK_SIZE

    @property
    def end(self) -> float | None:
        return None if self.api_time is None else self.t + self.api_time


@dataclass
class Subagent:
    start: float
    agent_id: str
    kind: str
    model: str
    tool_tokens: int
    system_tokens: int
    requests: list[Request]
    duration_ms: int = 0
    total_tokens: int = 0
    tool_use_count: int = 0

    @property
    def prefix_blocks(self) -> int:
        return (self.tool_tokens + self.system_tokens) // BLOCK_SIZE

    @property
    def t(self) -> float:
        return round(self.start + self.duration_ms / 1000, 3)


@dataclass
class Session:
    id: str
    model: str
    tool_tokens: int
    system_tokens: int
    items: list[Request | Subagent]
    flat_kinds: tuple[str, ...] = ()  # each flat chain's kind (.flat.KINDS), by its index


class Draw:
    """Scalar draws from one trace's generator."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def logn(self, median: float, sigma: float) -> float:
        return float(median * np.exp(sigma * self.rng.standard_normal()))

    def uniform(self, lo: float, hi: float) -> float:
        return float(self.rng.uniform(lo, hi))

    def bern(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, weights: tuple[float, ...]) -> int:
        x = self.rng.random() * sum(weights)
        for i, w in enumerate(weights):
            x -= w
            if x < 0:
                return i
        return len(weights) - 1


class SessionBuilder:
    """Plans one session: token counts, sharing, timing, subagents, flat agents (ids come
    later). ``flat_rng`` draws the flat agents (:mod:`.flat`): none without it."""

    def __init__(
        self,
        trace_id: str,
        rng: np.random.Generator,
        p: Params,
        scale: float,
        flat_rng: np.random.Generator | None = None,
    ) -> None:
        self.p = p
        self.d = Draw(rng)
        self.flat = FlatPlanner(flat_rng, p, scale) if flat_rng is not None else None
        self.scale = scale
        self.id = trace_id
        self.long = self.d.bern(p.p_long)
        self.streaming = self.d.bern(p.p_streaming)
        self.model = SONNET if self.long or not self.d.bern(p.p_opus) else OPUS
        if self.model == OPUS:
            self.tool_tokens = self._tokens(self.d.uniform(12_300, 13_100))
            self.system_tokens = self._tokens(self.d.uniform(2_900, 4_400))
        else:
            self.tool_tokens = self._tokens(self.d.uniform(10_500, 11_200))
            self.system_tokens = self._tokens(self.d.uniform(2_200, 2_600))
        self.window = p.long_window_tokens if self.long else p.window_tokens
        lo, hi = p.long_compact_at if self.long else p.compact_at
        self.compact_at = self._tokens(self.d.uniform(lo, hi))
        self.delegating = self.d.bern(p.p_delegating)
        self.agents = 0

    def _tokens(self, x: float) -> int:
        return max(1, round(x * self.scale))

    @property
    def prefix_tokens(self) -> int:
        return self.tool_tokens + self.system_tokens

    def _think(self, after: tuple[str, ...]) -> float:
        p, d = self.p, self.d
        if after == ("text",):
            s = d.logn(p.think_human_median, p.think_human_sigma)
        elif d.bern(p.p_think_tool_human):
            s = d.logn(p.think_human_median * 4, p.think_human_sigma)
        elif d.bern(p.p_think_tool_timeout):
            s = d.uniform(60, 130)
        else:
            s = d.logn(p.think_tool_median, p.think_tool_sigma)
        return float(min(round(s), p.think_max_s))

    def _api(self, model: str, n_in: int, n_out: int) -> float:
        return self.api_s(model, n_in, n_out, self.d.rng)

    def api_s(self, model: str, n_in: int, n_out: int, rng: np.random.Generator) -> float:
        """A request's server time, its noise drawn from ``rng``."""
        m = self.p.api[model]
        s = m.base_s + m.per_100k_in_s * n_in / 1e5 / self.scale
        s += m.per_1k_out_s * n_out / 1e3 / self.scale
        return round(max(0.3, s * float(np.exp(m.log_sd * rng.standard_normal()))), 2)

    def _first_in(self) -> int:
        p, d = self.p, self.d
        if d.bern(p.long_p_start_small if self.long else p.p_start_small):
            extra = d.logn(p.start_small_median, p.start_small_sigma)
        else:
            if self.long:
                extra = d.logn(p.long_start_large_median, p.long_start_large_sigma)
            else:
                extra = d.logn(p.start_large_median, p.start_large_sigma)
        first = self.prefix_tokens + self._tokens(extra)
        return min(first, int(self.compact_at * 0.9))

    def build(self) -> Session:
        p, d = self.p, self.d
        n_main = int(np.clip(round(d.logn(p.n_main_median, p.n_main_sigma)), 2, p.n_main_max))
        if self.flat is not None:
            self.flat.plan(n_main)
        items: list[Request | Subagent] = []
        prev: Request | None = None
        last_end = 0.0
        report_tokens = 0  # subagent reports arriving as the next tool result
        resume_at: float | None = None  # when the last subagent of a spawn ended
        after_flat = False  # the previous main request was followed by a flat episode
        min_in = 0  # what the next main prompt holds at least (an inline agent's last one)
        for k in range(n_main):
            if prev is None:
                n_in, shared, itypes = self._first_in(), 0, ("text",)
            else:
                itypes = ("tool_result",) if prev.stop == "tool_use" else ("text",)
                growth = self._tokens(d.logn(p.growth_median, p.growth_sigma)) + report_tokens
                n_in = max(prev.in_tokens + prev.out_tokens + growth, min_in)
                shared = max(0, prev.blocks - d.pick(p.rehash_blocks))
                if after_flat:  # whole: a re-hashed tail would be as close to the chain
                    shared = prev.blocks
                too_long = n_in > self.compact_at or n_in > self.window - 40_000 * self.scale
                if too_long and not after_flat:  # never right after a flat episode (.flat)
                    n_in, shared = self._compact()
                    itypes = RESET_INPUT if d.bern(0.5) else ("text",)
            report_tokens, min_in, after_flat = 0, 0, False
            if resume_at is not None:
                t = float(round(resume_at + d.logn(8.0, 0.6)))
                think = float(round(t - last_end))
                resume_at = None
            elif prev is None:
                t, think = 0.0, 0.0
            else:  # think counts from the last request that finished (had an api_time)
                t = float(round(max(last_end, prev.t) + self._think(itypes)))
                think = float(round(t - last_end))
            req = self._main_request(t, n_in, shared, itypes, think)
            items.append(req)
            if req.end is not None:
                last_end = req.end
            prev = req
            if self.flat is not None and k < n_main - 1 and self.flat.wants(k, req):
                episode = self.flat.episode(self, req)
                if episode is not None:
                    items.extend(r for chain in episode.chains for r in chain)
                    after_flat = True
                    min_in, report_tokens = episode.min_next_in, episode.report_tokens
                    if episode.resume_at is not None:
                        resume_at = last_end = episode.resume_at
                    continue
            if (
                self.delegating
                and req.stop == "tool_use"
                and k < n_main - 1
                and d.bern(p.spawns_per_main_request)
            ):
                subs = self._spawn(last_end)
                items.extend(sorted(subs, key=lambda s: s.t))
                report_tokens = sum(s.requests[-1].out_tokens for s in subs) + self._tokens(
                    d.uniform(200, 1_500)
                )
                resume_at = max(s.t for s in subs)
        items.sort(key=lambda x: x.t)  # flat chains among the main requests, in time order
        kinds = tuple(self.flat.kinds) if self.flat is not None else ()
        return Session(self.id, self.model, self.tool_tokens, self.system_tokens, items, kinds)

    def _compact(self) -> tuple[int, int]:
        p, d = self.p, self.d
        median = p.long_summary_median if self.long else p.summary_median
        n_in = self.prefix_tokens + self._tokens(d.logn(median, p.summary_sigma))
        shared = self.prefix_tokens // BLOCK_SIZE
        if d.bern(p.p_reset_extra):
            shared += int(d.uniform(20, 100) * self.scale)
        return n_in, min(shared, n_in // BLOCK_SIZE)

    def _main_request(
        self, t: float, n_in: int, shared: int, itypes: tuple[str, ...], think: float
    ) -> Request:
        p, d = self.p, self.d
        kind = "s" if self.streaming or d.bern(p.p_side_s) else "n"
        unfinished = kind == "s" and (
            not self.streaming or d.bern(p.p_s_unfinished)
        )  # a lone 's' row in an 'n' session is always one of these
        if unfinished:
            out = self._tokens(d.logn(p.out_unfinished_median, 0.5))
            return Request(
                t, kind, self.model, n_in, out, shared, itypes, (), "", None, None, think
            )
        out = self._tokens(min(d.logn(p.out_median, p.out_sigma), 32_000))
        api = self._api(self.model, n_in, out)
        if kind == "s":
            ttft = round(min(d.logn(p.ttft_median_s, p.ttft_sigma), api * 0.9), 2)
            return Request(
                t,
                kind,
                self.model,
                n_in,
                out,
                shared,
                itypes,
                ("text",),
                "tool_use",
                api,
                ttft,
                think,
            )
        if d.bern(p.p_end_turn):
            stop, table = "end_turn", THINKING_END_TURN
        else:
            stop, table = "tool_use", THINKING_TOOL_USE
        otypes = table[1][d.pick(table[0])]
        return Request(
            t, kind, self.model, n_in, out, shared, itypes, otypes, stop, api, None, think
        )

    def _spawn(self, parent_end: float) -> list[Subagent]:
        p, d = self.p, self.d
        n = 1 + d.pick(p.parallel_weights)
        start = round(parent_end + d.uniform(0.3, 1.2), 2)
        return [self._subagent(start + round(d.uniform(0, 0.03), 2)) for _ in range(n)]

    def _subagent(self, start: float) -> Subagent:
        p, d = self.p, self.d
        kind, _, model, tools, system = SUBAGENT_TYPES[d.pick(tuple(x[1] for x in SUBAGENT_TYPES))]
        if model is None:
            model = self.model
            tools, system = self.tool_tokens, self.system_tokens
        else:
            tools, system = self._tokens(tools), self._tokens(system)
        self.agents += 1
        sub = Subagent(start, f"agent_{self.agents:03d}", kind, model, tools, system, [])
        n = int(
            np.clip(
                round(d.logn(p.sub_requests_median, p.sub_requests_sigma)), 2, p.sub_requests_max
            )
        )
        thinking = model != HAIKU
        prev: Request | None = None
        last_end = 0.0
        for k in range(n):
            last = k == n - 1
            if prev is None:
                n_in = tools + system + self._tokens(d.logn(p.sub_task_median, 0.5))
                shared, itypes, think, t = 0, ("text",), 0.0, 0.0
            else:
                growth = self._tokens(d.logn(p.sub_growth_median, p.sub_growth_sigma))
                n_in = prev.in_tokens + prev.out_tokens + growth
                if n_in > p.sub_window_tokens * self.scale:
                    n_in = int(p.sub_window_tokens * self.scale)
                    last = True
                shared = max(0, min(prev.blocks, n_in // BLOCK_SIZE) - d.pick(p.rehash_blocks))
                itypes = ("tool_result",)
                think = float(round(d.logn(p.sub_think_median, p.sub_think_sigma)))
                t = float(round(last_end + think))
            if last:
                out = self._tokens(d.logn(p.sub_report_median, p.sub_report_sigma))
                stop = "end_turn"
                otypes: tuple[str, ...] = ("text", "thinking") if thinking else ("text",)
            else:
                out = self._tokens(d.logn(p.sub_out_median, p.sub_out_sigma))
                stop = "tool_use"
                otypes = ("thinking", "tool_use") if thinking else ("text", "tool_use")
            api = self._api(model, n_in, out)
            req = Request(t, "n", model, n_in, out, shared, itypes, otypes, stop, api, None, think)
            sub.requests.append(req)
            last_end = t + api
            prev = req
            if last:
                break
        sub.duration_ms = round((last_end + d.uniform(2.5, 3.5)) * 1000)
        final = sub.requests[-1]
        sub.total_tokens = round((final.in_tokens + final.out_tokens) * d.uniform(0.85, 1.1))
        sub.tool_use_count = max(1, round(len(sub.requests) * d.uniform(1.5, 3.5)))
        return sub
