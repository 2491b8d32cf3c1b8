#!/usr/bin/env bash
# Fuzzes folio's GGUF reader with libFuzzer (ASan + UBSan) for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]        # default 120
#
# Builds the `fuzz` CMake preset (clang; build dir $FOLIO_FUZZ_BUILD_DIR,
# default build-fuzz), then runs tests/fuzz/gguf_reader_fuzz over a temporary
# corpus: the committed seeds (tests/fuzz/corpus/gguf) plus every *.gguf in
# tests/data (copied: refdata is read-only). Crash / leak / timeout /
# out-of-memory inputs are written to fuzz-out/ (or $FOLIO_FUZZ_ARTIFACTS) and
# the script exits non-zero. Add each one to tests/gguf/regressions/ (with a
# .expected file) once fixed.
set -euo pipefail

seconds="${1:-120}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FOLIO_FUZZ_BUILD_DIR:-$root/build-fuzz}"
refdata="$root/tests/data"
artifacts="${FOLIO_FUZZ_ARTIFACTS:-$root/fuzz-out}"
jobs="${FOLIO_FUZZ_BUILD_JOBS:-2}"

cmake --preset fuzz -S "$root" -B "$build" >/dev/null
cmake --build "$build" --target gguf_reader_fuzz -j "$jobs"

corpus="$(mktemp -d "${TMPDIR:-/tmp}/folio-gguf-corpus.XXXXXX")"
trap 'rm -rf "$corpus"' EXIT
cp "$root"/tests/fuzz/corpus/gguf/*.gguf "$corpus"/
if [[ -d "$refdata" ]]; then
  find "$refdata" -name '*.gguf' -type f -exec cp {} "$corpus"/ \;
fi
chmod u+w "$corpus"/*
# Inputs longer than -max_len are truncated by libFuzzer: allow the largest seed.
max_len="$(find "$corpus" -type f -printf '%s\n' | sort -n | tail -1)"
max_len=$(( max_len > 65536 ? max_len : 65536 ))
mkdir -p "$artifacts"

echo "fuzzing the GGUF reader for ${seconds}s over $(ls "$corpus" | wc -l) seeds (max_len $max_len)"
"$build/tests/fuzz/gguf_reader_fuzz" "$corpus" \
  -max_total_time="$seconds" \
  -max_len="$max_len" \
  -rss_limit_mb=2048 \
  -timeout=30 \
  -print_final_stats=1 \
  -artifact_prefix="$artifacts/"
