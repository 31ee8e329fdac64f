// One function per subcommand. Each validates all of its input before it writes anything,
// and throws sim::InputError for bad input.
#pragma once

#include <iosfwd>
#include <string>

namespace orrery::cli {

struct ReplayOptions {
  std::string graph_path;
  std::string trace_path;   // empty: no timeline
  std::string report_path;  // empty: no report
};

void replay(const ReplayOptions& options, std::ostream& out);

}  // namespace orrery::cli
