#!/usr/bin/env bash
# scripts/configure.sh DIR BUILD_TYPE [CMAKE ARGS...]: configures a Ninja
# build of folio in DIR once (an existing DIR/build.ninja is kept), through
# ccache when it is installed. CCACHE_BASEDIR is the checkout and
# CCACHE_NOHASHDIR keeps the build folder out of the key of objects built with
# -g (the sanitizer builds), so clones in other folders (CI's) share cached
# objects; their debug info then names the folder that compiled them first,
# with the right file names and lines.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 type=$2
shift 2
[ -f "$dir/build.ninja" ] && exit 0
launcher=()
if command -v ccache >/dev/null 2>&1; then
  l="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache"
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=$l" "-DCMAKE_C_COMPILER_LAUNCHER=$l")
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "${launcher[@]}" "$@" >/dev/null
