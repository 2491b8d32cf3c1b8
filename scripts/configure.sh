#!/usr/bin/env bash
# scripts/configure.sh DIR BUILD_TYPE [CMAKE ARGS...]: configures a Ninja
# build of folio in DIR once (an existing DIR/build.ninja is kept; CMAKE ARGS
# given again are applied to it), through
# ccache when it is installed. CCACHE_BASEDIR is the checkout and
# CCACHE_NOHASHDIR keeps the build folder out of the key of objects built with
# -g (the sanitizer builds), so clones in other folders (CI's) share cached
# objects; their debug info then names the folder that compiled them first,
# with the right file names and lines.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 type=$2
shift 2
# An existing folder keeps its configuration; options given again are
# applied to it (scripts/test.sh turns the tests on in setup.sh's build/).
if [ -f "$dir/build.ninja" ]; then
  (($#)) && cmake "$dir" "$@" >/dev/null
  exit 0
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then
  l="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache"
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=$l" "-DCMAKE_C_COMPILER_LAUNCHER=$l")
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "${launcher[@]}" "$@" >/dev/null
