// Every job-trace format of `orrery cluster` (traces/cluster_json.hpp, traces/cluster_traces.hpp), and the
// cluster specs that come as CSV; the first byte picks the format.
#include "fuzz_target.hpp"
#include "traces/cluster_json.hpp"
#include "traces/cluster_traces.hpp"
#include "traces/json_input.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return orrery::fuzz::run(data, size, [](std::string_view text) {
    namespace t = orrery::traces;
    const std::size_t format = orrery::fuzz::pick(text, 11);
    const bool skip = format % 2 == 1 && !text.empty() && text.back() == '\n';  // both modes of --skip-bad-rows
    const t::FileOverlay file("trace.csv", std::string(text));
    switch (format) {
      case 0: t::read_philly_trace("trace.csv", skip); break;
      case 1: t::read_arena_trace("trace.csv", skip); break;
      case 2: t::read_tiresias_trace("trace.csv", skip); break;
      case 3: t::read_gavel_trace("trace.csv", skip); break;
      case 4: t::read_itp_trace("trace.csv", skip); break;
      case 5: t::read_pai_pods("trace.csv", skip); break;
      case 6: t::read_sia_trace("trace.csv", skip); break;
      case 7: t::read_arena_cluster("trace.csv"); break;
      case 8: t::read_pai_cluster("trace.csv"); break;
      case 9: {
        const t::ColumnMap columns{"arrival", "gpus", "duration", "id", "gpu", "", ""};
        t::read_generic_trace("trace.csv", columns, skip);
        break;
      }
      default: {
        const t::ColumnMap columns{"arrival", "gpus", "duration", "", "", "min", "max"};
        t::read_generic_trace("trace.csv", columns, !skip);
        break;
      }
    }
  });
}
