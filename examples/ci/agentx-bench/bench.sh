#!/usr/bin/env bash
# A benchmark a CI job runs every day: replay a trace against an inference server, write JUnit
# and (under GitHub Actions) a step summary, check the run against the newest compatible
# baseline, and keep the run as tomorrow's baseline when asked.
#
#   bash bench.sh [extra `agentx replay` options, e.g. --concurrency 8 --max-requests 200]
#
# Environment (all optional):
#   AGENTX_ENDPOINT   the server to measure, e.g. http://vllm:8000 (its key: OPENAI_API_KEY).
#                     Unset: start `agentx serve-sim` on this machine and measure that.
#   AGENTX_SIM_ARGS   options for that serve-sim, e.g. "--decode-tps 400"
#   AGENTX_TRACE      the trace to replay [default: example, the trace bundled with agentx]
#   AGENTX_RESULTS    results directory, kept as a CI artifact [default: results/bench]
#   AGENTX_BASELINES  directory of baselines (agentx baseline save) [default: baselines]
#   AGENTX_FAIL_ON    the regressions that fail the job [default: agentx's --fail-on default]
#   AGENTX_STRICT     1: an inconclusive check fails too
#   AGENTX_LABELS     labels of the run, space-separated NAME=VALUE (e.g. "engine=vllm-0.32")
#   AGENTX_SAVE_AS    save this run as the baseline of this name once it passed (e.g. nightly)
#
# Exit code: 0 passed (or no baseline yet), 3 a regression or an SLO check failed, 1 the run
# itself failed. JUnit: $AGENTX_RESULTS/junit.xml.
set -euo pipefail

trace=${AGENTX_TRACE:-example}
results=${AGENTX_RESULTS:-results/bench}
baselines=${AGENTX_BASELINES:-baselines}
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
    kill -0 "$sim_pid" 2>/dev/null || { echo "bench: serve-sim did not start" >&2; exit 1; }
    sleep 0.1
  done
  endpoint=$(head -n 1 "$url_file")
  [ -n "$endpoint" ] || { echo "bench: serve-sim did not start in 30 s" >&2; exit 1; }
fi

args=(--endpoint "$endpoint" -o "$results" --force --junit "$results/junit.xml")
for label in ${AGENTX_LABELS:-}; do
  args+=(--label "$label")
done
if [ -n "$(ls -A "$baselines" 2>/dev/null)" ]; then
  args+=(--baseline "$baselines")
  [ -n "${AGENTX_FAIL_ON:-}" ] && args+=(--fail-on "$AGENTX_FAIL_ON")
  [ "${AGENTX_STRICT:-0}" = 1 ] && args+=(--strict)
else
  echo "bench: no baseline in $baselines yet: this run is measured, not checked" >&2
fi

echo "bench: replaying $trace against $endpoint" >&2
rc=0
agentx replay "$trace" "${args[@]}" "$@" || rc=$?
case $rc in
  0) echo "bench: passed (results in $results, JUnit in $results/junit.xml)" >&2 ;;
  3) echo "bench: a regression or an SLO check failed (see $results/baseline.json)" >&2 ;;
  *) echo "bench: the replay failed (exit $rc)" >&2 ;;
esac
if [ "$rc" = 0 ] && [ -n "${AGENTX_SAVE_AS:-}" ]; then
  agentx baseline save "$results" "$AGENTX_SAVE_AS" --dir "$baselines" --force
fi
exit "$rc"
