// Runs the command line in-process for tests: exit code, stdout and stderr.
#pragma once

#include "cli/app.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::testing {

struct Result {
  int code;
  std::string out;
  std::string err;
};

inline Result run(std::vector<std::string> args) {
  args.insert(args.begin(), "orrery");
  std::ostringstream out, err;
  const int code = orrery::cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write(const std::filesystem::path& path, std::string_view text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace orrery::testing
