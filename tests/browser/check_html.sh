#!/usr/bin/env bash
# Renders the --html reports of `orrery step`, `orrery compare` (step, multimodal, RL and cluster
# scenarios), `orrery sweep` and `orrery cluster` in headless Chromium and checks that every plot was laid out
# with drawn marks, and that a screenshot of each page is not blank.
#   tests/browser/check_html.sh ORRERY_BINARY SOURCE_DIR WORK_DIR
# Exit 77 (CTest's SKIP_RETURN_CODE) when no Chromium is installed (scripts/install-deps.sh adds it).
set -euo pipefail

orrery=$1
src=$2
work=$3

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$(command -v "$b")
    break
  fi
done
if [[ -z "$browser" ]]; then
  echo "SKIPPED: no chromium on PATH (scripts/install-deps.sh installs it); the --html reports were not rendered"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
cd "$work"
export HOME="$work"  # Chromium writes its profile and crash database under HOME

fail=0
problem() {
  echo "FAIL: $*"
  fail=1
}

# The reports: small runs of the examples (a few steps or iterations each).
reports=()
report() {
  local name=$1
  shift
  if ! "$orrery" "$@" --html "$work/$name.html" >"$work/$name.out" 2>&1; then
    problem "orrery $* --html failed: $(tail -3 "$work/$name.out")"
    return
  fi
  reports+=("$name")
}
report step step "$src/examples/scenarios/llama3-70b-h100-64.json"
report compare-step compare "$src/examples/scenarios/qwen3-8b-256k-balance.json" --steps 5
report compare-multimodal compare "$src/examples/multimodal/qwen2-vl-7b-64.json" --steps 3
report compare-rl compare "$src/examples/rl/grpo-7b-128.json" --iterations 2
report sweep sweep "$src/examples/sweeps/llama3-8b-plans.json" -o "$work/sweep-results.json" --quiet
# Cluster scenarios: Arena's example on its first 300 jobs when ../shared/data is there, else a
# small cluster of its own.
arena_jobs="$src/../shared/data/arena/simulate_trace_philly.csv"
if [[ -f "$arena_jobs" && -f "$src/../shared/data/arena/sim_cluster_spec.json" ]]; then
  head -301 "$arena_jobs" >"$work/jobs.csv"
  cluster_args=("$src/examples/clusters/cluster-arena-philly.json" --jobs "$work/jobs.csv")
else
  {
    echo "name,submit,gpus,secs"
    for i in $(seq 0 119); do echo "j$i,$((i * 37)),$((1 << (i % 4))),$((300 + (i * 7919) % 5000))"; done
  } >"$work/jobs.csv"
  cat >"$work/cluster.json" <<'EOF'
{"cluster": {"pools": [{"gpu": "a100", "nodes": 4, "gpus_per_node": 8}]},
 "jobs": {"format": "csv", "path": "jobs.csv", "columns": {"arrival": "submit", "gpus": "gpus", "duration": "secs", "id": "name"}}}
EOF
  cluster_args=("$work/cluster.json")
fi
report compare-cluster compare "${cluster_args[@]}"
report cluster cluster "${cluster_args[@]}" --policy tiresias

chrome() {
  # A profile per run: no lock shared between runs, nothing left in the user's home.
  local profile
  profile=$(mktemp -d "$work/profile.XXXX")
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --virtual-time-budget=3000 "$@" 2>>"$work/chromium.log"
}

for name in "${reports[@]}"; do
  html="$work/$name.html"
  plots=$(grep -o 'class="orrery-plot"' "$html" | wc -l)
  if [[ "$plots" -lt 1 ]]; then
    problem "$name: no plots in the page"
    continue
  fi
  # The page's script marks each plot with its laid-out size and drawn marks, and counts the
  # plots that rendered in the title: "[rendered N/M]".
  if ! chrome --dump-dom "file://$html" >"$work/$name.dom"; then
    problem "$name: chromium --dump-dom failed (see $work/chromium.log)"
    continue
  fi
  title=$(grep -o '<title>[^<]*\[rendered [0-9]*/[0-9]*\]</title>' "$work/$name.dom" || true)
  if [[ "$title" != *"[rendered $plots/$plots]"* ]]; then
    problem "$name: expected [rendered $plots/$plots] in the title, found '${title:-no title: the script did not run}'"
  fi
  rendered=$(grep -o 'data-rendered="[^"]*"' "$work/$name.dom" | wc -l)
  [[ "$rendered" -eq "$plots" ]] || problem "$name: $rendered of $plots plots have data-rendered"
  while read -r line; do
    # data-rendered="725x301 marks=6/6": a size, and every mark with geometry.
    if [[ "$line" =~ \"([0-9]+)x([0-9]+)\ marks=([0-9]+)/([0-9]+)\" ]]; then
      w=${BASH_REMATCH[1]} h=${BASH_REMATCH[2]} drawn=${BASH_REMATCH[3]} total=${BASH_REMATCH[4]}
      if [[ "$w" -eq 0 || "$h" -eq 0 || "$drawn" -eq 0 || "$drawn" -ne "$total" ]]; then problem "$name: a plot rendered as $line"; fi
    else
      problem "$name: unexpected $line"
    fi
  done < <(grep -o 'data-rendered="[^"]*"' "$work/$name.dom")

  png="$work/$name.png"
  chrome --screenshot="$png" --window-size=1200,2400 "file://$html" >/dev/null || true
  if [[ ! -s "$png" ]]; then
    problem "$name: no screenshot"
    continue
  fi
  if command -v python3 >/dev/null 2>&1; then
    # Not blank: the image has many pixels that are neither white nor black (after PNG filtering,
    # a blank page's scanlines are nearly all 0 and 255 bytes).
    if ! verdict=$(python3 - "$png" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
idat, at = b"", 8
while at < len(data):
    n, kind = struct.unpack(">I4s", data[at:at + 8])
    if kind == b"IDAT":
        idat += data[at + 8:at + 8 + n]
    at += 12 + n
raw = zlib.decompress(idat)
colored = len(raw) - raw.count(0) - raw.count(255)
print(f"{w}x{h}, {colored} colored bytes")
sys.exit(0 if w == 1200 and h == 2400 and colored > 20000 else 1)
EOF
    ); then
      problem "$name: the screenshot looks blank ($verdict)"
    else
      echo "$name: $plots plots rendered; screenshot $verdict"
    fi
  else
    size=$(stat -c %s "$png")
    [[ "$size" -gt 30000 ]] || problem "$name: the screenshot is $size bytes: blank?"
    echo "$name: $plots plots rendered; screenshot $size bytes"
  fi
done

if [[ "$fail" -ne 0 ]]; then
  echo "browser test failed; pages, DOM dumps and screenshots in $work"
  exit 1
fi
echo "all ${#reports[@]} reports rendered in $("$browser" --version 2>/dev/null | head -1)"
