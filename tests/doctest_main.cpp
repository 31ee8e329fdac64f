// The doctest entry point of every suite: runs the cases, then says how many were skipped
// because a resource (../shared/data) was absent, so a green run never hides a skip. With
// ORRERY_SKIP_LOG set (CTest sets it), each skip is also appended there as "suite: reason",
// and `make test` prints the count after CTest's summary.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "shared_data.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <vector>

#ifndef ORRERY_SOURCE_DIR
#error "tests need ORRERY_SOURCE_DIR"
#endif

namespace orrery::testing {
namespace {
std::mutex skips_mutex;
std::string suite_name = "tests";
std::vector<std::string>& skips() {
  static std::vector<std::string> list;
  return list;
}
}  // namespace

void record_skip(std::string_view reason) {
  const std::lock_guard lock(skips_mutex);
  skips().emplace_back(reason);
  std::cout << "skipped: " << reason << "\n";
  if (const char* log = std::getenv("ORRERY_SKIP_LOG"); log != nullptr && *log != '\0') {
    std::ofstream(log, std::ios::app) << suite_name << ": " << reason << "\n";
  }
}

int skipped_count() {
  const std::lock_guard lock(skips_mutex);
  return static_cast<int>(skips().size());
}

std::optional<std::string> shared_data(std::string_view relative) {
  const std::string path = std::string(ORRERY_SOURCE_DIR) + "/../shared/data/" + std::string(relative);
  if (std::filesystem::exists(path)) return path;
  record_skip("../shared/data/" + std::string(relative) + " is absent");
  return std::nullopt;
}

}  // namespace orrery::testing

int main(int argc, char** argv) {
  if (argc > 0) orrery::testing::suite_name = std::filesystem::path(argv[0]).filename().string();
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;
  const int skipped = orrery::testing::skipped_count();
  std::cout << "[orrery] " << skipped << (skipped == 1 ? " check" : " checks")
            << " skipped because a resource was absent" << (skipped > 0 ? " (listed above as \"skipped:\")" : "") << "\n";
  return result;
}
