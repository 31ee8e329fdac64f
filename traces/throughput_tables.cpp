#include "traces/throughput_tables.hpp"

#include "sim/error.hpp"
#include "traces/csv.hpp"
#include "traces/json_input.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace orrery::traces {

namespace fs = std::filesystem;

namespace {

// A CSV cell as a finite number of at least `min`, or an InputError "line N:column NAME".
double cell_number(const CsvTable& t, std::size_t r, std::string_view column, double min, bool whole = false) {
  const std::string& s = t.at(r, column);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < min || (whole && v != std::floor(v))) {
    throw sim::InputError(t.source, fmt::format("line {}:column {}", t.lines[r], column),
                          fmt::format("found {}, expected {} of at least {}", sim::quote(s), whole ? "a whole number" : "a number", min));
  }
  return v;
}

// The sub-folders (or files) of `dir`, sorted, so that loading is deterministic.
std::vector<fs::path> sorted_entries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw sim::InputError(dir, "", "not a readable folder");
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// ---- Gavel ----

GavelThroughput::GavelThroughput(const std::string& path, models::ClusterSpec cluster) : cluster_(std::move(cluster)) {
  const auto doc = load_json_file(path);
  const JsonNode root = doc->root();
  if (!root.json().is_object()) root.fail_expected("an object of worker types (\"v100\", \"v100_unconsolidated\", ...)");
  for (auto w = root.json().begin(); w != root.json().end(); ++w) {
    const JsonNode worker(w.value(), doc->source(), fmt::format("/{}", pointer_token(w.key())));
    if (!worker.json().is_object()) worker.fail_expected("an object of job keys such as \"('ResNet-50 (batch size 64)', 1)\"");
    for (auto k = w.value().begin(); k != w.value().end(); ++k) {
      JsonObject entry = JsonNode(k.value(), doc->source(), fmt::format("{}/{}", worker.pointer(), pointer_token(k.key()))).as_object();
      // "null": the job alone. The other keys are co-location pairs, deliberately not read (so
      // no finish()).
      const JsonNode alone = entry.required("null");
      const double v = alone.as_number();
      if (!(v >= 0)) alone.fail_expected("a throughput of 0 or more iterations per second");
      table_[w.key() + "|" + k.key()] = v;
    }
  }
  if (table_.empty()) root.fail("found no throughputs");
}

double GavelThroughput::rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const {
  if (gpus < 1) return 0;
  // Gavel's keys are Python tuple reprs: "('ResNet-50 (batch size 64)', 4)" (gavel/SOURCE.md).
  const std::string_view spread = nodes > cluster_.min_nodes(gpu_type, gpus) ? "_unconsolidated" : "";
  const auto it = table_.find(fmt::format("{}{}|('{}', {})", gpu_type, spread, job.model, gpus));
  return it == table_.end() ? 0.0 : it->second;
}

// ---- ElasticFlow ----

ElasticFlowThroughput::ElasticFlowThroughput(const std::string& root) {
  constexpr std::string_view prefix = "throughputs_";
  for (const fs::path& dir : sorted_entries(root)) {
    const std::string name = dir.filename().string();
    if (!fs::is_directory(dir) || name.rfind(prefix, 0) != 0) continue;
    for (const fs::path& file : sorted_entries(dir.string())) {
      if (file.extension() == ".csv") add_table(file.string(), file.stem().string(), ascii_lower(name.substr(prefix.size())));
    }
  }
  if (tables_.empty()) throw sim::InputError(root, "", "found no throughputs_<GPU>/<model>.csv tables");
}

void ElasticFlowThroughput::add_table(const std::string& csv_path, std::string model, std::string gpu_type) {
  const CsvTable t = read_csv_file(csv_path);
  if (t.header.empty() || t.header[0] != "global_batch_size") {
    throw sim::InputError(csv_path, "line 1:column 1",
                          fmt::format("found {}, expected global_batch_size", sim::quote(t.header.empty() ? "" : t.header[0])));
  }
  std::vector<int> gpus(t.header.size(), 0);
  for (std::size_t c = 1; c < t.header.size(); ++c) {
    const std::string& h = t.header[c];
    char* end = nullptr;
    const long n = std::strtol(h.c_str(), &end, 10);
    if (h.empty() || end != h.c_str() + h.size() || n < 1 || n > 1'000'000) {
      throw sim::InputError(csv_path, fmt::format("line 1:column {}", c + 1), fmt::format("found {}, expected a GPU count", sim::quote(h)));
    }
    gpus[c] = static_cast<int>(n);
  }
  auto& table = tables_[model + "|" + gpu_type];
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const int batch = static_cast<int>(cell_number(t, r, "global_batch_size", 1, true));
    for (std::size_t c = 1; c < t.header.size(); ++c) {
      // Empty or "nan": not measured / infeasible (elasticflow/SOURCE.md); 0 means the same.
      const std::string& s = t.rows[r][c];
      if (s.empty() || ascii_lower(s) == "nan") continue;
      const double v = cell_number(t, r, t.header[c], 0);
      if (v > 0) table[{batch, gpus[c]}] = v;
    }
  }
}

