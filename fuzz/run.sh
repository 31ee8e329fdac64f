#!/usr/bin/env bash
# Runs every libFuzzer target of a `make fuzz` build for a time each, FUZZ_JOBS at once, and
# reports executions and findings per target. Findings (crashes, timeouts, out-of-memory) are
# kept in <build>/fuzz-findings/<target>-*; the grown corpus in <build>/fuzz-corpus/<target>.
#   fuzz/run.sh build-fuzz 3600 2          # an hour of wall time each, two at a time
#   fuzz/run.sh build-fuzz 3600 2 cpu      # until each has used an hour of CPU (a busy machine)
#   fuzz/run.sh build-fuzz 3600 2 cpu a b  # only targets fuzz_a and fuzz_b
# A wall-clock hour on a loaded machine can be minutes of fuzzing; the cpu mode stops a target
# (SIGINT: libFuzzer prints its final stats) once its own CPU time reaches the budget.
set -uo pipefail
build=${1:?build folder}
seconds=${2:-60}
jobs=${3:-1}
mode=${4:-wall}
shift $(( $# < 4 ? $# : 4 ))
only="$*"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/fuzz-corpus" "$build/fuzz-findings" "$build/fuzz-logs"
[[ "$mode" == wall || "$mode" == cpu ]] || { echo "fuzz/run.sh: mode '$mode': expected wall or cpu" >&2; exit 1; }

# CPU seconds (user + system) a process has used, from /proc/<pid>/stat.
cpu_of() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # past the command name
  # shellcheck disable=SC2086
  set -- $stat
  echo $(( (${12} + ${13}) / $(getconf CLK_TCK) ))
}

run_one() {
  local target=$1 name=${1#fuzz_}
  mkdir -p "$build/fuzz-corpus/$name"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: over 2 GiB is a finding.
  local since="$build/fuzz-logs/$name.start"
  touch "$since"  # findings of this run: the artifacts newer than this
  local args=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/fuzz-findings/$name-"
              "$build/fuzz-corpus/$name" "$here/corpus/$name")
  local rc
  if [[ "$mode" == wall ]]; then
    command time -f '%U' -o "$build/fuzz-logs/$name.cpu" "$build/fuzz/$target" -max_total_time="$seconds" "${args[@]}" \
      > "$build/fuzz-logs/$name.log" 2>&1
    rc=$?
  else
    # At most a day of wall time; stopped once its CPU time reaches the budget.
    "$build/fuzz/$target" -max_total_time=86400 "${args[@]}" > "$build/fuzz-logs/$name.log" 2>&1 &
    local pid=$! used=0
    while kill -0 "$pid" 2>/dev/null; do
      used=$(cpu_of "$pid") || break
      if (( used >= seconds )); then
        kill -INT "$pid"
        break
      fi
      echo "$used" > "$build/fuzz-logs/$name.cpu"
      sleep 5
    done
    wait "$pid"
    rc=$?
    (( rc == 72 )) && rc=0  # libFuzzer's exit code when interrupted
    echo "$used" > "$build/fuzz-logs/$name.cpu"
  fi
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-logs/$name.log" | grep -o '[0-9]*$' | tail -1)
  local found
  found=$(find "$build/fuzz-findings" -name "$name-*" -newer "$since" | wc -l)
  local cpu
  cpu=$(tail -1 "$build/fuzz-logs/$name.cpu" 2>/dev/null)
  printf '%-18s %12s executions, %ss of CPU (%s budget %ss), %s findings (exit %s)\n' "$name" "${execs:-?}" "${cpu:-?}" "$mode" "$seconds" "$found" "$rc"
  # Every run of every target, for the campaign's totals across runs (the corpus carries over).
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "${cpu:-0}" "${execs:-0}" "$found" "$rc" >> "$build/fuzz-logs/history.tsv"
}
export -f run_one
export -f cpu_of
export build seconds here mode

touch "$build/fuzz-logs/run.start"
targets=$(cd "$build/fuzz" && ls fuzz_* 2>/dev/null)
if [[ -n "$only" ]]; then
  targets=$(for t in $only; do echo "fuzz_$t"; done)
fi
[ -n "$targets" ] || { echo "fuzz/run.sh: no targets in $build/fuzz (run make fuzz)" >&2; exit 1; }
echo "fuzzing $(echo "$targets" | wc -w) targets for ${seconds}s ($mode) each, $jobs at a time; logs in $build/fuzz-logs"
echo "$targets" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
start="$build/fuzz-logs/run.start"
total=$(find "$build/fuzz-findings" -type f -newer "$start" | wc -l)
if [ "$total" -gt 0 ]; then
  echo "findings of this run: $total (reproduce with: $build/fuzz/fuzz_<target> <file>)"
  find "$build/fuzz-findings" -type f -newer "$start" | head -20
  exit 1
fi
echo "no findings"
