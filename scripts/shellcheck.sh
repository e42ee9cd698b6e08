#!/usr/bin/env bash
# Runs shellcheck on every shell script of the repository (what make test runs):
# files named *.sh or *.bash, and files whose first line is a sh or bash
# shebang (maintainer scripts, .ci/run). The zsh completion is zsh, which
# the checker does not read; unit-quality.sh checks it with zsh -n.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1

if ! command -v shellcheck >/dev/null; then
  echo "FAIL shellcheck is not installed: apt-get install shellcheck (.ci/run does)" >&2
  exit 1
fi

scripts=()
while IFS= read -r f; do
  [ -f "$f" ] || continue
  case $f in
    */testdata/*) continue ;;
    *.sh | *.bash) scripts+=("$f") ;;
    *) head -n1 "$f" | grep -Eq '^#!.*[/ ](ba)?sh( |$)' && scripts+=("$f") ;;
  esac
done < <(git ls-files --cached --others --exclude-standard)

if [ ${#scripts[@]} -eq 0 ]; then
  echo "FAIL no shell scripts found (not a git checkout?)" >&2
  exit 1
fi
# Each script is read in the dialect its shebang names; files without one
# (the bash completion, which bash sources) are read as bash.
failed=0
for f in "${scripts[@]}"; do
  if head -n1 "$f" | grep -q '^#!'; then
    shellcheck -x "$f" || failed=1
  else
    shellcheck -x -s bash "$f" || failed=1
  fi
done
if [ $failed -ne 0 ]; then
  echo "FAIL shellcheck found problems in the scripts above" >&2
  exit 1
fi
echo "shellcheck: ${#scripts[@]} scripts clean: ${scripts[*]}"
