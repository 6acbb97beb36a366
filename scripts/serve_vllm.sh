#!/usr/bin/env bash
# Start vLLM for a chat preset, wait for /health, print the base URL (shell twin of `orig serve`).
#
#   scripts/serve_vllm.sh [PRESET] [PORT] [-- VLLM_FLAGS...]
#   e.g. scripts/serve_vllm.sh qwen2.5-vl-72b 8000 -- --data-parallel-size 2
#
# The vLLM flags come from the preset (`orig models`; via `orig serve --dry-run`); flags after
# `--` are appended and win. vLLM lives in its own environment: set ORIG_VLLM_BIN (default:
# `vllm` on PATH); PYTHON picks the interpreter that has orig_local installed (default: the
# repo's .venv, else python3). To require an API key, export VLLM_API_KEY (vLLM reads it; keep
# it off the command line).
set -euo pipefail

PRESET="${1:-qwen2.5-vl-7b}"
PORT="${2:-8000}"
shift $(( $# < 2 ? $# : 2 ))
if [[ "${1:-}" == "--" ]]; then shift; fi
HOST="${HOST:-127.0.0.1}"
TIMEOUT_S="${TIMEOUT_S:-1800}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$([ -x "$REPO/.venv/bin/python" ] && echo "$REPO/.venv/bin/python" || echo python3)}"
VLLM_BIN="${ORIG_VLLM_BIN:-vllm}"

if ! command -v "$VLLM_BIN" >/dev/null 2>&1; then
  cat >&2 <<MSG
vLLM not found ($VLLM_BIN). Install it in its own environment (its wheels pin their own torch):
    python -m venv ~/vllm-env && ~/vllm-env/bin/pip install vllm
then: export ORIG_VLLM_BIN=~/vllm-env/bin/vllm
MSG
  exit 1
fi

CMD="$(cd "$REPO" && "$PYTHON" -m orig_local serve --preset "$PRESET" --host "$HOST" --port "$PORT" \
       --vllm-bin "$VLLM_BIN" --dry-run -- "$@")"
echo "starting: $CMD"
eval "$CMD" &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true' EXIT INT TERM

for ((i = 0; i < TIMEOUT_S; i++)); do
  if ! kill -0 "$PID" 2>/dev/null; then echo "vLLM exited before becoming healthy" >&2; exit 1; fi
  if curl -sf "http://$HOST:$PORT/health" >/dev/null 2>&1; then
    echo "ready: base_url=http://$HOST:$PORT/v1  (Ctrl-C stops the server)"
    wait "$PID"
    exit $?
  fi
  sleep 1
done
echo "vLLM not healthy after ${TIMEOUT_S}s" >&2
exit 1
