#include "sim/error.hpp"
#include "traces/atomic_file.hpp"
#include "reports/report.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace orrery;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("reports have a stable, sorted key order whatever the order of setting") {
  reports::Report a;
  a.set("/zeta", std::int64_t{1});
  a.set("/alpha/b", 2.5);
  a.set("/alpha/a", true);
  a.set("/name", "x");
  reports::Report b;
  b.set("/name", "x");
  b.set("/alpha/a", true);
  b.set("/alpha/b", 2.5);
  b.set("/zeta", std::int64_t{1});
  CHECK(a.to_json() == b.to_json());
  CHECK(a.to_json() == "{\n  \"alpha\": {\n    \"a\": true,\n    \"b\": 2.5\n  },\n  \"name\": \"x\",\n  \"zeta\": 1\n}\n");
  CHECK_THROWS_AS(a.set("/nan", std::nan("")), sim::InternalError);
}

TEST_CASE("files are written atomically: complete, or not at all") {
  namespace fs = std::filesystem;
  fs::remove_all("atomic");
  fs::create_directory("atomic");
  reports::Report r;
  r.set("/v", std::int64_t{42});
  r.write("atomic/report.json");
  CHECK(slurp("atomic/report.json") == r.to_json());
  {
    traces::AtomicFile abandoned("atomic/abandoned.json");
    abandoned.write("{\"half\":");
  }  // destroyed without commit, as when a run fails midway
  CHECK_FALSE(fs::exists("atomic/abandoned.json"));
  // Only the finished report is there: no temporaries left behind.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("atomic")) ++files;
  CHECK(files == 1);
  // An impossible path is the user's error, naming the path.
  try {
    r.write("atomic/missing-dir/report.json");
    FAIL("no error");
  } catch (const sim::InputError& e) {
    CHECK(std::string(e.what()).find("atomic/missing-dir/report.json: cannot write output file") == 0);
  }
}
