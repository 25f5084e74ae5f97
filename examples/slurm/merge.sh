#!/usr/bin/env bash
# The merge step: every shard-<i>/ under AGENTX_RESULTS into AGENTX_RESULTS/merged/, exactly
# (from the shards' rows). merge.sbatch sources it once the array job has succeeded.
set -euo pipefail

results=${AGENTX_RESULTS:?set AGENTX_RESULTS to the directory holding shard-<i>/}
if [[ -n ${AGENTX_VENV:-} ]]; then
    # shellcheck disable=SC1091  # the user's virtualenv
    source "$AGENTX_VENV/bin/activate"
fi
shopt -s nullglob
shards=("$results"/shard-*)
if ((${#shards[@]} == 0)); then
    echo "merge.sh: no shard-* results in $results" >&2
    exit 1
fi
exec agentx merge "${shards[@]}" -o "$results/merged"
