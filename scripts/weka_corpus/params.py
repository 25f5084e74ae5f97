"""The generator's parameters, and the measurements behind them.

Measured on the four published Weka samples (kv-cache-tester's ``traces/``, the sources of
agentx/data/weka: 290 requests, 4 traces, 4 subagents) with the analysis in docs/corpus.md;
"tuned" parameters were then set so that a 700-trace corpus lands on the reference corpus's
figures (docs/corpus.md: 710 sessions, 49,334 requests, input p50 ~104K, p90 ~234K, max ~894K
tokens, 6.0e9 input tokens, theoretical hit rate 96.3 %). lognormal(m, s) has median m and log-sigma s.

    fixtures (measured)                              parameter
    requests per trace 26, 41, 51, 172 (ref.: 69.5)  main requests lognormal(42, 0.95), tuned
    1 of 4 traces has subagents (4 Explore agents,   p_delegating 0.3; a spawn per 40 main
      one alone, then three in parallel)             requests; 1/2/3 at once 55/20/25 %
    requests per subagent 5, 7, 14, 24               lognormal(10, 0.7)
    subagent first prompt 10.2K = tools + system     type prefix (7771 + 2227 tokens = 156
      + task; 156 blocks shared by all 4 subagents     blocks for Explore), shared per type
    1 of 4 traces all type 's' (streamed, ttft)       p_streaming 0.25
      of its rows 23/51 have stop '', no api_time    p_s_unfinished 0.45
      1 lone 's' row among 188 'n' rows              p_side_s 0.005
    first prompt 17K, 26K, 71K, 262K (kv-cache-      tools + system + lognormal(3K, 0.9) (60 %)
      tester's 642 sessions: p25 16.5K, p50 20K,       or lognormal(100K, 0.8); 1M sessions:
      p75 71K)                                         35 % / lognormal(170K, 0.5), tuned
    tools / system tokens opus 12.4-13.0K / 3.0-4.3K; uniform in those ranges
      sonnet 10.8K / 2.3K
    growth = in - prev in - prev out: p10 27, p50    lognormal(370 -> 450 tuned, 1.8)
      369, p90 3.2K, p99 22K, max 102K
    growth in subagents: p50 1.4K, p90 9.4K, max     lognormal(1400, 1.7)
      120K
    re-hashed trailing blocks of the previous        0/1/2/3 with 90.6/7.6/1.1/0.7 %
      request: 0: 251, 1: 21, 2: 3, 3: 2 of 277
    resets at 148K, 148K, 152K -> 50-62K (and one    200K window: at U(158K, 168K) -> tools +
      197K); shared blocks 261, 269, 346, 350 =        system + lognormal(55K, 0.35); 40 % also
      (tools + system) // 64, +85 twice                keep 20-100 more blocks; tuned
    (no 1M sample; the reference's p90 234K, max       1M window for p_long 0.2 of the sessions
      894K need some)                                  (Sonnet): at U(300K, 950K) -> + 90K
    out (main): p10 112, p50 293, p90 995, max 5.4K  lognormal(310, 0.85); stop '' rows 120
    subagent report (last turn) 3.4K-4.0K            lognormal(3700, 0.1)
    think after a tool result: p50 13, p75 25, p90   lognormal(11, 0.6); 5 % U(60, 130) (tool
      124 (several 124-125 s), max 8011                timeouts); 2 % lognormal(600, 1.6)
    think after user text: p10 21, p50 149, p90      lognormal(150, 1.6)
      1.65K, max 4.5K
    think in subagents: p50 5, p90 17.5, max 44      lognormal(5, 0.8)
    api_time = (a + b in/100K + c out/1K) x          opus 2.75, 1.51, 16.7; sonnet 3.0, 0.6,
      lognormal(1, 0.2): least squares per model       14.0; haiku 0.3, 2.2, 8.75
    ttft of streamed rows: p10 2.2, p50 2.5, p90 4.0 lognormal(2.5, 0.25)
    stop of main 'n' rows: tool_use 86 %, end_turn   p_end_turn 0.14; input_types follow the
      14 %; input_types 'text' after end_turn          previous stop
    subagent entry t = start + duration_ms / 1000,   the same, with start = parent end +
      start = parent's previous end + ~0.6 s,          U(0.3, 1.2) s, duration = last end +
      duration = last end + ~2.7 s, parent resumes     U(2.5, 3.5) s, resume + lognormal(8,
      8-12 s after the last one ends                   0.6) s
    t of the next row = end of the last row with an  the same
      api_time + think_time (t and think in whole s)
    len(hash_ids) = in // 64; compact JSON           the same
    flat agents (tests/formats/data/weka-flat; the   p_flat 0.11; episodes per such session
      reference's split by agentx-harness: 85 of       1 + Poisson(0.45); inline / parallel /
      710 sessions, 133 chains: 1 sidecar, 14          workers / reduction / sidecar 62 / 27 /
      reductions, 2 worker-group members)              3 / 6.5 / 1.5 %, tuned (700 traces:
                                                       91 split, 139 chains: 4 / 16 / 6)
    trace_0062 fa:000: 8 requests from all 2557      inline agent: lognormal(10, 1.1)
      blocks of the main request it overlaps;          requests, think lognormal(8, 0.8);
      the main agent's next prompt is longer           the main's next = its last + report
    trace_0269 fa:003, wg:000_*: forked at the 248   parallel agent / 3 workers from tools +
      tools + system blocks                            system + lognormal(800, 0.5)
    reductions aux:001 (0062, 0269): one request,    in = m's + <= 400, out lognormal(900,
      m's context, out 374-1609                        0.5) in [50, 3500]
"""

from __future__ import annotations

