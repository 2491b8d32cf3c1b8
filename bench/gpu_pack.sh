#!/usr/bin/env bash
# Packs what a lent GPU machine needs for bench/gpu_lease.sh into one folder
# (default .gpu, which .git/info/exclude should ignore; the device tool
# carries it): a Release build of folio with the shared libraries it links
# that such a machine may lack (and the Vulkan loader, vulkaninfo), the
# data files of the device model tests gpu_lease.sh runs, and optionally
# llama.cpp's Vulkan bin/ (built outside this repository). Everything is
# xz-compressed to fit the 64 MiB the device tool carries beside the tracked
# files (bench/README.md says how to take the test data out of the index).
#
#   bench/gpu_pack.sh [--build DIR] [--llama-bin DIR] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
llama_bin=
out=.gpu
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --llama-bin) llama_bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "gpu_pack.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bins=(folio folio-test-ops tests/folio_model_tests tests/folio_backend_tests)
for b in "${bins[@]}"; do
  [[ -x $build/$b ]] || { echo "gpu_pack.sh: no $build/$b (a Release build with tests)" >&2; exit 2; }
done
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# folio and what it links, beside libc (the lent machine has a newer one).
mkdir -p "$stage/build/tests" "$stage/lib" "$stage/vkbin" "$stage/glvnd"
for b in "${bins[@]}"; do cp "$build/$b" "$stage/build/$b"; strip "$stage/build/$b"; done
libs() { ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libresolv|libdl|librt)\.so' || true; }
vk_loader=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')
[[ -n $vk_loader ]] || { echo "gpu_pack.sh: no libvulkan.so.1 here" >&2; exit 2; }
for l in $(libs "${bins[@]/#/$build/}") "$vk_loader"; do cp -L "$l" "$stage/lib/"; done
if command -v vulkaninfo >/dev/null; then
  cp "$(command -v vulkaninfo)" "$stage/vkbin/"
  for l in $(libs "$(command -v vulkaninfo)"); do cp -L "$l" "$stage/lib/"; done
fi
# GLVND's dispatch libraries, which NVIDIA's Vulkan driver loads; used there
# only where the machine has none.
for l in libGLdispatch.so.0 libGLX.so.0 libEGL.so.1; do
  p=$(ldconfig -p | awk -v n="$l" '$1 == n && /x86-64/ {print $NF; exit}')
  [[ -n $p ]] && cp -L "$p" "$stage/glvnd/"
done
# The device model tests read their files at the source path compiled in.
grep -o -m 1 'FOLIO_SOURCE_DIR=\\"[^\\]*' "$build/build.ninja" | head -n 1 | sed 's/.*\\"//' >"$stage/source_dir"
tar cf - -C "$stage" . | xz -T0 -6 >"$out/folio.tar.xz"

# The device model tests that travel (replay, fusion and int8 MoE tests and
# llama.cpp parity on four tiny models): their gtest filter, which
# gpu_lease.sh reads from the pack, and their data files.
model_filter='VulkanReplay.*:VulkanFusion.*:*VulkanMoeInt8*:Vulkan/RefParity.*tiny_llama_short_f32*:'
model_filter+='Vulkan/RefParity.*tiny_llama_long*:Vulkan/RefParity.*tiny_qwen3moe*:'
model_filter+='Vulkan/RefParity.*tiny_gemma3_short_f32*'
echo "$model_filter" >"$out/model_filter"
data=(tests/data/models/tiny-llama-f32.gguf tests/data/models/tiny-llama.*
      tests/data/models/tiny-qwen35-f32.gguf tests/data/models/tiny-qwen3next-f32.gguf
      tests/model/refdata/tiny-gemma3-f32.gguf tests/model/refdata/tiny-gemma3.short.*
      tests/model/refdata/tiny-gemma4-f32.gguf tests/model/refdata/tiny-gemma4-moe-f32.gguf
      tests/model/refdata/tiny-qwen3moe-f32.gguf tests/model/refdata/tiny-qwen3moe.*
      tests/model/refdata/llama-archs/{qwen3moe-moe,exaone4-dense,glm4moe-moe,llama-moe}.gguf)
tar cf - "${data[@]}" | xz -T0 -6 >"$out/data.tar.xz"

if [[ -n $llama_bin ]]; then
  rm -rf "$stage/llama" && mkdir -p "$stage/llama/bin"
  cp -a "$llama_bin"/. "$stage/llama/bin/"
  for l in $(libs "$llama_bin"/llama-bench | grep -v -E '/lib(ggml|llama|mtmd)' || true); do
    [[ $l == "$vk_loader" ]] || cp -L "$l" "$stage/llama/bin/"
  done
  tar cf - -C "$stage/llama" . | xz -T0 -6 >"$out/llama.tar.xz"
fi
du -ch "$out"/*.tar.xz
