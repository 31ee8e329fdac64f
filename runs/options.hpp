// Checks shared by every command's options: output paths before anything runs, and the range
// of count options. Both throw sim::InputError naming `<command line>` and the option.
//   check_outputs({{"--report", o.report_path}, {"--trace", o.trace_path}});  // before the run
//   check_count(o.steps, "--steps", 1, 1'000'000, "steps per policy");
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace orrery::runs {

// One file a command will write: the option that names it and its path (empty: not asked for).
struct OutputFile {
  std::string_view option;
  std::string path;
};

// Every output must be writable before a command runs, so that a run that fails on its last file
// has written none of the others: its folder exists and is writable, it names a file (not a
// folder), and no two outputs are the same file. Empty paths pass.
void check_outputs(std::initializer_list<OutputFile> outputs);

// `value` of a count option in [min, max], else "found V, expected MIN to MAX (what)".
void check_count(std::int64_t value, std::string_view option, std::int64_t min, std::int64_t max, std::string_view what);

}  // namespace orrery::runs