from dataclasses import dataclass, field

BLOCK_SIZE = 64
OPUS = "claude-opus-4-5-20251101"
SONNET = "claude-sonnet-4-5-20250929"
HAIKU = "claude-haiku-4-5-20251001"

# output_types by stop reason, (weights, choices): measured on the fixtures' main 'n' rows
THINKING_TOOL_USE = (
    (0.5, 0.4, 0.1),
    (("thinking", "tool_use"), ("text", "thinking", "tool_use"), ("text", "tool_use")),
)
THINKING_END_TURN = ((0.85, 0.15), (("text", "thinking"), ("text",)))
RESET_INPUT = ("text", "thinking", "tool_result", "tool_use")


@dataclass(frozen=True)
class ApiModel:
    """``api_time_s = (base + per_100k_in * in/1e5 + per_1k_out * out/1e3) * lognormal(0, sd)``."""

    base_s: float
    per_100k_in_s: float
    per_1k_out_s: float
    log_sd: float = 0.2


@dataclass(frozen=True)
class Params:
    """Every knob of the generator (medians and log-sigmas of lognormals unless said)."""

    # sessions
    n_main_median: float = 42.0
    n_main_sigma: float = 0.95
    n_main_max: int = 1500
    p_streaming: float = 0.25  # whole session of type 's' (fixture 0137)
    p_side_s: float = 0.005  # a lone 's' row without api_time inside an 'n' session
    p_s_unfinished: float = 0.45  # 's' rows with stop '' and no api_time / output_types
    p_long: float = 0.2  # 1M-context Sonnet sessions
    p_opus: float = 0.8  # of the 200K-window sessions
    window_tokens: int = 200_000
    compact_at: tuple[float, float] = (158_000, 168_000)  # uniform
    long_window_tokens: int = 1_000_000
    long_compact_at: tuple[float, float] = (300_000, 950_000)
    # first prompt beyond tools + system: small (a fresh task) or large (a resumed session)
    p_start_small: float = 0.6
    start_small_median: float = 3_000.0
    start_small_sigma: float = 0.9
    start_large_median: float = 100_000.0
    start_large_sigma: float = 0.8
    long_start_large_median: float = 170_000.0
    long_p_start_small: float = 0.35
    long_start_large_sigma: float = 0.5
    # per turn
    growth_median: float = 450.0
    growth_sigma: float = 1.8
    out_median: float = 310.0
    out_sigma: float = 0.85
    out_unfinished_median: float = 120.0
    p_end_turn: float = 0.14
    rehash_blocks: tuple[float, float, float, float] = (0.906, 0.076, 0.011, 0.007)  # 0,1,2,3
    # compaction: the new prompt = tools + system + summary
    summary_median: float = 55_000.0
    summary_sigma: float = 0.35
    long_summary_median: float = 90_000.0
    p_reset_extra: float = 0.4  # share a few more blocks than tools + system (CLAUDE.md, ...)
    # think time
    think_tool_median: float = 11.0
    think_tool_sigma: float = 0.6
    p_think_tool_timeout: float = 0.05  # a ~2 min tool timeout
    p_think_tool_human: float = 0.02  # a permission prompt waiting for the user
    think_human_median: float = 150.0
    think_human_sigma: float = 1.6
    think_max_s: float = 6 * 3600.0
    # subagents
    p_delegating: float = 0.3
    spawns_per_main_request: float = 1 / 40
    parallel_weights: tuple[float, ...] = (0.55, 0.2, 0.25)  # 1, 2, 3 agents at once
    sub_requests_median: float = 10.0
    sub_requests_sigma: float = 0.7
    sub_requests_max: int = 200
    sub_growth_median: float = 1_400.0
    sub_growth_sigma: float = 1.7
    sub_out_median: float = 300.0
    sub_out_sigma: float = 0.5
    sub_report_median: float = 3_700.0
    sub_report_sigma: float = 0.1
    sub_task_median: float = 200.0
    sub_think_median: float = 5.0
    sub_think_sigma: float = 0.8
    sub_window_tokens: int = 190_000
    # flat parallel agents (.flat): chains recorded among the main requests
    p_flat: float = 0.11
    flat_extra_episodes: float = 0.45  # episodes per flat session: 1 + Poisson(this)
    flat_kinds: tuple[float, ...] = (0.62, 0.27, 0.03, 0.065, 0.015)  # .flat.KINDS' order
    flat_workers: int = 3
    flat_agent_median: float = 10.0  # requests per agent
    flat_agent_sigma: float = 1.1
    flat_think_median: float = 8.0
    flat_think_sigma: float = 0.8
    flat_reduction_out_median: float = 900.0
    api: dict[str, ApiModel] = field(
        default_factory=lambda: {
            OPUS: ApiModel(2.75, 1.51, 16.7),
            SONNET: ApiModel(3.0, 0.6, 14.0),
            HAIKU: ApiModel(0.3, 2.2, 8.75),
        }
    )
    ttft_median_s: float = 2.5
    ttft_sigma: float = 0.25


DEFAULT_PARAMS = Params()
# The realisation closest to the reference corpus among seeds 0-5 at 700 traces (docs/corpus.md):
# the long-context sessions make p90 and max swing between seeds (p90 179K-246K).
DEFAULT_SEED = 2
# subagent types: (weight, model or None for the parent's, tool tokens, system tokens)
SUBAGENT_TYPES: tuple[tuple[str, float, str | None, int, int], ...] = (
    ("Explore", 0.6, HAIKU, 7771, 2227),  # fixture trace_0010
    ("general-purpose", 0.3, None, 12_100, 2_900),
    ("Plan", 0.1, None, 7_900, 2_600),
)
