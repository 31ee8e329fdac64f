// Runs the command line in-process for tests: exit code, stdout and stderr.
#pragma once

#include "cli/app.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>

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

// A JSON file the command wrote.
inline nlohmann::json read_json(const std::filesystem::path& path) { return nlohmann::json::parse(slurp(path)); }

// Lines of a captured stream (its newlines).
inline std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

inline void write(const std::filesystem::path& path, std::string_view text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace orrery::testing
