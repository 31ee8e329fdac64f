// Issue 17: the capacity question end to end (plan search over cluster sizes, days to train,
// one memory headroom rule) and what a newcomer hits on the console.
#include <doctest/doctest.h>
