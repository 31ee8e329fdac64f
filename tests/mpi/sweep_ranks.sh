#!/usr/bin/env bash
# A sweep over 2 MPI ranks on loopback writes the same files as one process.
#   sweep_ranks.sh <orrery binary> <plan.json>
# Exits 77 (CTest: skipped) when mpirun or an MPI build of orrery is missing.
set -euo pipefail
orrery=$1
plan=$2
if ! command -v mpirun > /dev/null; then
  echo "SKIP: mpirun is not installed (openmpi-bin; scripts/install-deps.sh installs it)"
  exit 77
fi
if ! "$orrery" sweep --help | grep -q "MPI on"; then
  echo "SKIP: this orrery was built without MPI (libopenmpi-dev was missing when it was configured)"
  exit 77
fi
# CI runs as root; Open MPI refuses that unless told. Loopback only, no shared-memory
# single-copy (containers forbid the ptrace it needs).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe -n 2 --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)

timeout 150 "${mpi[@]}" "$orrery" sweep "$plan" -o ranks.json --quiet > ranks.out
cat ranks.out
grep -q "on 2 MPI ranks" ranks.out
"$orrery" sweep "$plan" -o single.json --jobs 1 --quiet > single.out
cmp ranks.json single.json
cmp ranks.csv single.csv
# Rank 0 also works when given threads: the same files again.
timeout 150 "${mpi[@]}" "$orrery" sweep "$plan" -o ranks2.json --jobs 2 --quiet > /dev/null
cmp ranks2.json single.json
echo "2-rank sweep: $(grep -c . single.csv) lines, identical to the single-process run"
