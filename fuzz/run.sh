#!/usr/bin/env bash
# Runs every libFuzzer target of a `make fuzz` build for a time each, FUZZ_JOBS at once, and
# reports executions and findings per target. Findings (crashes, timeouts, out-of-memory) are
# kept in <build>/fuzz-findings/<target>-*; the grown corpus in <build>/fuzz-corpus/<target>.
#   fuzz/run.sh build-fuzz 3600 2     # an hour each, two at a time
set -uo pipefail
build=${1:?build folder}
seconds=${2:-60}
jobs=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/fuzz-corpus" "$build/fuzz-findings" "$build/fuzz-logs"

run_one() {
  local target=$1 name=${1#fuzz_}
  mkdir -p "$build/fuzz-corpus/$name"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: over 2 GiB is a finding.
  command time -f '%U' -o "$build/fuzz-logs/$name.cpu" "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-findings/$name-" \
    "$build/fuzz-corpus/$name" "$here/corpus/$name" > "$build/fuzz-logs/$name.log" 2>&1
  local rc=$?
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-logs/$name.log" | grep -o '[0-9]*$' | tail -1)
  local found
  found=$(find "$build/fuzz-findings" -name "$name-*" | wc -l)
  local cpu
  cpu=$(tail -1 "$build/fuzz-logs/$name.cpu" 2>/dev/null)
  printf '%-18s %12s executions in %ss (%ss of CPU), %s findings (exit %s)\n' "$name" "${execs:-?}" "$seconds" "${cpu:-?}" "$found" "$rc"
}
export -f run_one
export build seconds here

targets=$(cd "$build/fuzz" && ls fuzz_* 2>/dev/null)
[ -n "$targets" ] || { echo "fuzz/run.sh: no targets in $build/fuzz (run make fuzz)" >&2; exit 1; }
echo "fuzzing $(echo "$targets" | wc -w) targets for ${seconds}s each, $jobs at a time; logs in $build/fuzz-logs"
echo "$targets" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
total=$(find "$build/fuzz-findings" -type f | wc -l)
if [ "$total" -gt 0 ]; then
  echo "findings: $total (reproduce with: $build/fuzz/fuzz_<target> <file>)"
  find "$build/fuzz-findings" -type f | head -20
  exit 1
fi
echo "no findings"
