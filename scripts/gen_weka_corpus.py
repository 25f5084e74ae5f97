"""Generate a realistic Weka-format agent corpus (see scripts/weka_corpus and docs/corpus.md).

    .venv/bin/python scripts/gen_weka_corpus.py .cache/corpora/weka-1x --traces 700
    .venv/bin/python scripts/gen_weka_corpus.py DIR --traces 50 --scale 0.1 --json

Prints a one-line summary (or ``--json``): traces, requests, input tokens and percentiles, the
theoretical hit rate the corpus was built with, JSON bytes, seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from weka_corpus import DEFAULT_SEED, generate_corpus


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--traces", type=int, default=700, help="sessions to write [700]")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"[{DEFAULT_SEED}]")
    ap.add_argument("--scale", type=float, default=1.0, help="token-count multiplier [1.0]")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)

    def progress(k: int, n: int) -> None:
        if sys.stderr.isatty() and (k == n or k % 25 == 0):
            print(f"\r{k}/{n} traces", end="\n" if k == n else "", file=sys.stderr, flush=True)

    try:
        s = generate_corpus(args.out_dir, args.traces, args.seed, args.scale, progress=progress)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(orjson.dumps(s.as_dict(), option=orjson.OPT_INDENT_2).decode())
        return 0
    pct = s.input_percentiles
    print(
        f"{s.out_dir}: {s.traces} traces, {s.requests} requests "
        f"({s.requests / s.traces:.1f}/trace), {s.subagents} subagents, "
        f"{s.flat_chains} flat chains, "
        f"{s.input_tokens / 1e9:.2f}e9 input tokens (p50 {pct['p50'] / 1e3:.0f}K, "
        f"p90 {pct['p90'] / 1e3:.0f}K, max {pct['max'] / 1e3:.0f}K), "
        f"theoretical hit rate {s.hit_rate:.2%}, {s.json_bytes / 1e6:.0f} MB JSON, "
        f"{s.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
