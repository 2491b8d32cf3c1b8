#!/usr/bin/env bash
# Every GPU check of the Vulkan backend in one run, for a machine lent for
# minutes (BENCHMARKS.md "Vulkan on ..." sections): what the device is, the
# op-parity harness and the model tests on it, then folio against llama.cpp's
# Vulkan build on the same synthetic files, the device time per kernel
# (FOLIO_VULKAN_TIMESTAMPS=1), and serving against llama-server.
# Each step has its own time limit, so one slow step cannot eat the others;
# everything lands in --out (a log per step and summary.md).
#
#   bench/gpu_check.sh [--build DIR] [--llama-bin DIR] [--out DIR]
#                      [--types q4_0,q8_0,q4_K] [--shape ARGS] [--no-serve] [--no-tests]
#                      [--model-filter GTEST_FILTER] [--ops-filter OP] [--no-bench]
#
#   --build      a folio build (default build/): folio, folio-test-ops and,
#                when present, tests/folio_{model,backend,parity}_tests
#   --llama-bin  llama.cpp's bin/ from a -DGGML_VULKAN=ON build (built outside
#                this repository; optional: without it folio runs alone)
#   --out        where the logs go (default $OUT when set, else
#                bench/results/gpu-check)
#   --types      weight types of the synthetic files (TinyLlama 1.1B's shape,
#                written by bench/make_synthetic_gguf.py: no download)
#   --shape ARGS other make_synthetic_gguf.py shape flags (e.g. a tiny
#                "--embd 256 --layers 2 --ff 512 --vocab 1000" to try the
#                script on lavapipe)
#   --model-filter  which device model tests run (default '*Vulkan*:*vulkan*':
#                all of them; narrower where only some of their data files
#                travel)
#   --ops-filter    only the op-parity cases whose op kind contains OP
#                (folio-test-ops -o; default: every case)
#   --no-bench   the device tests only (no files, benchmarks or serving)
#
# Prerequisites on the lent machine: a Vulkan loader and driver (vulkaninfo
# lists the GPU) and the shared libraries folio links (ldd build/folio):
# bench/gpu_pack.sh packs them and bench/gpu_lease.sh runs this script there.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

build=build
llama_bin=
out=${OUT:-bench/results/gpu-check}
types=q4_0,q8_0,q4_K
shape=
serve=1
tests=1
bench=1
model_filter='*Vulkan*:*vulkan*'
ops_filter=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --llama-bin) llama_bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --no-serve) serve=0; shift ;;
    --no-tests) tests=0; shift ;;
    --no-bench) bench=0; shift ;;
    --model-filter) model_filter=$2; shift 2 ;;
    --ops-filter) ops_filter=(-o "$2"); shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
folio=$build/folio
[[ -x $folio ]] || { echo "gpu_check.sh: no folio binary at $folio" >&2; exit 2; }
mkdir -p "$out"
summary=$out/summary.md
files_dir=$(mktemp -d)
trap 'rm -rf "$files_dir"' EXIT
: >"$summary"
failed=0

# step NAME LIMIT_S CMD...: runs CMD with a time limit, its output in
# $out/NAME.log, and a line in the summary with the exit status and time.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc
  echo "== $name: $*" | tee -a "$out/steps.log"
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf -- '- %s: exit %d in %d s (`%s`)\n' "$name" "$rc" $((SECONDS - t0)) "$*" >>"$summary"
  ((rc == 0)) || failed=1
  tail -n 3 "$out/$name.log"
  return $rc
}

{
  echo "# gpu_check $(date -u +%FT%TZ)"
  echo
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  command -v nvidia-smi >/dev/null && echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
  echo
} >>"$summary"

command -v vulkaninfo >/dev/null && step vulkaninfo 60 vulkaninfo --summary
step folio_info 60 "$folio" info

if ((tests)); then
  export FOLIO_REQUIRE_VULKAN=1
  [[ -x $build/folio-test-ops ]] && step parity_ops 300 "$build/folio-test-ops" test --backend vulkan "${ops_filter[@]}"
  # The model tests that run on the device: llama.cpp logits, paged ==
  # contiguous, the fusions and the stream counters' ceilings.
  [[ -x $build/tests/folio_model_tests ]] &&
    step model_tests 240 "$build/tests/folio_model_tests" --gtest_filter="$model_filter"
  [[ -x $build/tests/folio_backend_tests ]] &&
    step backend_tests 120 "$build/tests/folio_backend_tests" --gtest_filter='Vulkan*'
  unset FOLIO_REQUIRE_VULKAN
fi