double ElasticFlowThroughput::rate(const models::Job& job, std::string_view gpu_type, int gpus, int) const {
  const auto t = tables_.find(fmt::format("{}|{}", job.model, gpu_type));
  if (t == tables_.end()) return 0;
  const auto it = t->second.find({job.batch, gpus});
  return it == t->second.end() ? 0.0 : it->second;
}

// ---- Pollux / Sia ----

void AdaptdlThroughput::add_profile(const std::string& placements_csv, const std::string& scalability_csv,
                                    const std::string& model, const std::string& gpu_type) {
  struct Sum {
    double step = 0, sync = 0;
    int n = 0;
  };
  std::map<std::tuple<int, int, double>, Sum> sums;  // (nodes, GPUs, local batch)
  const auto add = [&](const CsvTable& t, std::size_t r, int nodes, int gpus) {
    Sum& s = sums[{nodes, gpus, cell_number(t, r, "local_bsz", 1)}];
    const double step = cell_number(t, r, "step_time", 0), sync = cell_number(t, r, "sync_time", 0);
    if (step <= 0) throw sim::InputError(t.source, fmt::format("line {}:column step_time", t.lines[r]), fmt::format("found {}, expected a positive step time", sim::quote(t.at(r, "step_time"))));
    s.step += step;
    s.sync += sync;
    ++s.n;
  };
  const CsvTable placements = read_csv_file(placements_csv);
  for (std::size_t r = 0; r < placements.rows.size(); ++r) {
    // "4444": one digit per node, its GPUs (pollux-adaptdl/SOURCE.md).
    const std::string& p = placements.at(r, "placement");
    int nodes = 0, gpus = 0;
    for (char c : p) {
      if (c < '0' || c > '9') {
        throw sim::InputError(placements.source, fmt::format("line {}:column placement", placements.lines[r]),
                              fmt::format("found {}, expected one digit per node (GPUs on it), e.g. \"22\"", sim::quote(p)));
      }
      nodes += c != '0';
      gpus += c - '0';
    }
    if (gpus == 0) {
      throw sim::InputError(placements.source, fmt::format("line {}:column placement", placements.lines[r]),
                            fmt::format("found {}, expected at least one GPU", sim::quote(p)));
    }
    add(placements, r, nodes, gpus);
  }
  const CsvTable scalability = read_csv_file(scalability_csv);
  for (std::size_t r = 0; r < scalability.rows.size(); ++r) {
    const int nodes = static_cast<int>(cell_number(scalability, r, "num_nodes", 1, true));
    const int gpus = static_cast<int>(cell_number(scalability, r, "num_replicas", nodes, true));
    add(scalability, r, nodes, gpus);
  }
  Profile& profile = profiles_[model + "|" + gpu_type];
  for (const auto& [key, s] : sums) {
    const auto [nodes, gpus, bsz] = key;
    profile[{nodes, gpus}][bsz] = {s.step / s.n, s.sync / s.n};
  }
}

