// One function per subcommand. Each validates all of its input before it writes anything,
// and throws sim::InputError for bad input.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace orrery::cli {

struct ReplayOptions {
  std::string graph_path;
  std::string trace_path;   // empty: no timeline
  std::string report_path;  // empty: no report
};

void replay(const ReplayOptions& options, std::ostream& out);

struct CollectiveOptions {
  std::string topology = "dgx-h100";
  std::string op = "all-reduce";
  std::string algo = "ring";
  std::string size = "1 GiB";
  int ranks = 0;
  int channels = 0;
  int chunks = 1;
  int root = 0;
  int peer = 1;
  std::string alltoallv_path;  // CSV of from,to,bytes rows: all-to-allv
  std::string trace_path;
  std::string report_path;
};

void collective(const CollectiveOptions& options, std::ostream& out);

}  // namespace orrery::cli

namespace orrery::cli {

struct TopologyOptions {
  std::string topology = "dgx-h100";
  std::string save_path;  // write the topology as JSON; empty: summary only
};

// Summarises a topology (a spec or a .json file) and optionally saves it as JSON.
void topology(const TopologyOptions& options, std::ostream& out);

struct ValidateOptions {
  std::string data_dir = "../shared/data";
  std::string out_path;  // markdown table; empty: summary only
};

struct ValidationSummary {
  int held = 0;    // predictions at >= 1 GiB
  int within = 0;  // ... of them within 10%
  std::vector<std::string> misses;  // "file:line system" of the others
};

// Compares simulated collective bandwidth with the published measurements in data_dir.
ValidationSummary validate_network(const ValidateOptions& options, std::ostream& out);

}  // namespace orrery::cli
