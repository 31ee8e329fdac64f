#include "reports/cluster_outputs.hpp"

#include "reports/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

namespace orrery::reports {

std::string cluster_timeline_json(const models::ClusterResult& result) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  const auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (std::size_t node = 0; node < result.node_names.size(); ++node) {
    sep();
    out += fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "tid": 0, "args": {{"name": )", node + 1);
    append_json_string(out, result.node_names[node]);
    out += "}}";
  }
  // Lanes per node: an allocation takes the first lane free at its start.
  std::vector<std::size_t> order(result.allocations.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const models::Allocation &x = result.allocations[a], &y = result.allocations[b];
    return std::tie(x.node, x.start_s) < std::tie(y.node, y.start_s);
  });
  std::vector<double> lane_end;
  int lane_node = -1;
  for (const std::size_t i : order) {
    const models::Allocation& a = result.allocations[i];
    if (a.node != lane_node) lane_end.clear(), lane_node = a.node;
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > a.start_s) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = a.end_s;
    sep();
    out += R"({"ph": "X", "name": )";
    append_json_string(out, result.jobs[static_cast<std::size_t>(a.job)].id);
    // Seconds to the format's microseconds, whole (reports are byte-identical run to run).
    out += fmt::format(R"(, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"gpus": {}}}}})", a.node + 1, lane + 1,
                       std::llround(a.start_s * 1e6), std::llround((a.end_s - a.start_s) * 1e6), a.gpus);
  }
  out += "\n]}\n";
  return out;
}

namespace {
// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

std::string cluster_jobs_csv(const models::ClusterResult& result) {
  std::string csv = "job,arrival_s,start_s,end_s,jct_s,queue_s,gpus,end_gpus,gpu_type,nodes,restarts\n";
  for (const models::JobRecord& j : result.jobs) {
    const bool done = j.end_s >= 0;
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(j.id), j.arrival_s, j.start_s, j.end_s,
                       done ? fmt::format("{}", j.end_s - j.arrival_s) : "", j.start_s >= 0 ? fmt::format("{}", j.start_s - j.arrival_s) : "",
                       j.gpus, j.end_gpus, j.gpu_type, j.nodes, j.restarts);
  }
  return csv;
}

}  // namespace orrery::reports
