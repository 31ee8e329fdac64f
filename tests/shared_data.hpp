// The real public datasets beside the repository (../shared/data). A test that needs one asks
// for it here; when it is absent the test says so and the skip is counted, and the suite's
// last line reports how many checks were skipped (tests/doctest_main.cpp).
//   const auto path = orrery::testing::shared_data("tiresias/60_job.csv");
//   if (!path) return;   // already reported: "skipped: ../shared/data/tiresias/60_job.csv is absent"
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orrery::testing {

// The absolute path of `relative` under ../shared/data, or nullopt after recording a skip.
std::optional<std::string> shared_data(std::string_view relative);
// Records a skip with its reason (for tests that skip for another missing resource).
void record_skip(std::string_view reason);
int skipped_count();

}  // namespace orrery::testing
