#!/usr/bin/env bash
# Runs on a lent GPU machine, in the repository copy the device tool made:
# unpacks what bench/gpu_pack.sh packed, points the Vulkan loader at the
# NVIDIA driver where the image does not, then runs bench/gpu_check.sh twice:
# the benchmarks first (they are what a lease is for), then the device tests
# (op parity, the device model tests whose data travelled, the backend
# tests). Logs: $OUT/bench.tar.gz after the benchmarks, $OUT/gc.tar.gz and
# $OUT/summary.md at the end; the output ends with both summaries.
#
#   bench/gpu_lease.sh [--pack DIR] [--bench-limit S] [--tests-limit S]
#                      [--ops-filter OP] [gpu_check.sh options for the benchmarks]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

pack=.gpu
bench_limit=300
tests_limit=240
ops=()
pass=()
while (($#)); do
  case "$1" in
    --pack) pack=$2; shift 2 ;;
    --bench-limit) bench_limit=$2; shift 2 ;;
    --tests-limit) tests_limit=$2; shift 2 ;;
    --ops-filter) ops=(--ops-filter "$2"); shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) pass+=("$1"); shift ;;
  esac
done
# The device model tests whose files gpu_pack.sh packed.
model_filter=$(cat "$pack/model_filter" 2>/dev/null) ||
  { echo "gpu_lease.sh: no $pack/model_filter (pack with bench/gpu_pack.sh)" >&2; exit 2; }
out=${OUT:-bench/results/gpu-lease}
work=$(mktemp -d)
mkdir -p "$out" "$work/g"
t0=$SECONDS
if ! tar xJf "$pack/folio.tar.xz" -C "$work/g" || ! tar xJf "$pack/data.tar.xz" -C .; then
  echo "gpu_lease.sh: cannot unpack $pack" >&2
  exit 2
fi
llama=()
if [[ -f $pack/llama.tar.xz ]]; then
  mkdir -p "$work/g/llama" && tar xJf "$pack/llama.tar.xz" -C "$work/g/llama" &&
    llama=(--llama-bin "$work/g/llama/bin")
fi
echo "unpacked in $((SECONDS - t0)) s"

export LD_LIBRARY_PATH=$work/g/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldconfig -p | grep -q libGLdispatch || LD_LIBRARY_PATH+=:$work/g/glvnd
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [[ -d $d ]] && LD_LIBRARY_PATH+=:$d; done
if ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
  j=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [[ -f $j ]] && export VK_DRIVER_FILES=$j VK_ICD_FILENAMES=$j
fi
export PATH=$work/g/vkbin:$PATH
# The model tests open their files under the source path compiled into them.
src=$(cat "$work/g/source_dir" 2>/dev/null)
if [[ -n $src && ! -e $src ]]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi

timeout -k 5 "$bench_limit" bench/gpu_check.sh --build "$work/g/build" "${llama[@]}" \
  --out "$work/gc/bench" --no-tests "${pass[@]}"
echo "benchmarks: exit $? after $((SECONDS - t0)) s"
tar czf "$out/bench.tar.gz" -C "$work" gc
timeout -k 5 "$tests_limit" bench/gpu_check.sh --build "$work/g/build" --out "$work/gc/tests" \
  --no-bench --no-serve --model-filter "$model_filter" "${ops[@]}"
echo "tests: exit $? after $((SECONDS - t0)) s"
tar czf "$out/gc.tar.gz" -C "$work" gc
cat "$work"/gc/bench/summary.md "$work"/gc/tests/summary.md >"$out/summary.md" 2>/dev/null
cat "$out/summary.md"
rm -rf "$work"
