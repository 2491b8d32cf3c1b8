#!/usr/bin/env bash
# The whole default test suite; CI runs exactly this (.ci/run).
#   1. scripts/setup.sh --no-build --tests: system packages (the tests' too),
#      .venv (the openai and anthropic clients the server tests drive the binary with and
#      the other Python oracles) and the bundled models (the
#      Gemma 3 270M and SmolLM2 135M Instruct parity tests and the chat
#      model's server test run on them).
#   2. Release build of everything in build/, every test through ctest (the
#      Vulkan backend's on Mesa's lavapipe: FOLIO_REQUIRE_VULKAN=1).
#   3. Sanitizers (scripts/test-sanitizers.sh): ASan + UBSan over the unit
#      tests and the Vulkan runtime's tests (build-asan/), TSan over the
#      scheduler and server tests (build-tsan/).
#   4. The 64-bit ARM tiers (scripts/test-arm.sh): a cross build run under
#      qemu-user (build-arm/; setup.sh installs the aarch64 toolchain and qemu).
#      Steps 3 and 4 run while CI's time allows (the budget below): a lane
#      that does not fit is named in the summary as not run.
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
# The later lanes' time budget (below), checked before an hour is spent.
budget=${FOLIO_TEST_BUDGET_S:-5000}
[[ $budget =~ ^[0-9]+$ ]] || {
  echo "test.sh: FOLIO_TEST_BUDGET_S must be a whole number of seconds (0: no budget), not '$budget'" >&2
  exit 2
}
jobs=$(nproc)
start=$SECONDS
# Wall time of each step, printed before the summary: what CI's time goes to.
timings=()
lap=$SECONDS
# Each step's time is also printed when it ends, so a run cut short still
# shows where its time went.
mark() {
  timings+=("$(printf '%5d s  %s' $((SECONDS - lap)) "$1")")
  printf 'test: %s took %d s (%d s so far)\n' "$1" $((SECONDS - lap)) $((SECONDS - start))
  lap=$SECONDS
}

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
release_build_s=$((SECONDS - lap))  # configure and build: the lanes' estimates scale with it
mark "release build"
ctest --test-dir build -j"$jobs" --output-on-failure --timeout 900 --no-tests=error \
  --output-junit junit.xml
mark "release tests"

# The lanes after the Release run, in this order, while CI's time allows:
# CI stops a run at 90 minutes, and a slow machine compiling everything from
# nothing (a 2-vCPU VM, empty ccache, lavapipe compiling every pipeline) can
# need more than that for all of them. Each lane's time is estimated from
# the Release build's (RATIO times it: the lanes took 2.1x, 0.84x and 1.03x
# the Release build on a 2-vCPU Xeon whose ccache was full, ASan + UBSan's
# build 1.4x on a Zen 4 whose was empty); a lane that would end past the
# budget is not started, and one still running at the budget's end is
# stopped. The summary lists both by name: they did not pass, they were
# not run. FOLIO_TEST_BUDGET_S sets the budget (read at the top, default
# 5000: 83 minutes, CI's 90 less a margin); 0 runs every lane to its end.
not_run=()
junits=(build/junit.xml)
lane() {  # lane NAME RATIO JUNIT-GLOB COMMAND...
  local name=$1 ratio=$2 glob=$3
  shift 3
  local used=$((SECONDS - start)) need rc=0
  need=$(awk -v r="$ratio" -v b="$release_build_s" 'BEGIN { printf "%d", r * b }')
  if ((budget > 0 && used + need >= budget)); then
    not_run+=("$name: not started: about $need s here (${ratio}x the Release build's $release_build_s s), $((budget - used)) s of the $budget s budget left")
    echo "test: $name not started: about $need s, $((budget - used)) s of the budget left"
    return 0
  fi
  if ((budget > 0)); then
    timeout -k 30 $((budget - used)) "$@" || rc=$?
  else
    "$@" || rc=$?
  fi
  # timeout's own codes once the budget is spent; a lane killed otherwise
  # (137 from the kernel's OOM killer, say) is a failure.
  if ((budget > 0 && (rc == 124 || rc == 137) && SECONDS - start >= budget)); then
    not_run+=("$name: stopped at the end of the $budget s budget, $((SECONDS - start - used)) s in")
    echo "test: $name stopped at the end of the time budget"
    return 0
  fi
  ((rc == 0)) || { echo "test: $name failed" >&2; exit "$rc"; }
  mark "$name"
  # shellcheck disable=SC2206  # the glob names the lane's JUnit files
  junits+=($glob)
}
if ((sanitizers)); then
  lane "ASan + UBSan (unit suites, Vulkan runtime)" 2.0 "build-asan/junit*.xml" \
    scripts/test-sanitizers.sh asan
  lane "TSan (scheduler, server)" 0.9 "build-tsan/junit*.xml" scripts/test-sanitizers.sh tsan
fi
lane "ARM tiers (cross build, qemu-user)" 1.1 "build-arm/junit-*.xml" scripts/test-arm.sh
echo "test: time per step"
printf '  %s\n' "${timings[@]}"
not_run_args=()
for n in "${not_run[@]}"; do not_run_args+=(--not-run "$n"); done
python3 scripts/test_summary.py --folio build/folio --seconds $((SECONDS - start)) \
  "${not_run_args[@]}" "${junits[@]}"
