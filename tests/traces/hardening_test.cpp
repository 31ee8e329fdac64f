// Issue 17 (hardening): bad input that once crashed, hung or was silently accepted, each
// answered with one line naming the file and place, exit 1, nothing written.
#include <doctest/doctest.h>
