#!/usr/bin/env bash
# The whole default test suite; CI runs exactly this (.ci/run).
#   1. scripts/setup.sh --no-build --tests: system packages (the tests' too),
#      .venv (the openai and anthropic clients the server tests drive the binary with and
#      the other Python oracles) and the bundled models (the
#      Gemma 3 270M and SmolLM2 135M Instruct parity tests and the chat
#      model's server test run on them).
#   2. Release build of everything in build/, every test through ctest (the
#      Vulkan backend's on Mesa's lavapipe: FOLIO_REQUIRE_VULKAN=1).
#   3. Sanitizers: ASan + UBSan over the unit tests and the Vulkan runtime's
#      tests (build-asan/), TSan over the scheduler and server tests
#      (build-tsan/).
#   4. The 64-bit ARM tiers (scripts/test-arm.sh): a cross build run under
#      qemu-user (build-arm/; setup.sh installs the aarch64 toolchain and qemu).
#   5. A summary: a test may skip only for hardware this CPU lacks (another
#      kernel tier); those tiers are listed. Any other skip fails the run.
#
#   scripts/test.sh                   everything above
#   scripts/test.sh --no-sanitizers   steps 1, 2 and 4 (a quicker local run)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=1
for a in "$@"; do
  case "$a" in
    --no-sanitizers) sanitizers=0 ;;
    *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
jobs=$(nproc)
start=$SECONDS
# Wall time of each step, printed before the summary: what CI's time goes to.
timings=()
lap=$SECONDS
mark() { timings+=("$(printf '%5d s  %s' $((SECONDS - lap)) "$1")"); lap=$SECONDS; }

scripts/setup.sh --no-build --tests
mark "setup"
# setup.sh installs lavapipe, so the Vulkan tests must find a device here:
# a missing one fails them instead of skipping.
export FOLIO_REQUIRE_VULKAN=1
# lavapipe compiles every pipeline with LLVM the first time a machine meets
# it; without LLVM's optimisation passes it compiles in half the time and the
# tests still run every shader (numerics are NIR's, the same either way).
export GALLIVM_PERF=${GALLIVM_PERF:-nopt}

echo "test: release build"
scripts/configure.sh build Release -DFOLIO_BUILD_TESTS=ON
cmake --build build -j"$jobs"
mark "release build"
ctest --test-dir build -j"$jobs" --output-on-failure --timeout 900 --no-tests=error \
  --output-junit junit.xml
mark "release tests"

if ((sanitizers)); then
  # Unit tests: every layer's suite but the compute-heavy model, backend and
  # parity ones (their kernels are the same code the Release run checks
  # against the scalar reference; under ASan they would take most of CI's time).
  asan_suites=(core tensor cache quant gguf tokenizer jinja chat grammar engine server cli)
  echo "test: ASan + UBSan build (${asan_suites[*]})"
  # -O0 -g1: a quarter of -O2 -g's compile time, line numbers in reports.
  scripts/configure.sh build-asan Debug -DFOLIO_SANITIZE=address,undefined \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1"
  asan_targets=()
  for s in "${asan_suites[@]}"; do asan_targets+=("folio_${s}_tests"); done
  asan_targets+=(folio-grammar-walk)  # the grammar label's corpus test runs it
  cmake --build build-asan -j"$jobs" --target "${asan_targets[@]}"
  mark "asan build (unit suites)"
  asan_regex=$(IFS='|'; echo "${asan_suites[*]}")
  # The engine, server and cli suites also run on the Vulkan device (lavapipe):
  # the leaks lavapipe itself keeps are suppressed (tests/lsan.supp).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j"$jobs" --output-on-failure --timeout 900 --no-tests=error \
      -L "^($asan_regex)\$" --output-junit junit.xml
  mark "asan tests (unit suites)"
  # The Vulkan runtime's host code (device memory, transfers, recording,
  # kernel-reported errors, the forward context's transfers) on lavapipe,
  # and the kernels' record functions through the fake Recorder; the leaks
  # lavapipe itself keeps are suppressed (tests/lsan.supp).
  echo "test: ASan + UBSan over the Vulkan runtime"
  cmake --build build-asan -j"$jobs" --target folio_backend_tests
  mark "asan build (backend tests)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 900 --no-tests=error \
      -R '^(VulkanBackend|VulkanRecord)\.' --output-junit junit-vulkan.xml
  mark "asan tests (Vulkan runtime)"

  echo "test: TSan build (scheduler and server)"
  scripts/configure.sh build-tsan Debug -DFOLIO_SANITIZE=thread -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1"
  cmake --build build-tsan -j"$jobs" --target folio_engine_tests folio_server_tests
  mark "tsan build"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp \
    ctest --test-dir build-tsan -j"$jobs" --output-on-failure --timeout 900 --no-tests=error \
      -R '^(Scheduler|Http|Server|ToolCall|ResponsesServer|AnthropicServer)' --output-junit junit.xml
  mark "tsan tests"
fi

junits=(build/junit.xml)
((sanitizers)) && junits+=(build-asan/junit.xml build-asan/junit-vulkan.xml build-tsan/junit.xml)
echo "test: the ARM tiers (cross build, qemu-user)"
scripts/test-arm.sh
mark "arm build and tests"
junits+=(build-arm/junit-*.xml)
echo "test: time per step"
printf '  %s\n' "${timings[@]}"
python3 scripts/test_summary.py --folio build/folio --seconds $((SECONDS - start)) "${junits[@]}"
