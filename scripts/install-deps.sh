#!/usr/bin/env bash
# Installs Orrery's build dependencies from Debian packages, only those missing.
# Works as root or through sudo; does nothing (and needs neither) when all are present.
#   scripts/install-deps.sh            # install what is missing
#   scripts/install-deps.sh --check    # list what is missing, exit 1 if anything is
#   scripts/install-deps.sh --bench    # also the bench-only packages (SimGrid, for `make bench`)
#   scripts/install-deps.sh --fuzz     # also clang 16 and its libFuzzer runtime, for `make fuzz`
set -euo pipefail

packages=(
  g++ cmake ninja-build make
  libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev libeigen3-dev doctest-dev
  pkg-config coinor-libclp-dev
  libprotobuf-dev protobuf-compiler  # Chakra execution traces (traces/chakra.hpp)
  libopenmpi-dev openmpi-bin  # `mpirun orrery sweep` (optional at build time; CI runs a 2-rank sweep)
  chromium  # the browser test (tests/browser): headless rendering of `--html` reports
  python3-dev pybind11-dev python3-pytest  # the Python module (python/) and its tests
  python3-pandas  # orrery.sweep(..., frame=True) and its test
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libsimgrid-dev)
  shift
elif [[ "${1:-}" == "--fuzz" ]]; then
  packages+=(clang-16 libclang-rt-16-dev time)  # time: each campaign's CPU seconds (fuzz/run.sh)
  shift
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  echo "missing Debian packages: ${missing[*]}"
  exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: missing packages (${missing[*]}) and neither root nor sudo is available;" >&2
  echo "install them with: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