namespace {

using Point = AdaptdlThroughput::Point;
using Profile = AdaptdlThroughput::Profile;

Point mix(const Point& a, const Point& b, double w) {
  return {a.step_s + w * (b.step_s - a.step_s), a.sync_s + w * (b.sync_s - a.sync_s)};
}

// Linear in local batch within the measured range (scipy's interp1d without extrapolation, as
// Pollux's and Sia's get_throughput use it).
std::optional<Point> in_batch(const std::map<double, Point>& m, double b) {
  const auto hi = m.lower_bound(b);
  if (hi == m.end()) return std::nullopt;
  if (hi->first == b) return hi->second;
  if (hi == m.begin()) return std::nullopt;
  const auto lo = std::prev(hi);
  return mix(lo->second, hi->second, (b - lo->first) / (hi->first - lo->first));
}

// At `nodes` nodes: the profile of `gpus` GPUs when measured, else between the nearest measured
// GPU counts around it.
std::optional<Point> at_nodes(const Profile& p, int nodes, double gpus, double b) {
  if (gpus == std::floor(gpus)) {
    if (const auto exact = p.find({nodes, static_cast<int>(gpus)}); exact != p.end()) return in_batch(exact->second, b);
  }
  std::optional<std::pair<int, Point>> below, above;
  for (auto it = p.lower_bound({nodes, 0}); it != p.end() && it->first.first == nodes; ++it) {
    const auto v = in_batch(it->second, b);
    if (!v) continue;
    if (it->first.second < gpus) below = {it->first.second, *v};
    else if (!above) above = {it->first.second, *v};
  }
  if (!below || !above) return std::nullopt;
  return mix(below->second, above->second, (gpus - below->first) / (above->first - below->first));
}

// An unprofiled node count: between the nearest profiled node counts around it, each at the same
// GPUs per node (5 nodes x 4 GPUs between 4 x 4 and 6 x 4).
std::optional<Point> interpolate(const Profile& p, int nodes, int gpus, double b) {
  if (const auto v = at_nodes(p, nodes, gpus, b)) return v;
  const double per_node = static_cast<double>(gpus) / nodes;
  std::optional<std::pair<int, Point>> below, above;
  for (auto it = p.begin(); it != p.end(); it = p.lower_bound({it->first.first + 1, 0})) {
    const int n = it->first.first;
    if (n == nodes) continue;
    const auto v = at_nodes(p, n, per_node * n, b);
    if (!v) continue;
    if (n < nodes) below = {n, *v};
    else if (!above) above = {n, *v};
  }
  if (!below || !above) return std::nullopt;
  return mix(below->second, above->second, static_cast<double>(nodes - below->first) / (above->first - below->first));
}

// The largest local batch run without accumulation: that of the (nodes, GPUs) profile, else the
// largest among profiles at least as large (Sia's get_max_local_bsz), else the largest anywhere.
double max_local_batch(const Profile& p, int nodes, int gpus) {
  if (const auto it = p.find({nodes, gpus}); it != p.end()) return it->second.rbegin()->first;
  double larger = 0, any = 0;
  for (const auto& [key, batches] : p) {
    any = std::max(any, batches.rbegin()->first);
    if (key.first >= nodes && key.second >= gpus) larger = std::max(larger, batches.rbegin()->first);
  }
  return larger > 0 ? larger : any;
}

}  // namespace

double AdaptdlThroughput::rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const {
  const auto it = profiles_.find(fmt::format("{}|{}", job.model, gpu_type));
  if (it == profiles_.end() || gpus < 1 || nodes < 1 || job.batch < 1) return 0;
  const Profile& p = it->second;
  // Sia's get_throughput_with_accum: local batch, accumulation steps, atomic (per-pass) batch;
  // the 1e-8 guards the ceiling against rounding, as there.
  const double local = std::ceil(static_cast<double>(job.batch) / gpus - 1e-8);
  const double accum = std::ceil(local / max_local_batch(p, nodes, gpus) - 1e-8) - 1;
  const double atomic = std::ceil(local / (accum + 1) - 1e-8);
  const std::optional<Point> pt = interpolate(p, nodes, gpus, atomic);
  if (!pt) return 0;
  // Each accumulation pass repeats the compute part of a step (step - sync) without the sync.
  const double seconds = pt->step_s + accum * (pt->step_s - pt->sync_s);
  return seconds > 0 ? 1.0 / seconds : 0.0;
}

AdaptdlThroughput load_pollux_throughput(const std::string& traces_dir) {
  AdaptdlThroughput t;
  for (const fs::path& dir : sorted_entries(traces_dir)) {
    if (fs::exists(dir / "placements.csv")) {
      t.add_profile((dir / "placements.csv").string(), (dir / "scalability.csv").string(), dir.filename().string(), "t4");
    }
  }
  if (t.profiles() == 0) throw sim::InputError(traces_dir, "", "found no <model>/placements.csv profiles");
  return t;
}

std::map<std::string, std::string> sia_clusters() {
  // sia/SOURCE.md (Sia's simulator_config.py): aws g4dn.12xlarge 4x T4; azure ND40rs_v2 8x V100;
  // dgx-ext DGX-A100 (the dgx profile with more batch sizes); quad 4x Quadro RTX 6000; rtx 8x RTX 2080Ti.
  return {{"aws", "t4"}, {"azure", "v100"}, {"dgx-ext", "a100"}, {"quad", "rtx6000"}, {"rtx", "rtx2080ti"}};
}

AdaptdlThroughput load_sia_throughput(const std::string& traces_dir, const std::map<std::string, std::string>& clusters) {
  AdaptdlThroughput t;
  for (const fs::path& dir : sorted_entries(traces_dir)) {
    // gpt_pmp is pipeline-parallel: Sia's PMPApplication reads its step time per stage and its
    // sync time exceeds the step time, a different meaning (sia-simulator/applications.py).
    if (!fs::is_directory(dir) || dir.filename() == "gpt_pmp") continue;
    for (const auto& [suffix, gpu] : clusters) {
      const fs::path placements = dir / fmt::format("placements-{}.csv", suffix);
      if (!fs::exists(placements)) continue;
      t.add_profile(placements.string(), (dir / fmt::format("scalability-{}.csv", suffix)).string(), dir.filename().string(), gpu);
    }
  }
  if (t.profiles() == 0) throw sim::InputError(traces_dir, "", "found no <model>/placements-<cluster>.csv profiles");
  return t;
}

}  // namespace orrery::traces
