#!/usr/bin/env bash
# The sanitizer lanes of scripts/test.sh (which sets FOLIO_REQUIRE_VULKAN and
# GALLIVM_PERF for them):
#   scripts/test-sanitizers.sh asan   ASan + UBSan (build-asan/): every layer's
#       unit suite but the compute-heavy model, backend and parity ones (their
#       kernels are the same code the Release run checks against the scalar
#       reference; under ASan they would take most of CI's time), then the
#       Vulkan runtime's host code from the backend suite;
#   scripts/test-sanitizers.sh tsan   TSan (build-tsan/): the scheduler and
#       server tests.
# Each writes ctest's JUnit files into its build folder (junit*.xml), which
# scripts/test_summary.py reads.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

case "${1:-}" in
  asan)
    asan_suites=(core tensor cache quant gguf tokenizer jinja chat grammar engine server cli)
    echo "test: ASan + UBSan build (${asan_suites[*]})"
    # -O0 -g1: a quarter of -O2 -g's compile time, line numbers in reports.
    scripts/configure.sh build-asan Debug -DFOLIO_SANITIZE=address,undefined \
      -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1"
    asan_targets=(folio_backend_tests)  # the Vulkan runtime's tests below
    for s in "${asan_suites[@]}"; do asan_targets+=("folio_${s}_tests"); done
    asan_targets+=(folio-grammar-walk)  # the grammar label's corpus test runs it
    cmake --build build-asan -j"$jobs" --target "${asan_targets[@]}"
    rm -f build-asan/junit*.xml
    asan_regex=$(IFS='|'; echo "${asan_suites[*]}")
    # The engine, server and cli suites also run on the Vulkan device
    # (lavapipe): the leaks lavapipe itself keeps are suppressed
    # (tests/lsan.supp).
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ctest --test-dir build-asan -j"$jobs" --output-on-failure --timeout 900 --no-tests=error \
      -L "^($asan_regex)\$" --output-junit junit.xml
    # The Vulkan runtime's host code (device memory, transfers, recording,
    # kernel-reported errors, the forward context's transfers) on lavapipe,
    # and the kernels' record functions through the fake Recorder.
    echo "test: ASan + UBSan over the Vulkan runtime"
    ctest --test-dir build-asan --output-on-failure --timeout 900 --no-tests=error \
      -R '^(VulkanBackend|VulkanDevice|VulkanRecord)\.' --output-junit junit-vulkan.xml
    ;;
  tsan)
    echo "test: TSan build (scheduler and server)"
    scripts/configure.sh build-tsan Debug -DFOLIO_SANITIZE=thread -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1"
    cmake --build build-tsan -j"$jobs" --target folio_engine_tests folio_server_tests
    rm -f build-tsan/junit*.xml
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp \
      ctest --test-dir build-tsan -j"$jobs" --output-on-failure --timeout 900 --no-tests=error \
        -R '^(Scheduler|Http|Server|ToolCall|ResponsesServer|AnthropicServer)' --output-junit junit.xml
    ;;
  *)
    echo "usage: scripts/test-sanitizers.sh asan|tsan" >&2
    exit 2
    ;;
esac
