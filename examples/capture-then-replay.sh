#!/usr/bin/env bash
# Record a coding agent's model traffic, clean it, and replay it as load against a server.
#
#   bash capture-then-replay.sh -- claude -p "add a --verbose flag to the CLI"
#   AGENTX_UPSTREAM=openai bash capture-then-replay.sh -- codex exec "fix the failing test"
#
# Environment (all optional):
#   AGENTX_UPSTREAM  the agent's provider: anthropic (default), openai, or a base URL (an
#                    OpenAI-compatible or Anthropic-compatible server); the agent's own API key
#                    passes through, and is never written to the trace
#   AGENTX_ENDPOINT  the server to replay against [default: start `agentx serve-sim` here]
#   AGENTX_WORKDIR   where everything goes [default: agentx-run]:
#                    capture.parquet, clean.parquet, scrub.json, results/, report.html
#   AGENTX_SIM_ARGS  options for the local serve-sim, e.g. "--fast"
#   extra `agentx replay` options: AGENTX_REPLAY_ARGS, e.g. "--concurrency 4 --time-scale 0"
set -euo pipefail

[ "${1:-}" = "--" ] && shift
if [ $# -eq 0 ]; then
  sed -n '2,5p' "$0" >&2
  exit 2
fi

upstream=${AGENTX_UPSTREAM:-anthropic}
workdir=${AGENTX_WORKDIR:-agentx-run}
endpoint=${AGENTX_ENDPOINT:-}
mkdir -p "$workdir"

echo "== 1/4 capture: $* (upstream $upstream)" >&2
agentx capture -o "$workdir/capture.parquet" --upstream "$upstream" -- "$@"

echo "== 2/4 scrub: drop errors, retries and probes; redact secrets" >&2
agentx scrub "$workdir/capture.parquet" -o "$workdir/clean.parquet" --report "$workdir/scrub.json"
agentx stats "$workdir/clean.parquet"

if [ -z "$endpoint" ]; then
  url_file=$(mktemp)
  # shellcheck disable=SC2086  # AGENTX_SIM_ARGS is a list of options
  agentx serve-sim --port 0 ${AGENTX_SIM_ARGS:-} >"$url_file" &
  sim_pid=$!
  trap 'kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; rm -f "$url_file"' EXIT
  for _ in $(seq 300); do
    [ -s "$url_file" ] && break
    kill -0 "$sim_pid" 2>/dev/null || { echo "serve-sim did not start" >&2; exit 1; }
    sleep 0.1
  done
  endpoint=$(head -n 1 "$url_file")
  [ -n "$endpoint" ] || { echo "serve-sim did not start in 30 s" >&2; exit 1; }
fi

echo "== 3/4 replay against $endpoint" >&2
# shellcheck disable=SC2086  # AGENTX_REPLAY_ARGS is a list of options
agentx replay "$workdir/clean.parquet" --endpoint "$endpoint" -o "$workdir/results" \
  ${AGENTX_REPLAY_ARGS:-}

echo "== 4/4 report" >&2
agentx report "$workdir/results" --html "$workdir/report.html"
echo "done: $workdir/report.html; compare a later run with" \
  "agentx report NEW_RESULTS --compare $workdir/results" >&2
