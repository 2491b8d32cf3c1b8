#!/usr/bin/env bash
# Vulkan decode or prefill on the machine's own Vulkan device (Mesa's
# lavapipe where there is no GPU): folio's int8 and float paths and
# llama.cpp's Vulkan build side by side on the same synthetic files, one
# table with the ratios. Lavapipe runs the shaders on the CPU, so its figures count
# the kernels' work, not a GPU's speed; they show what a kernel change
# does between two leases of a GPU.
#
#   bench/lavapipe_bench.sh [--build BUILD] [--llama-bin DIR] [--types q4_0,q8_0,q4_K]
#                           [--layers 2] [-n 16 | -p 128] [-r 3] [--folio BIN ...]
#
#   --build      folio's build folder (default build)
#   --llama-bin  llama.cpp's bin/ with its Vulkan build's llama-bench
#                (optional; GGML_VK_VISIBLE_DEVICES=0 lets it take a CPU
#                device)
#   --types      weight types of the files (bench/make_synthetic_gguf.py:
#                TinyLlama 1.1B's shape with --layers layers, 4096 tokens)
#   -n N         decode: tgN (the default, 16)
#   -p N         prefill instead: ppN, an N-token prompt
#   --folio BIN  another folio binary to time beside the build's (e.g. one
#                built from an earlier commit); may be given more than once
set -euo pipefail

build=build
llama_bin=""
types="q4_0,q8_0,q4_K"
layers=2
n_gen=16
n_prompt=0
reps=3
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --llama-bin) llama_bin="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --layers) layers="$2"; shift 2 ;;
    -n) n_gen="$2"; n_prompt=0; shift 2 ;;
    -p) n_prompt="$2"; n_gen=0; shift 2 ;;
    -r) reps="$2"; shift 2 ;;
    --folio) extra+=("$2"); shift 2 ;;
    *) echo "lavapipe_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
files=$(mktemp -d)
trap 'rm -rf "$files"' EXIT
bins=("${extra[@]}" "$build/folio")

# tokens/s of a folio bench line: the column before dispatches.
folio_ts() {
  FOLIO_VULKAN_INT8="$1" "$2" bench -m "$3" --device vulkan -p "$n_prompt" -n "$n_gen" \
    -r "$reps" 2>/dev/null |
    awk -F'|' '/^\| llama/ {split($(NF-4), a, " "); print a[1]}'
}

"$build/folio" info 2>/dev/null | grep '^device' || true
if ((n_prompt > 0)); then
  test_name="prefill pp$n_prompt"
else
  test_name="decode tg$n_gen"
fi
echo "$test_name, $layers-layer files of TinyLlama 1.1B's shape, $reps repetitions"
echo
echo "| type | engine | path | tokens/s | vs llama.cpp |"
echo "|---|---|---|---:|---:|"
IFS=, read -r -a type_list <<<"$types"
for t in "${type_list[@]}"; do
  f="$files/syn-$t.gguf"
  python3 "$here/make_synthetic_gguf.py" "$f" --type "$t" --layers "$layers" --vocab 4096 >/dev/null
  peer=""
  if [[ -n "$llama_bin" ]]; then
    peer=$(GGML_VK_VISIBLE_DEVICES=0 "$llama_bin/llama-bench" -m "$f" -ngl 99 -p "$n_prompt" -n "$n_gen" \
             -r "$reps" -o csv 2>/dev/null | awk -F, 'NR > 1 {gsub(/"/, "", $0); v = $(NF-1)} END {printf "%.2f", v}')
  fi
  for b in "${bins[@]}"; do
    for e in 1 0; do
      ts=$(folio_ts "$e" "$b" "$f")
      path=$([[ $e == 1 ]] && echo int8 || echo float)
      ratio=$([[ -n "$peer" && -n "$ts" ]] && awk -v a="$ts" -v b="$peer" 'BEGIN {printf "%.2fx", a / b}' || echo "")
      echo "| $t | folio ($b) | $path | $ts | $ratio |"
    done
  done
  [[ -n "$peer" ]] && echo "| $t | llama.cpp Vulkan | | $peer | 1.00x |"
done
