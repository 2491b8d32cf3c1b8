#!/usr/bin/env bash
# The 64-bit ARM kernel tiers (neon, neon_dotprod, neon_i8mm), cross-built with
# Debian's aarch64 toolchain and run under qemu-user (scripts/qemu-aarch64.sh
# with the cross toolchain's libraries):
#   1. build-arm/: a Release cross build (cmake/toolchain-aarch64-linux-gnu.cmake)
#      of the core, backend, model and parity test binaries;
#   2. on qemu's "max" CPU (NEON, dotprod, i8mm: every NEON tier): the core
#      tests, the NEON tier tests, the parity harness on the ops with NEON
#      kernels (each case on the reference, scalar, neon, neon_dotprod and
#      neon_i8mm tiers and on two threads), and the tiny models' logits and greedy
#      continuations against llama.cpp's;
#   3. on "cortex-a72" (NEON without dotprod): detection, routing and the
#      neon tier alone (an SDOT or SMMLA there would be an illegal instruction).
# Writes gtest XML files build-arm/junit-*.xml (scripts/test_summary.py reads
# them). scripts/test.sh runs this when the tools are installed.
#
#   scripts/test-arm.sh          the selection above (a few minutes)
#   scripts/test-arm.sh --full   every parity case (about 6 minutes under
#                                emulation) and every model test
set -euo pipefail
cd "$(dirname "$0")/.."

full=0
for a in "$@"; do
  case "$a" in
    --full) full=1 ;;
    *) echo "test-arm.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test-arm.sh: $tool missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

scripts/configure.sh build-arm Release -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
cmake --build build-arm -j"$(nproc)" --target folio_core_tests folio_backend_tests \
  folio_model_tests folio_parity_tests
rm -f build-arm/junit-*.xml

run() {  # run CPU NAME BINARY [GTEST ARGS...]
  local cpu=$1 name=$2 bin=$3
  shift 3
  echo "test-arm: $name on qemu -cpu $cpu"
  FOLIO_QEMU_CPU=$cpu scripts/qemu-aarch64.sh "build-arm/tests/$bin" \
    --gtest_output="xml:build-arm/junit-$name.xml" --gtest_brief=1 "$@"
}

# Parity cases of the ops with NEON kernels, without the largest shapes
# (4096-wide batch-invariance rows, 500-1000 token recurrences, 512-token
# paged prefills: minutes each under emulation) and the packed x16 layouts
# (x86 panels only: on ARM they meet the reference alone).
p=Ops/Parity.MatchesReference/
parity_ops="$p*_mul_mat_*:$p*_rope_*:$p*_flash_attn_*:$p*_gated_delta_net_*:$p*_rms_norm_*:$p*_soft_max_*"
parity_ops+=":$p*_add_*:$p*_mul_1*:$p*_mul_3*:$p*_mul_6*:$p*_mul_strided*:$p*_scale_*:$p*_glu_*"
parity_ops+=":$p*_unary_*:$p*_ssm_scan_*:$p*_ssm_conv_*"
parity_big='*x16*:*K_4096*:*K_33100*:*prompt_512*:*after_prefix*:*_t1000_*:*_t500_*:*_t300_*'
parity_big+=':*_t200_*:*_t130_*:*decode_ns8_long*:*long_window_softcap*:*long_split_k*'
# Model tests: the logits / greedy parity with llama.cpp on the tiny models.
model_parity='F32Kv/*Parity.*'

run max core folio_core_tests
run max neon folio_backend_tests --gtest_filter='NeonTiers.*:RopeTables.*'
# The parity harness and the model tests are a minute or more each under
# emulation, one core each: they run side by side, each one's output kept
# whole and printed after it.
if ((full)); then
  parity_filter='Ops/*:ParityHarness.*' model_filter='-*Vulkan*:Vulkan/*'
else
  parity_filter="$parity_ops:ParityHarness.*:-$parity_big" model_filter="$model_parity"
fi
run max parity folio_parity_tests --gtest_filter="$parity_filter" >build-arm/parity.log 2>&1 &
parity_pid=$!
run max model folio_model_tests --gtest_filter="$model_filter" >build-arm/model.log 2>&1 &
model_pid=$!
status=0
wait $parity_pid || status=$?
cat build-arm/parity.log
wait $model_pid || status=$?
cat build-arm/model.log
((status == 0)) || { echo "test-arm: the parity or model tests failed under emulation" >&2; exit 1; }
run cortex-a72 neon-a72 folio_backend_tests --gtest_filter='NeonTiers.*:RopeTables.*'
run cortex-a72 core-a72 folio_core_tests --gtest_filter='CpuFeatures*'
