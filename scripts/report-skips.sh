#!/usr/bin/env bash
# After `make test`: how many checks were skipped because a resource (../shared/data) was
# absent, and which, so that a green run never hides a skip. The suites log them (tests/doctest_main.cpp).
log=${1:?skip log}
if [[ ! -s "$log" ]]; then
  echo "skipped checks: 0 (every dataset in ../shared/data was present)"
  exit 0
fi
echo "skipped checks: $(wc -l < "$log") (a resource was absent; the tests that need it did not run):"
sort "$log" | uniq -c | sed 's/^/  /'
