#!/usr/bin/env bash
# A full benchmark across SLURM nodes: one array task per shard, then one merge + report job.
#
#   DATA=~/FIG-Eval OUT=runs/orig-72b CONDITION=orig GENERATOR=qwen-image-edit-2509 \
#       scripts/slurm_eval.sh submit            # sbatch the array, then the merge after it
#
# Modes (first argument):
#   submit   sbatch --array=0-(SHARDS-1) this script, then `merge` with --dependency=afterok
#   shard    (default; what each array task runs) phases $PHASES for shard $SLURM_ARRAY_TASK_ID
#            of $SHARDS into $OUT.shards/shard-<i>; each task writes only its own folder
#   merge    orig merge every shard folder into $OUT, then orig report
#
# Each task serves its own backbone/judge with `orig serve` on its node (a free local port),
# unless BACKBONE_URL / JUDGE_URL name a shared endpoint (e.g. one data-parallel vLLM for all
# tasks: docs/scale.md), or is "none". What a condition needs comes from the package
# (`orig conditions NAME --get FIELD`), never from its name: a condition that uses no backbone
# (direct) serves none for the agent phase, and the retrieval phase runs only for conditions that
# retrieve, so a new entry in orig_local/conditions.py needs no edit here.
# Settings (environment):
#   DATA, OUT                 benchmark data and the final run folder (required)
#   SHARDS=8                  array size = number of shards
#   GPUS_PER_TASK=1           generate: this many processes per task, one GPU each, splitting the
#                             task's shard exactly (sub-shard i+SHARDS*r of SHARDS*GPUS_PER_TASK)
#   BENCHMARK=figeval  CONDITION=orig  GENERATOR=qwen-image-edit-2509
#   BACKBONE_PRESET=qwen2.5-vl-72b  JUDGE_PRESET=qwen2.5-vl-72b
#   BACKBONE_URL / JUDGE_URL  shared endpoints (.../v1), or "none"; default: serve on the node
#   PHASES="agent generate judge retrieval"   (retrieval is skipped for conditions that retrieve
#                             nothing: `orig conditions` lists which do)
#   LABEL=$(basename $OUT)    the run's name in reports
#   ORIG="orig"               the orig command (e.g. "python -m orig_local", or with --offline)
#   EXTRA_ARGS=""             more `orig eval` arguments for every phase (e.g. "-s agent.max_rounds=3")
#   SBATCH_ARGS=""            more sbatch options for `submit` (e.g. "--partition=gpu --gres=gpu:4")
#
#SBATCH --job-name=orig-eval
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time=24:00:00
#SBATCH --output=slurm-%x-%A_%a.out
set -euo pipefail

MODE="${1:-shard}"
SHARDS="${SHARDS:-8}"
GPUS_PER_TASK="${GPUS_PER_TASK:-1}"
BENCHMARK="${BENCHMARK:-figeval}"
CONDITION="${CONDITION:-orig}"
GENERATOR="${GENERATOR:-qwen-image-edit-2509}"
BACKBONE_PRESET="${BACKBONE_PRESET:-qwen2.5-vl-72b}"
JUDGE_PRESET="${JUDGE_PRESET:-qwen2.5-vl-72b}"
PHASES="${PHASES:-agent generate judge retrieval}"
ORIG="${ORIG:-orig}"
read -r -a ORIG_CMD <<< "$ORIG"
read -r -a EXTRA <<< "${EXTRA_ARGS:-}"
: "${DATA:?set DATA to the benchmark data}" "${OUT:?set OUT to the run folder}"
SHARD_ROOT="$OUT.shards"
LABEL="${LABEL:-$(basename "$OUT")}"  # the run's name in reports (not shard-<i>)

