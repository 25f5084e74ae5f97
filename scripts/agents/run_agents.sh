#!/usr/bin/env bash
# Real coding agents through `agentx capture` against a scripted upstream (not part of `make test`).
#   bash scripts/agents/run_agents.sh [OUT_DIR]
# Installs @anthropic-ai/claude-code and @openai/codex from npm into .cache/agents (once), runs
#   1. claude -p with two Bash tool turns, 2. claude -p delegating to a subagent (Agent tool),
#   3. codex exec with two tool turns (custom provider pointed at agentx),
# and prints each trace. Dummy API keys only; nothing leaves 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=$ROOT/.venv/bin/python
AGENTX=$ROOT/.venv/bin/agentx
OUT=${1:-$ROOT/.cache/agents/traces}
NPM_DIR=$ROOT/.cache/agents
mkdir -p "$OUT" "$NPM_DIR"
if [ ! -x "$NPM_DIR/node_modules/.bin/codex" ] || [ ! -d "$NPM_DIR/node_modules/@anthropic-ai/claude-code" ]; then
  npm install --no-audit --no-fund --prefix "$NPM_DIR" @anthropic-ai/claude-code @openai/codex
fi
# claude-code's postinstall only copies the native binary out of its platform package
CLAUDE_BIN=$(ls -d "$NPM_DIR"/node_modules/@anthropic-ai/claude-code-linux-*/ 2>/dev/null | head -1)claude
CODEX=$NPM_DIR/node_modules/.bin/codex

WORK=$(mktemp -d)
"$PY" scripts/agents/scripted_upstream.py --port-file "$WORK/up.url" 2> "$OUT/upstream.log" &
UP_PID=$!
trap 'kill $UP_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/up.url" ] && break; sleep 0.1; done
UP=$(cat "$WORK/up.url")
echo "scripted upstream: $UP"

run() { echo; echo "== $1"; shift; "$@"; }

mkdir -p "$WORK/claude" "$WORK/claude-sub" "$WORK/codex" "$WORK/home" "$WORK/codex-home"
(cd "$WORK/claude" && HOME=$WORK/home ANTHROPIC_API_KEY=sk-ant-api03-DUMMYkeyDUMMYkey \
  run "claude: two tool turns" "$AGENTX" capture --upstream "$UP" -o "$OUT/claude.parquet" --no-status -- \
  "$CLAUDE_BIN" -p "Create notes.txt and show it" --allowedTools Bash)
(cd "$WORK/claude-sub" && HOME=$WORK/home ANTHROPIC_API_KEY=sk-ant-api03-DUMMYkeyDUMMYkey \
  run "claude: subagent" "$AGENTX" capture --upstream "$UP" -o "$OUT/claude-subagent.parquet" --no-status -- \
  "$CLAUDE_BIN" -p "SUBAGENT: delegate counting files, then create notes.txt" --allowedTools "Bash Agent")
(cd "$WORK/codex" && CODEX_HOME=$WORK/codex-home OPENAI_API_KEY=sk-proj-DUMMYkeyDUMMYkey \
  run "codex: two tool turns" "$AGENTX" capture --upstream "$UP" -o "$OUT/codex.parquet" --no-status -- \
  sh -c 'exec "$0" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
    -c model_provider=agentx -c model_providers.agentx.name=agentx \
    -c model_providers.agentx.base_url="$OPENAI_BASE_URL" -c model_providers.agentx.env_key=OPENAI_API_KEY \
    -c model_providers.agentx.wire_api=responses "Create notes.txt and show it"' "$CODEX")
for t in claude claude-subagent codex; do
  echo; echo "== trace $t"; "$PY" scripts/agents/show_trace.py "$OUT/$t.parquet"
done
echo; echo "upstream log: $OUT/upstream.log"
