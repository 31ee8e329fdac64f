// When the orrery command runs itself again with glibc's huge-page tunable (sim/huge_pages.hpp).
#include "sim/huge_pages.hpp"

#include <doctest/doctest.h>

using orrery::sim::huge_page_tunables;

TEST_CASE("huge pages: the tunable is added where the kernel gives them on request and nothing set it") {
  CHECK(huge_page_tunables(nullptr, nullptr, "always [madvise] never") == "glibc.malloc.hugetlb=1");
  // The user's other tunables are kept.
  CHECK(huge_page_tunables("glibc.malloc.arena_max=2", nullptr, "always [madvise] never") == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  CHECK(huge_page_tunables("", "1", "always [madvise] never") == "glibc.malloc.hugetlb=1");
}

TEST_CASE("huge pages: no second run where it would change nothing or was declined") {
  CHECK(huge_page_tunables(nullptr, nullptr, "always madvise [never]").empty());  // the kernel gives none
  CHECK(huge_page_tunables(nullptr, nullptr, "[always] madvise never").empty());  // every region has them already
  CHECK(huge_page_tunables(nullptr, nullptr, "").empty());                        // no such file
  CHECK(huge_page_tunables(nullptr, "0", "always [madvise] never").empty());       // ORRERY_HUGE_PAGES=0
  // Already set, by a first run or by the user (who may have chosen 0): never run again.
  CHECK(huge_page_tunables("glibc.malloc.hugetlb=1", nullptr, "always [madvise] never").empty());
  CHECK(huge_page_tunables("glibc.malloc.hugetlb=0", nullptr, "always [madvise] never").empty());
  CHECK(huge_page_tunables("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2", nullptr, "[always] madvise never").empty());
}