log() { echo "[slurm_eval $(date -u +%H:%M:%S)] $*" >&2; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Start `orig serve --preset $1` on a free local port; sets SERVER_PID and SERVER_URL.
serve() {
  local preset="$1" log_file="$2" port
  port="$(free_port)"
  "${ORIG_CMD[@]}" serve --preset "$preset" --port "$port" --log-file "$log_file" >"$log_file.orig" 2>&1 &
  SERVER_PID=$!
  SERVER_URL="http://127.0.0.1:$port/v1"
  log "serving $preset (pid $SERVER_PID), waiting for $SERVER_URL"
  until grep -q '^ready:' "$log_file.orig" 2>/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      log "orig serve $preset failed:"; cat "$log_file.orig" >&2; exit 1
    fi
    sleep 1  # a grep a second is nothing beside a model load, and a quick server is not kept waiting
  done
}

stop_server() {
  if [[ -n "${SERVER_PID:-}" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"  # orig serve takes vLLM down with it
    wait "$SERVER_PID" || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT

# One property of $CONDITION (true/false for booleans). A plain assignment of its output stops the
# script (set -e) on an unknown condition instead of reading it as "false".
condition_get() {
  "${ORIG_CMD[@]}" conditions "$CONDITION" --get "$1"
}

# `orig eval` for one phase; $1 = phase, $2 = shard "i/n", the rest = extra arguments.
eval_shard() {
  local phase="$1" shard="$2"; shift 2
  "${ORIG_CMD[@]}" eval --benchmark "$BENCHMARK" --data "$DATA" --condition "$CONDITION" \
    --generator "$GENERATOR" --out "$RUN" --shard "$shard" --phase "$phase" --label "$LABEL" \
    "$@" ${EXTRA_ARGS:+"${EXTRA[@]}"}
}

eval_phase() {
  local phase="$1"; shift
  eval_shard "$phase" "$SHARD/$SHARDS" "$@"
}

# Generation on GPUS_PER_TASK GPUs: sub-shards i+SHARDS*r of SHARDS*GPUS_PER_TASK cover this
# task's items (i, i+SHARDS, ...) exactly once. Each process works in its own copy of the run
# folder (one writer per folder), merged back afterwards. (`accelerate launch` would not help
# here: with --shard given, orig eval does not shard again by RANK.)
generate() {
  if (( GPUS_PER_TASK <= 1 )); then eval_phase generate; return; fi
  local devices pids=() subs=() r sub status=0
  IFS=',' read -r -a devices <<< "${CUDA_VISIBLE_DEVICES:-}"
  for ((r = 0; r < GPUS_PER_TASK; r++)); do
    sub="$RUN.gpu$r"
    subs+=("$sub")
    "${ORIG_CMD[@]}" merge "$RUN" --out "$sub" >/dev/null  # the agent rows and evidence it needs
    ( RUN="$sub" CUDA_VISIBLE_DEVICES="${devices[r]:-$r}" \
        eval_shard generate "$((SHARD + SHARDS * r))/$((SHARDS * GPUS_PER_TASK))" ) &
    pids+=("$!")
  done
  for r in "${pids[@]}"; do wait "$r" || status=$?; done
  "${ORIG_CMD[@]}" merge "$RUN" "${subs[@]}" --out "$RUN" >/dev/null && rm -rf "${subs[@]}"
  return "$status"
}

# Run one chat phase against an endpoint: a shared URL, none, or a server started here.
with_server() {
  local phase="$1" role="$2" preset="$3" url="$4"
  if [[ "$url" == "none" ]]; then
    eval_phase "$phase"
  elif [[ -n "$url" ]]; then
    eval_phase "$phase" -s "$role.base_url=$url" -s "$role.preset=$preset"
  else
    serve "$preset" "$SHARD_ROOT/logs/$phase-$SHARD.vllm.log"
    eval_phase "$phase" -s "$role.base_url=$SERVER_URL" -s "$role.preset=$preset"
    stop_server
  fi
}

case "$MODE" in
  submit)
    condition_get uses_backbone >/dev/null  # an unknown condition fails here, not in every task
    mkdir -p "$SHARD_ROOT/logs"
    read -r -a SB <<< "${SBATCH_ARGS:-}"
    jid="$(sbatch --parsable ${SBATCH_ARGS:+"${SB[@]}"} --array="0-$((SHARDS - 1))" \
           --output="$SHARD_ROOT/logs/slurm-%A_%a.out" "$0" shard)"
    log "array job $jid ($SHARDS shards)"
    mid="$(sbatch --parsable ${SBATCH_ARGS:+"${SB[@]}"} --dependency="afterok:$jid" --ntasks=1 \
           --output="$SHARD_ROOT/logs/slurm-%j-merge.out" "$0" merge)"
    log "merge job $mid runs after $jid: $OUT"
    ;;
  shard)
    SHARD="${SLURM_ARRAY_TASK_ID:?not an array task: use the submit mode, or set SLURM_ARRAY_TASK_ID}"
    RUN="$SHARD_ROOT/shard-$SHARD"
    mkdir -p "$RUN" "$SHARD_ROOT/logs"
    USES_BACKBONE="$(condition_get uses_backbone)"
    RETRIEVES="$(condition_get retrieves)"
    log "shard $SHARD/$SHARDS -> $RUN (phases: $PHASES; $CONDITION: backbone $USES_BACKBONE, retrieves $RETRIEVES)"
    for phase in $PHASES; do
      case "$phase" in
        agent)
          if [[ "$USES_BACKBONE" == "false" ]]; then eval_phase agent  # e.g. direct: the raw prompt
          else with_server agent backbone "$BACKBONE_PRESET" "${BACKBONE_URL:-}"; fi ;;
        generate)
          generate ;;  # in-process, one GPU per process
        judge|retrieval)
          # orig eval refuses --phase retrieval for a condition without evidence of its own
          if [[ "$phase" == "retrieval" && "$RETRIEVES" == "false" ]]; then
            log "skipping phase retrieval: $CONDITION retrieves nothing"; continue
          fi
          with_server "$phase" judge "$JUDGE_PRESET" "${JUDGE_URL:-}" ;;
        *) log "unknown phase $phase"; exit 2 ;;
      esac
    done
    ;;
  merge)
    shopt -s nullglob
    shards=("$SHARD_ROOT"/shard-*)
    if (( ${#shards[@]} == 0 )); then log "no shard folders in $SHARD_ROOT"; exit 1; fi
    if (( ${#shards[@]} != SHARDS )); then log "expected $SHARDS shard folders, found ${#shards[@]}"; exit 1; fi
    "${ORIG_CMD[@]}" merge "${shards[@]}" --out "$OUT"
    report_args=()  # without a judge phase the report covers the earlier phases (no accuracy)
    [[ " $PHASES " == *" judge "* ]] || report_args+=(--allow-unjudged)
    "${ORIG_CMD[@]}" report "$OUT" --out "$OUT/report" ${report_args[@]+"${report_args[@]}"}
    ;;
  *)
    echo "usage: $0 [submit|shard|merge]  (settings in the environment; see the header)" >&2
    exit 2 ;;
esac
