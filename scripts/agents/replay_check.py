"""Replay a captured agent trace and check that what went out is what the trace holds.

    python scripts/agents/replay_check.py TRACE --endpoint URL [--api chat|native] [--out DIR]

Runs ``agentx scrub`` then ``agentx replay --time-scale 0 --no-salt`` against the endpoint
(serve-sim, which counts prompt tokens with agentx's own rendering) and compares:

- requests: the rows replay plans from the scrubbed trace vs the requests it sent (all ok);
- output tokens: the scrubbed trace's ``completion_tokens`` (what replay asks for, with
  ``ignore_eos``) vs the tokens the server returned;
- input tokens (``--api chat``): each scrubbed request converted to chat
  (``agentx.apis.translate.to_chat``) and counted (``agentx.prefixcache.tokens``) vs the prompt tokens the
  server reported.

Prints one line per figure and exits 1 on a mismatch; with ``--out``, also writes the figures
to ``DIR/check.json`` (what scripts/agents/table.py puts in docs/agents.md's table).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from agentx.apis import Api
from agentx.apis.bodies import exchange_meta
from agentx.apis.translate import to_chat
from agentx.formats import load_exchanges
from agentx.prefixcache.tokens import count_request_tokens
from agentx.workload.build import max_tokens_of
from agentx.workload.plan import skip_reason


def expected(trace: Path) -> tuple[int, int, int]:
    """(requests, output tokens, chat input tokens) of the replayable rows of ``trace``."""
    requests = output = prompt = 0
    for ex in load_exchanges(trace):
        if skip_reason(exchange_meta(ex)) is not None:
            continue
        requests += 1
        output += max_tokens_of(ex)
        messages, tools = to_chat(ex.api, ex.request)
        body: dict[str, object] = {"messages": messages}
        if tools:
            body["tools"] = tools
        prompt += count_request_tokens(Api.OPENAI_CHAT, body)
    return requests, output, prompt


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", type=Path)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--api", default="chat")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--version", default=None, help="the agent's version, for check.json")
    args = ap.parse_args()
    agentx = str(Path(sys.executable).with_name("agentx"))
    out = args.out or Path(tempfile.mkdtemp(prefix="replay-check-"))
    out.mkdir(parents=True, exist_ok=True)
    clean = out / "clean.parquet"
    clean.unlink(missing_ok=True)
    subprocess.run(
        [agentx, "scrub", str(args.trace), "-o", str(clean)],
        check=True,
        capture_output=True,
    )
    results = out / f"replay-{args.api}"
    shutil.rmtree(results, ignore_errors=True)
    subprocess.run(
        [
            *(agentx, "replay", str(clean), "--endpoint", args.endpoint),
            *("--time-scale", "0", "--no-salt", "--api", args.api, "-o", str(results)),
        ],
        check=True,
        capture_output=True,
    )
    summary = json.loads((results / "summary.json").read_text())
    want_requests, want_output, want_prompt = expected(clean)
    rows = [
        ("requests", want_requests, summary["requests"]["ok"]),
        ("output tokens", want_output, summary["tokens"]["output"]),
    ]
    if args.api == "chat":
        rows.append(("input tokens", want_prompt, summary["tokens"]["input"]))
    ok = summary["requests"]["errors"] == 0
    for name, want, got in rows:
        same = want == got
        ok = ok and same
        print(
            f"{args.trace.name}: {name}: trace {want}, replay {got} {'ok' if same else 'MISMATCH'}"
        )
    figures = {"version": args.version, "ok": ok}
    figures.update({name: {"trace": want, "replay": got} for name, want, got in rows})
    (out / "check.json").write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
