#!/usr/bin/env bash
# Real coding agents through `agentx capture` against a scripted upstream (`make agents`; not
# part of `make test`: it downloads the agents).
#   [ONLY="gemini-cli aider"] bash scripts/agents/run_agents.sh [--fixtures] [OUT_DIR]
# Installs the pinned agents into .cache/agents (npm packages, and aider from PyPI in its own
# Python 3.12 venv), again only when the pins change; runs each through `agentx capture` with dummy keys against
# scripts/agents/scripted_upstream.py (two shell-tool turns, then a final text; aider gets a
# failing then a working SEARCH/REPLACE edit); prints each trace; replays it against serve-sim
# and checks that the same requests and tokens went out (scripts/agents/replay_check.py); ends
# with docs/agents.md's table of the runs (scripts/agents/table.py).
# With --fixtures, rewrites tests/capture/fixtures/agents/<agent>.json from the runs.
# Nothing leaves 127.0.0.1, and no real config is read or written: each agent gets a HOME in
# the work directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
FIXTURES=0
if [ "${1:-}" = "--fixtures" ]; then FIXTURES=1; shift; fi
PY=$ROOT/.venv/bin/python
AGENTX=$ROOT/.venv/bin/agentx
OUT=${1:-$ROOT/.cache/agents/traces}
CACHE=$ROOT/.cache/agents
# The versions docs/agents.md was checked with (npm and PyPI only: Crush's npm package
# downloads its binary from GitHub at install time, amp cannot be pointed at a model upstream,
# Goose and Cursor's CLI are on neither registry). Kilo 7.8.1's postinstall is broken upstream.
NPM_PACKAGES=(@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0
  opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 @qwen-code/qwen-code@0.15.10
  cline@3.0.65 @kilocode/cli@7.7.7)
AIDER_PACKAGE=aider-chat==0.86.2
mkdir -p "$OUT" "$CACHE"
BIN=$CACHE/node_modules/.bin
if [ "$(cat "$CACHE/npm.pins" 2>/dev/null)" != "${NPM_PACKAGES[*]}" ]; then
  npm install --no-audit --no-fund --prefix "$CACHE" "${NPM_PACKAGES[@]}"
  echo "${NPM_PACKAGES[*]}" > "$CACHE/npm.pins"
fi
if [ "$(cat "$CACHE/aider.pin" 2>/dev/null)" != "$AIDER_PACKAGE" ]; then
  PY312=$(bash scripts/find_python.sh)  # aider-chat 0.86 supports Python 3.10-3.12
  for v in python3.12 "$HOME/.pyenv/versions/3.12"*/bin/python3; do
    if command -v "$v" >/dev/null 2>&1; then PY312=$v; break; fi
  done
  [ -x "$CACHE/aider-venv/bin/pip" ] || "$PY312" -m venv "$CACHE/aider-venv"
  "$CACHE/aider-venv/bin/pip" install -q "$AIDER_PACKAGE"
  echo "$AIDER_PACKAGE" > "$CACHE/aider.pin"
fi
version() { node -p "require('$CACHE/node_modules/$1/package.json').version"; }
# claude-code's postinstall only copies the native binary out of its platform package
CLAUDE=$(ls -d "$CACHE"/node_modules/@anthropic-ai/claude-code-linux-*/ 2>/dev/null | head -1)claude
AIDER=$CACHE/aider-venv/bin/aider

