#!/usr/bin/env bash
# One shard of an agentx replay split: the SLURM array task's index is the shard index.
# shards.sbatch sources it on the compute node; to try it by hand:
#   SLURM_ARRAY_TASK_ID=0 AGENTX_SHARDS=2 AGENTX_ENDPOINT=http://127.0.0.1:8000 \
#   AGENTX_RESULTS=results/run1 bash run_shard.sh
#
# AGENTX_ENDPOINT  the server under test (required)
# AGENTX_RESULTS   where shard-<i>/ goes, on a file system the merge step sees (required)
# AGENTX_TRACE     trace path or bundled example name (default: example)
# AGENTX_SHARDS    number of shards (default: SLURM_ARRAY_TASK_COUNT)
# AGENTX_START_AT  ISO 8601 UTC or epoch seconds: every shard starts its lanes then (optional)
# AGENTX_REPLAY_ARGS  more `agentx replay` options, e.g. "--concurrency 16 --duration 900"
# AGENTX_VENV      a virtualenv with agentx to activate first (optional)
set -euo pipefail

index=${SLURM_ARRAY_TASK_ID:?run as a SLURM array task (sbatch --array), or set SLURM_ARRAY_TASK_ID}
count=${AGENTX_SHARDS:-${SLURM_ARRAY_TASK_COUNT:?set AGENTX_SHARDS to the number of shards}}
endpoint=${AGENTX_ENDPOINT:?set AGENTX_ENDPOINT to the server under test}
results=${AGENTX_RESULTS:?set AGENTX_RESULTS to a directory on a shared file system}
trace=${AGENTX_TRACE:-example}

if [[ -n ${AGENTX_VENV:-} ]]; then
    # shellcheck disable=SC1091  # the user's virtualenv
    source "$AGENTX_VENV/bin/activate"
fi
start=()
if [[ -n ${AGENTX_START_AT:-} ]]; then
    start=(--start-at "$AGENTX_START_AT")
fi
read -r -a extra <<<"${AGENTX_REPLAY_ARGS:-}"

mkdir -p "$results"
# exec: agentx itself receives SLURM's SIGTERM (time limit, scancel) and writes partial results
exec agentx replay "$trace" --endpoint "$endpoint" --shard "$index/$count" \
    ${start[@]+"${start[@]}"} -o "$results/shard-$index" ${extra[@]+"${extra[@]}"}
