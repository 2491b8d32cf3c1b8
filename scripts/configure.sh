#!/usr/bin/env bash
# scripts/configure.sh DIR BUILD_TYPE [CMAKE ARGS...]: configures a Ninja
# build of folio in DIR once (an existing DIR/build.ninja is kept), through
# ccache when it is installed. CCACHE_BASEDIR is the checkout, so clones in
# other folders share cached objects.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 type=$2
shift 2
[ -f "$dir/build.ninja" ] && exit 0
launcher=()
if command -v ccache >/dev/null 2>&1; then
  l="env;CCACHE_BASEDIR=$PWD;ccache"
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=$l" "-DCMAKE_C_COMPILER_LAUNCHER=$l")
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "${launcher[@]}" "$@" >/dev/null