WORK=$(mktemp -d)
UP_PID=
SIM_PID=
cleanup() {
  [ -n "$UP_PID" ] && kill "$UP_PID" 2>/dev/null || true
  [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null || true
  rm -rf "$WORK"  # the agents' working directories and HOMEs
}
trap cleanup EXIT

start_upstream() {  # $1: the dump file of this agent's requests
  rm -f "$WORK/up.url" "$1"
  "$PY" scripts/agents/scripted_upstream.py --port-file "$WORK/up.url" --dump "$1" \
    2>> "$OUT/upstream.log" > /dev/null &
  UP_PID=$!
  for _ in $(seq 100); do [ -s "$WORK/up.url" ] && break; sleep 0.1; done
  UP=$(cat "$WORK/up.url")
}
stop_upstream() { kill "$UP_PID" 2>/dev/null || true; wait "$UP_PID" 2>/dev/null || true; UP_PID=; }

# run NAME VERSION FUNCTION: capture one agent (FUNCTION runs it, with $UP set) in its own
# directory and HOME; then show the trace, check its replay, and make its fixture
run() {
  local name=$1 ver=$2 fn=$3
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi
  echo
  echo "== $name $ver"
  mkdir -p "$WORK/$name" "$WORK/home-$name"
  start_upstream "$OUT/$name.dump.jsonl"
  (cd "$WORK/$name" && export HOME=$WORK/home-$name && "$fn" "$OUT/$name.parquet") \
    || echo "!! $name exited with $?"
  stop_upstream
  "$PY" scripts/agents/show_trace.py "$OUT/$name.parquet" || true
  rm -rf "$OUT/check-$name"
  "$PY" scripts/agents/replay_check.py "$OUT/$name.parquet" --endpoint "$SIM" \
    --out "$OUT/check-$name" --version "$ver" || echo "!! $name: replay check failed"
  if [ "$FIXTURES" = 1 ]; then
    "$PY" scripts/agents/make_fixtures.py --dump "$OUT/$name.dump.jsonl" \
      --trace "$OUT/$name.parquet" --agent "$name" --version "$ver" \
      --command "$(declare -f "$fn" | sed -n '3,$p' | sed '$d' | sed 's/^ *//')" \
      -o "tests/capture/fixtures/agents/$name.json" || echo "!! $name: no fixture"
  fi
}

# Each function is the recipe of docs/agents.md with the dummy key and $UP (the upstream).
claude_code() {
  ANTHROPIC_API_KEY=sk-ant-api03-DUMMYkeyDUMMYkey \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    "$CLAUDE" -p "Create notes.txt and show it" --allowedTools Bash
}
codex() {  # a custom provider: Codex ignores OPENAI_BASE_URL for its built-in one
  OPENAI_API_KEY=sk-proj-DUMMYkeyDUMMYkey CODEX_HOME=$HOME/.codex \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    sh -c 'mkdir -p "$CODEX_HOME" && exec "$0" exec --skip-git-repo-check \
      --dangerously-bypass-approvals-and-sandbox -c model_provider=agentx \
      -c model_providers.agentx.name=agentx -c model_providers.agentx.base_url="$OPENAI_BASE_URL" \
      -c model_providers.agentx.env_key=OPENAI_API_KEY -c model_providers.agentx.wire_api=responses \
      "Create notes.txt and show it"' "$BIN/codex"
}
codex_ws() {  # the same over the Responses WebSocket (supports_websockets)
  OPENAI_API_KEY=sk-proj-DUMMYkeyDUMMYkey CODEX_HOME=$HOME/.codex \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    sh -c 'mkdir -p "$CODEX_HOME" && exec "$0" exec --skip-git-repo-check \
      --dangerously-bypass-approvals-and-sandbox -c model_provider=agentx \
      -c model_providers.agentx.name=agentx -c model_providers.agentx.base_url="$OPENAI_BASE_URL" \
      -c model_providers.agentx.env_key=OPENAI_API_KEY -c model_providers.agentx.wire_api=responses \
      -c model_providers.agentx.supports_websockets=true "Create notes.txt and show it"' "$BIN/codex"
}
gemini_cli() {
  GEMINI_API_KEY=AIzaDUMMYkeyDUMMYkeyDUMMYkey GEMINI_CLI_TRUST_WORKSPACE=true \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    "$BIN/gemini" -p "Create notes.txt and show it" --yolo
}
qwen_code() {
  OPENAI_API_KEY=sk-DUMMYkeyDUMMYkey OPENAI_MODEL=scripted-1 \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    "$BIN/qwen" -p "Create notes.txt and show it" --yolo
}
opencode() {  # a custom provider whose baseURL reads the variable agentx sets
  cat > "$HOME/opencode.json" <<'JSON'
{"$schema": "https://opencode.ai/config.json",
 "provider": {"agentx": {"npm": "@ai-sdk/openai-compatible", "name": "agentx",
   "options": {"baseURL": "{env:OPENAI_BASE_URL}", "apiKey": "{env:OPENAI_API_KEY}"},
   "models": {"scripted-1": {"name": "scripted-1"}}}},
 "model": "agentx/scripted-1", "autoupdate": false, "share": "disabled"}
JSON
  OPENCODE_CONFIG=$HOME/opencode.json OPENAI_API_KEY=sk-DUMMYkeyDUMMYkey \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    "$BIN/opencode" run "${PROMPT:-Create notes.txt and show it}"
}
opencode_task() {  # the model delegates to a subagent (opencode's task tool)
  PROMPT="SUBAGENT: count the files here" opencode "$1"
}
kilo() {  # Kilo Code's CLI is opencode's: the same provider, in a file named by KILO_CONFIG
  cat > "$HOME/kilo.json" <<'JSON'
{"provider": {"agentx": {"npm": "@ai-sdk/openai-compatible", "name": "agentx",
   "options": {"baseURL": "{env:OPENAI_BASE_URL}", "apiKey": "{env:OPENAI_API_KEY}"},
   "models": {"scripted-1": {"name": "scripted-1"}}}},
 "model": "agentx/scripted-1", "autoupdate": false, "share": "disabled"}
JSON
  KILO_CONFIG=$HOME/kilo.json OPENAI_API_KEY=sk-DUMMYkeyDUMMYkey \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    "$BIN/kilo" run "${PROMPT:-Create notes.txt and show it}"
}
kilo_task() {  # the model delegates to a subagent (Kilo's task tool)
  PROMPT="SUBAGENT: count the files here" kilo "$1"
}
cline() {  # ignores OPENAI_BASE_URL: a provider set with `cline auth`, on a fixed agentx port;
  # it leaves its hub daemon running: --end-leftovers ends it with the capture
  "$BIN/cline" auth -p openai-compatible -k sk-DUMMYkeyDUMMYkey -m scripted-1 \
    -b http://127.0.0.1:18782/v1 > /dev/null
  "$AGENTX" capture --no-status --upstream "$UP" --port 18782 --end-leftovers -o "$1" -- \
    "$BIN/cline" "${PROMPT:-Create notes.txt and show it}"
}
cline_task() {  # the model delegates to a subagent (cline's spawn_agent)
  PROMPT="SUBAGENT: count the files here" cline "$1"
}
pi() {  # pi's providers ignore base-URL variables: a models.json provider on a fixed port
  mkdir -p "$HOME/.pi/agent"
  cat > "$HOME/.pi/agent/models.json" <<'JSON'
{"providers": {"agentx": {"baseUrl": "http://127.0.0.1:18781/v1", "api": "openai-completions",
  "apiKey": "OPENAI_API_KEY", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "scripted-1"}]}}}
