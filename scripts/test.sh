#!/usr/bin/env bash
# Runs the whole default test suite: installs missing system packages, builds
# (Release, ./build) and runs every test through ctest on all cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --deps-only
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j"$(nproc)"
ctest --test-dir build -j"$(nproc)" --output-on-failure --timeout 900
