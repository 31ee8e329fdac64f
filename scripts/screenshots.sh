#!/usr/bin/env bash
# Regenerates docs/img/report-step.png, report-compare.png and report-sweep.png: the `--html` reports
# of three examples, rendered by headless Chromium (scripts/install-deps.sh installs it).
#   scripts/screenshots.sh                 # uses build/bin/orrery
#   scripts/screenshots.sh path/to/orrery
set -euo pipefail
cd "$(dirname "$0")/.."

orrery=${1:-build/bin/orrery}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[[ -x "$orrery" ]] || { echo "screenshots: no $orrery; build first (make build)" >&2; exit 1; }
[[ -n "$browser" ]] || { echo "screenshots: no chromium; run scripts/install-deps.sh" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p docs/img

"$orrery" step examples/scenarios/llama3-70b-h100-64.json --html "$work/step.html" >/dev/null
"$orrery" compare examples/scenarios/qwen3-8b-256k-balance.json --steps 20 --html "$work/compare.html" >/dev/null
"$orrery" sweep examples/sweeps/llama3-70b-capacity.json -o "$work/capacity.json" --quiet --html "$work/sweep.html" >/dev/null

shot() {  # page, png, height in px (the page's length at 1200 px wide)
  HOME="$work" timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --user-data-dir="$work/profile" --virtual-time-budget=3000 --window-size="1200,$3" --screenshot="$2" "file://$1" 2>/dev/null >/dev/null
  echo "wrote $2"
}
shot "$work/step.html" docs/img/report-step.png 1240
shot "$work/compare.html" docs/img/report-compare.png 1320
shot "$work/sweep.html" docs/img/report-sweep.png 1640