JSON
  OPENAI_API_KEY=sk-DUMMYkeyDUMMYkey PI_SKIP_VERSION_CHECK=1 \
    "$AGENTX" capture --no-status --upstream "$UP" --port 18781 -o "$1" -- \
    "$BIN/pi" --provider agentx --model scripted-1 -p "Create notes.txt and show it"
}
aider() {  # no tool calls: SEARCH/REPLACE edits in the answer; no usage in its stream
  : > notes.txt
  OPENAI_API_KEY=sk-DUMMYkeyDUMMYkey \
    "$AGENTX" capture --no-status --upstream "$UP" -o "$1" -- \
    "$AIDER" --model openai/scripted-1 --edit-format diff --no-git --yes-always \
    --no-check-update --no-show-model-warnings --no-analytics --no-pretty \
    --message "Write agentx was here into notes.txt" notes.txt
}

"$AGENTX" serve-sim --port 18990 > "$OUT/serve-sim.log" 2>&1 &
SIM_PID=$!
SIM=http://127.0.0.1:18990
for _ in $(seq 100); do curl -sf "$SIM/health" >/dev/null && break; sleep 0.1; done

run claude-code "$(version @anthropic-ai/claude-code)" claude_code
run codex "$(version @openai/codex)" codex
run codex-ws "$(version @openai/codex)" codex_ws
run gemini-cli "$(version @google/gemini-cli)" gemini_cli
run qwen-code "$(version @qwen-code/qwen-code)" qwen_code
run opencode "$(version opencode-ai)" opencode
run opencode-task "$(version opencode-ai)" opencode_task
run kilo "$(version @kilocode/cli)" kilo
run kilo-task "$(version @kilocode/cli)" kilo_task
run cline "$(version cline)" cline
run cline-task "$(version cline)" cline_task
run pi "$(version @mariozechner/pi-coding-agent)" pi
run aider "$("$AIDER" --version | cut -d' ' -f2)" aider
echo
"$PY" scripts/agents/table.py "$OUT" | tee "$OUT/table.md"
echo
echo "traces and checks: $OUT (upstream log: $OUT/upstream.log; docs/agents.md's table: $OUT/table.md)"
