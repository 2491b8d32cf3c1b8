#!/usr/bin/env bash
# The repository stands alone: no tracked file names a path outside it.
#   - no file mentions the sibling folder `..` + `/shared` (reference data
#     is copied into tests/data, never read from beside the checkout);
#   - no build file, script, test, benchmark or CI file names an absolute
#     path under the developers' shared work folder (the pattern below): a clone on
#     another machine has none of it.
# Usage: stands_alone_test.sh SOURCE_DIR. Lists the files that break a rule
# and exits 1, else prints what it checked and exits 0.
set -euo pipefail
src=${1:?usage: stands_alone_test.sh SOURCE_DIR}
cd "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -d '' files < <(git ls-files -z)
else
  mapfile -d '' files < <(find . -type f -not -path './build*' -not -path './.venv/*' \
                            -not -path './models/*' -not -path './.git/*' -print0)
fi
sibling='\.\./shar[e]d'                        # the spelling keeps this file out of its own match
workdir='(^|[^A-Za-z0-9_.~-])/wor[k]/'
code_re='^(\./)?(CMakeLists\.txt|CMakePresets\.json|cmake/|scripts/|tests/|bench/[^/]*$|\.ci/)'
bad=0
while IFS= read -r hit; do
  echo "refers to a folder beside the checkout: $hit"; bad=1
done < <(printf '%s\0' "${files[@]}" | xargs -0 grep -nIE "$sibling" -- 2>/dev/null || true)
code=()
for f in "${files[@]}"; do [[ $f =~ $code_re ]] && code+=("$f"); done
while IFS= read -r hit; do
  echo "names an absolute path outside the repository: $hit"; bad=1
done < <(printf '%s\0' "${code[@]}" | xargs -0 grep -nIE "$workdir" -- 2>/dev/null || true)
if ((bad)); then exit 1; fi
echo "stands alone: ${#files[@]} files, ${#code[@]} of them code, refer to no path outside the repository"