if ((bench)); then
  IFS=, read -r -a type_list <<<"$types"
  models=()
  for t in "${type_list[@]}"; do
    f=$files_dir/syn-$t.gguf
    # shellcheck disable=SC2086  # $shape is a list of flags
    python3 bench/make_synthetic_gguf.py "$f" --type "$t" $shape >"$out/make-$t.log" 2>&1 &&
      models+=("$f")
  done
  model_list=$(IFS=,; echo "${models[*]}")
  echo "files: ${models[*]}" >>"$summary"

  # folio: prefill, one-sequence and 8-sequence decode, and the stream counters
  # (dispatches, barriers, submits per token) in the JSON lines.
  step folio_bench 300 "$folio" bench -m "$model_list" --device vulkan -p 512 -n 128 --seqs 1,8 \
    -r 3 --json
  # The same on the portable paths (first file), to weigh what each device
  # path gives on this GPU: fp32 tiles and matvecs instead of int8 products,
  # and every decode step recorded live instead of replayed.
  FOLIO_VULKAN_INT8=0 step folio_bench_no_int8 240 "$folio" bench -m "${models[0]}" --device vulkan \
    -p 512 -n 128 --seqs 1,8 -r 3 --json
  # The int8 decode matvec at other lanes a row than the GPU's default 32
  # (DeviceCaps::q8_matvec_lanes): fewer make each row's reduction cheaper,
  # more spread a row's loads; the same sums.
  for lanes in 8 64; do
    FOLIO_VULKAN_Q8_LANES=$lanes step "folio_bench_q8_lanes$lanes" 120 "$folio" bench \
      -m "${models[0]}" --device vulkan -p 0 -n 128 --seqs 1,8 -r 2 --json
  done
  # Prefill's flash attention at one query head a workgroup (each head
  # loading its K/V tiles itself) against the default (up to 8 heads of a
  # KV head sharing them); the same sums.
  FOLIO_VULKAN_FA_HEADS=1 step folio_bench_fa_heads1 120 "$folio" bench -m "${models[0]}" \
    --device vulkan -p 512 -n 0 -r 3 --json
  # The prefill tiles at 8 rows a thread (64 threads: lavapipe's form)
  # against the GPU's default 4 (256 threads); the same sums.
  FOLIO_VULKAN_TILE_ROWS=8 step folio_bench_tile_rows8 120 "$folio" bench \
    -m "${models[0]}" --device vulkan -p 512 -n 0 -r 3 --json
  # Decode with the int8 products' inputs quantized by quant_act_q8
  # dispatches instead of the writers' tails (four more dispatches and
  # barriers a layer); the same sums.
  FOLIO_VULKAN_TAILS=0 step folio_bench_no_tails 120 "$folio" bench -m "${models[0]}" \
    --device vulkan -p 0 -n 128 --seqs 1,8 -r 3 --json
  FOLIO_VULKAN_REPLAY=0 step folio_bench_no_replay 180 "$folio" bench -m "${models[0]}" \
    --device vulkan -p 0 -n 128 --seqs 1,8 -r 3 --json
  # Where the device's time goes, per kernel (vk_timestamps.h): one prefill
  # chunk, then live decode steps of one and of 8 sequences (first file).
  FOLIO_VULKAN_TIMESTAMPS=1 step folio_device_times 120 "$folio" bench -m "${models[0]}" \
    --device vulkan -p 512 -n 0 -r 1
  FOLIO_VULKAN_TIMESTAMPS=1 step folio_device_times_tg 120 "$folio" bench -m "${models[0]}" \
    --device vulkan -p 0 -n 32 --seqs 1 -r 1
  FOLIO_VULKAN_TIMESTAMPS=1 step folio_device_times_tg8 120 "$folio" bench -m "${models[0]}" \
    --device vulkan -p 0 -n 32 --seqs 8 -r 1
  if [[ -n $llama_bin ]]; then
    lb_args=()
    for m in "${models[@]}"; do lb_args+=(-m "$m"); done
    step llama_bench 300 "$llama_bin/llama-bench" "${lb_args[@]}" -ngl 99 -p 512 -n 128 -r 3 -o json
    step llama_batched 240 "$llama_bin/llama-batched-bench" -m "${models[0]}" -ngl 99 -c 4096 \
      -npp 128 -ntg 32 -npl 1,8
  fi

  if ((serve)); then
    serve_args=(--model-file "${models[0]}" --folio "$folio" --folio-args="--device vulkan"
                --clients 8 --requests 32 --max-tokens 64 --json)
    [[ -n $llama_bin ]] && serve_args+=(--llama-server "$llama_bin/llama-server"
                                        --llama-server-args="-ngl 99")
    step serve_bench 300 python3 bench/serve_bench.py "${serve_args[@]}"
  fi
fi

echo >>"$summary"
if ((failed)); then echo "result: a step failed (see its log)" >>"$summary"; else
  echo "result: every step exited 0" >>"$summary"; fi
cat "$summary"
exit $failed
