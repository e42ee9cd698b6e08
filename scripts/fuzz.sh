#!/usr/bin/env bash
# Short run of every fuzz target in the module (what `make test-fuzz` does).
#
# Usage: scripts/fuzz.sh [FUZZTIME] [LANES]   (default 2s, 2 lanes)
#
# The packages are dealt round-robin to LANES lanes that run side by side,
# each target with one fuzzing worker (-parallel 1): much of a short
# target's time is replaying the corpus, which one core does as well as
# two, so two lanes of one worker finish the ~50 targets in half the time
# of one lane of two. Each package's instrumented test binary is built once
# (go test -c -fuzz) and run for each of its targets.
#
# Go's fuzzing engine can fail a target without any finding: at the
# -fuzztime boundary a starved worker reports "context deadline exceeded"
# (golang/go#51484), and a worker that misses its internal 10 s ack on a busy
# 2-core machine reports "fuzzing process hung or terminated unexpectedly"
# (golang/go#56238) and may even write the input it was running. A real bug
# is an input that fails when run on its own, so that is what decides:
#   - a reproducer written under testdata/fuzz/<target>/ that fails when
#     re-run alone -> failure, with the input left in place to commit;
#   - a reproducer that passes alone, or no reproducer at all -> an engine
#     hiccup: the spurious file is removed and the target is run once more;
#     a second hiccup in a row is reported and tolerated, because every
#     kept corpus entry has already been replayed deterministically by
#     `go test` in test-go.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

fuzztime=${1:-2s}
lanes=${2:-2}
go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
fuzzcache="$("$go" env GOCACHE)/fuzz"

# corpus_files DIR TARGET: the names of TARGET's corpus files, one a line
# (the fuzzing engine names them by hash: no white space).
corpus_files() {
  find "$1/testdata/fuzz/$2" -maxdepth 1 -type f -printf '%f\n' 2>/dev/null | sort
}

# new_inputs DIR TARGET BEFORE: corpus files of TARGET not listed in BEFORE.
new_inputs() {
  local dir=$1 target=$2 before=$3
  comm -13 <(printf '%s\n' "$before" | sort) <(corpus_files "$dir" "$target") | grep -v '^$' || true
}

# fuzz_once PKG DIR TARGET LOG: 0 passed, 1 real failure, 2 engine hiccup.
fuzz_once() {
  local pkg=$1 dir=$2 target=$3 log=$4 before added f real=0 had_dir=0
  [ -d "$dir/testdata/fuzz/$target" ] && had_dir=1
  before=$(corpus_files "$dir" "$target")
  # The package's fuzzing binary, built once for all its targets: go test
  # -fuzz would link it again for every target, which on a loaded 2-core
  # machine cost more than the fuzzing. Run from the package's directory
  # (its testdata/fuzz corpus) with go test's own flags and cache.
  local bin="$work/bin/${pkg//\//_}.test"
  if [ ! -x "$bin" ] && ! "$go" test -c -fuzz "^${target}\$" -o "$bin" "$pkg" >"$log" 2>&1; then
    return 1
  fi
  if (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.parallel 1 -test.fuzztime "$fuzztime" \
    -test.fuzzcachedir "$fuzzcache/$pkg" -test.timeout 10m -test.paniconexit0) >"$log" 2>&1; then
    return 0
  fi
  added=$(new_inputs "$dir" "$target" "$before")
  for f in $added; do
    if "$go" test -count=1 -run "^${target}\$/^${f}\$" "$pkg" >>"$log" 2>&1; then
      echo "  $target: input $f passes when run alone; removing it (engine hiccup)"
      rm -f "$dir/testdata/fuzz/$target/$f"
    else
      real=1
      echo "  $target: input $f fails when run alone: testdata/fuzz/$target/$f"
    fi
  done
  if [ $had_dir -eq 0 ] && [ -d "$dir/testdata/fuzz/$target" ]; then
    rmdir "$dir/testdata/fuzz/$target" 2>/dev/null || true
  fi
  return $((real ? 1 : 2))
}

# fuzz_target PKG DIR TARGET LOG: one target, retried once after an engine
# hiccup. Prints what happened; returns 1 on a real failure, 3 when the
# hiccup repeated (tolerated), else 0.
fuzz_target() {
  local pkg=$1 dir=$2 target=$3 log=$4 attempt rc
  echo "fuzz $pkg $target ($fuzztime)"
  for attempt in 1 2; do
    fuzz_once "$pkg" "$dir" "$target" "$log"
    rc=$?
    [ $rc -eq 0 ] && return 0
    if [ $rc -eq 1 ]; then
      echo "FAIL fuzz $pkg $target"
      cat "$log"
      return 1
    fi
    echo "  $target: the fuzzing engine failed without a finding (attempt $attempt):"
    grep -E 'deadline exceeded|hung or terminated|FAIL|panic' "$log" | head -n 5 | sed 's/^/    /'
  done
  echo "  $target: tolerated; its kept corpus passed in test-go"
  return 3
}

# run_lane N: the targets of lane N, in order; its report goes to
# $work/lane.N.out and its status (failures, tolerated hiccups) to
# $work/lane.N.status.
run_lane() {
  local n=$1 pkg dir target failed=0 tolerated=0
  while read -r pkg dir target; do
    fuzz_target "$pkg" "$dir" "$target" "$work/lane.$n.log"
    case $? in
      1) failed=1 ;;
      3) tolerated=$((tolerated + 1)) ;;
    esac
  done <"$work/lane.$n.targets" >"$work/lane.$n.out" 2>&1
  echo "$failed $tolerated" >"$work/lane.$n.status"
}

i=0
p=0
# One go list for every package (one per package cost about 25 s on a
# loaded 2-core machine, before any fuzzing). A package's targets share a
# lane, so its fuzzing binary is built once, by that lane.
while read -r pkg dir; do
  # Go identifiers hold no white space, so word splitting is exact here.
  # shellcheck disable=SC2013
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //')
  [ -n "$targets" ] || continue
  for target in $targets; do
    echo "$pkg $dir $target" >>"$work/lane.$((p % lanes)).targets"
    i=$((i + 1))
  done
  p=$((p + 1))
done < <("$go" list -f '{{.ImportPath}} {{.Dir}}' ./...)
echo "fuzz: $i targets in $lanes lanes, $fuzztime each"

for ((n = 0; n < lanes; n++)); do
  [ -s "$work/lane.$n.targets" ] && run_lane "$n" &
done
wait

failed=0
hiccups=0
for ((n = 0; n < lanes; n++)); do
  [ -s "$work/lane.$n.targets" ] || continue
  cat "$work/lane.$n.out"
  read -r f t <"$work/lane.$n.status" || { f=1; t=0; echo "fuzz: lane $n ended without a status"; }
  [ "$f" = 1 ] && failed=1
  hiccups=$((hiccups + t))
done
if [ $failed -ne 0 ]; then
  echo "fuzz: FAILED (see FAIL above)"
  exit 1
fi
echo "fuzz: all $i targets done ($hiccups tolerated engine hiccups)"
