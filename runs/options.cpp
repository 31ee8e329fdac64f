#include "runs/options.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <vector>

namespace orrery::runs {

void check_outputs(std::initializer_list<OutputFile> outputs) {
  namespace fs = std::filesystem;
  std::vector<std::pair<fs::path, std::string_view>> seen;
  for (const OutputFile& o : outputs) {
    if (o.path.empty()) continue;
    const std::string option(o.option);
    const fs::path p(o.path);
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw sim::InputError("<command line>", option,
                            fmt::format("cannot write {}: the folder {} does not exist", sim::quote(o.path), sim::quote(dir.string())));
    }
    if (p.filename().empty() || p.filename() == "." || p.filename() == ".." || fs::is_directory(p, ec)) {
      throw sim::InputError("<command line>", option, fmt::format("found {}, expected a file name (a folder cannot be written over)", sim::quote(o.path)));
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      throw sim::InputError("<command line>", option, fmt::format("cannot write {}: the folder {} is not writable", sim::quote(o.path), sim::quote(dir.string())));
    }
    // The same file by two names (./r.json and r.json) is caught too: the folder exists, so it
    // has a canonical form.
    const fs::path canonical = fs::weakly_canonical(fs::absolute(p, ec), ec);
    const fs::path key = ec ? p.lexically_normal() : canonical;
    for (const auto& [other, other_option] : seen) {
      if (other == key) {
        throw sim::InputError("<command line>", option, fmt::format("{} is also the file of {}; expected a file of its own", sim::quote(o.path), other_option));
      }
    }
    seen.emplace_back(key, o.option);
  }
}

void check_count(std::int64_t value, std::string_view option, std::int64_t min, std::int64_t max, std::string_view what) {
  if (value >= min && value <= max) return;
  throw sim::InputError("<command line>", std::string(option), fmt::format("found {}, expected {} to {} ({})", value, min, max, what));
}

}  // namespace orrery::runs
