#!/usr/bin/env bash
# Gate a CI job on agentx's --slo checks: replay a trace against an inference server and fail the
# job when the server misses its service levels.
#
#   bash slo-gate.sh [extra `agentx replay` options, e.g. --concurrency 8 --max-requests 200]
#
# Environment (all optional):
#   AGENTX_ENDPOINT  the server to measure, e.g. http://vllm:8000 (its key: OPENAI_API_KEY).
#                    Unset: start `agentx serve-sim` on this machine and measure that.
#   AGENTX_TRACE     the trace to replay (agentx Parquet, Weka, Mooncake) [default: example,
#                    the trace bundled with agentx]
#   AGENTX_SLO       the checks [default: ttft_p99<=2s,itl_p50<=50ms,error_rate<=1%]
#   AGENTX_RESULTS   results directory, worth keeping as a CI artifact [default: results/slo-gate]
#   AGENTX_SIM_ARGS  options for the local serve-sim, e.g. "--fast"
#
# Exit code: 0 every check passed, 3 a check failed (the job fails), 1 the run itself failed.
set -euo pipefail

trace=${AGENTX_TRACE:-example}
slo=${AGENTX_SLO:-"ttft_p99<=2s,itl_p50<=50ms,error_rate<=1%"}
results=${AGENTX_RESULTS:-results/slo-gate}
endpoint=${AGENTX_ENDPOINT:-}

if [ -z "$endpoint" ]; then
  url_file=$(mktemp)
  # serve-sim prints its URL on stdout once it accepts requests (--port 0: a free port)
  # shellcheck disable=SC2086  # AGENTX_SIM_ARGS is a list of options
  agentx serve-sim --port 0 ${AGENTX_SIM_ARGS:-} >"$url_file" &
  sim_pid=$!
  trap 'kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; rm -f "$url_file"' EXIT
  for _ in $(seq 300); do
    [ -s "$url_file" ] && break
    kill -0 "$sim_pid" 2>/dev/null || { echo "slo-gate: serve-sim did not start" >&2; exit 1; }
    sleep 0.1
  done
  endpoint=$(head -n 1 "$url_file")
  [ -n "$endpoint" ] || { echo "slo-gate: serve-sim did not start in 30 s" >&2; exit 1; }
fi

echo "slo-gate: replaying $trace against $endpoint, checks: $slo" >&2
rc=0
agentx replay "$trace" --endpoint "$endpoint" --slo "$slo" -o "$results" "$@" || rc=$?
case $rc in
  0) echo "slo-gate: every SLO check passed (results in $results)" >&2 ;;
  3) echo "slo-gate: an SLO check failed (results in $results/summary.json, key slo)" >&2 ;;
  *) echo "slo-gate: the replay failed (exit $rc)" >&2 ;;
esac
exit "$rc"
