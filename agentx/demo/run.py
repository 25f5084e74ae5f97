"""The main job end to end on embedded defaults, with nothing outside this machine:

1. start ``serve-sim`` as "the model provider";
2. put ``agentx capture`` (reverse mode) in front of it and run scripted coding-agent sessions
   through it (Anthropic Messages and OpenAI Chat, streaming, tool loops);
3. ``scrub`` the capture;
4. ``replay`` the scrubbed capture and the bundled example trace against a *fresh* serve-sim
   (cold cache) and return the summaries, ready to render.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentx.apis import Api
from agentx.capture.runner import Capture, CaptureConfig
from agentx.core.errors import AgentxError
from agentx.core.examples import EXAMPLES
from agentx.demo.agent import ScriptedAgent
from agentx.replay.options import ReplayOptions
from agentx.replay.run import run_replay
from agentx.results.scrub import ScrubReport
from agentx.results.summary import Summary
from agentx.scrub.pipeline import ScrubOptions, scrub_trace
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.process import SimProcess
from agentx.serve_sim.server import SimServer

BUNDLED_TRACE = EXAMPLES["example"].path


@dataclass(frozen=True, slots=True)
class DemoResult:
    capture_path: Path
    clean_path: Path
    captured_requests: int
    scrub: ScrubReport
    replays: dict[str, Summary]  # name -> its summary.json
    output_dir: Path


def run_demo(
    workdir: Path,
    *,
    agent_sessions: int = 2,
    agent_turns: int = 6,
    trace: Path | None = BUNDLED_TRACE,
    concurrency: int = 4,
    time_scale: float = 0.05,
    fast: bool = False,
    say: Callable[[str], None] = print,
) -> DemoResult:
    """``fast``: serve-sim without modelled latency and no think time (seconds, not a minute: a
    check that an install works); the hit rates are the same, the latencies are loopback's."""
    capture_path = workdir / "capture.parquet"
    clean_path = workdir / "capture.clean.parquet"
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        for stale in (capture_path, clean_path):
            stale.unlink(missing_ok=True)
    except OSError as exc:
        raise AgentxError(f"--workdir {workdir}: {exc.strerror or exc}") from None

    say("1/4 serve-sim as the model provider, agentx capture in front of it")
    provider = SimConfig.of(port=0, decode_tps=400.0)  # a quick "provider" for the scripted agent
    with SimServer(provider) as upstream:
        cap = Capture(
            CaptureConfig(out=capture_path, upstream=upstream.url, port=0, status=False),
            report=lambda msg: None,
        ).start()
        try:
            say(f"2/4 {agent_sessions} scripted agent sessions through {cap.url}")
            for i in range(agent_sessions):
                api = Api.ANTHROPIC_MESSAGES if i % 2 == 0 else Api.OPENAI_CHAT
                agent = ScriptedAgent(cap.url, api=api, turns=agent_turns, seed=i)
                try:
                    agent.run()
                finally:
                    agent.close()
        finally:
            stats = cap.close()
    say(f"   captured {stats.requests} requests into {capture_path}")

    say("3/4 scrub")
    report = scrub_trace(capture_path, clean_path, ScrubOptions(), force=True)

    replays: dict[str, Summary] = {}
    targets = [("capture", clean_path)]
    if trace is not None:
        targets.append(("example", trace))
    for name, path in targets:
        say(f"4/4 replay {path.name} against a fresh serve-sim (cold cache)")
        with SimProcess(SimConfig.of(port=0, fast=fast)) as server:  # own process: client measured
            result = run_replay(
                ReplayOptions.of(
                    trace=path,
                    endpoint=server.url,
                    concurrency=concurrency,
                    time_scale=0.0 if fast else time_scale,
                    max_think_s=2.0,
                    output_dir=workdir / f"replay-{name}",
                    force=True,  # the demo's own directory: a second demo replaces the first
                    progress=False,
                )
            )
        replays[name] = result.summary
    return DemoResult(
        capture_path=capture_path,
        clean_path=clean_path,
        captured_requests=stats.requests,
        scrub=report,
        replays=replays,
        output_dir=workdir,
    )
