#include "traces/cluster_json.hpp"

#include "models/hardware/hardware.hpp"
#include "models/training/llm.hpp"
#include "models/training/parallel.hpp"
#include "sim/error.hpp"
#include "sim/unit_parse.hpp"
#include "traces/cluster_traces.hpp"
#include "traces/csv.hpp"
#include "traces/json_input.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <numeric>
#include <tuple>
#include <fmt/format.h>

namespace orrery::traces {

namespace {

// "2017-10-09 07:01:55" -> seconds since the epoch (UTC): exactly that form, a real date and
// time of day (1970 to 9999), nothing after it.
bool parse_timestamp(std::string_view text, double& out) {
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != ' ' || text[13] != ':' || text[16] != ':') return false;
  const auto field = [&](std::size_t at, std::size_t n, int& v) {
    v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      v = v * 10 + (text[i] - '0');
    }
    return true;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!field(0, 4, year) || !field(5, 2, month) || !field(8, 2, day) || !field(11, 2, hour) || !field(14, 2, minute) || !field(17, 2, second)) {
    return false;
  }
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (year < 1970 || month < 1 || month > 12) return false;
  const int month_days = days[month - 1] + (month == 2 && leap ? 1 : 0);
  if (day < 1 || day > month_days || hour > 23 || minute > 59 || second > 59) return false;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  out = static_cast<double>(timegm(&tm));
  return true;
}

// Cluster sizes beyond any built (the largest hold a few hundred thousand GPUs), which keep
// GPU counts far inside int.
constexpr std::int64_t kMaxPoolNodes = 100'000;
constexpr std::int64_t kMaxClusterGpus = 1'000'000;

const std::vector<std::string>& table_only_gpus() {
  // Gavel's K80 and P100 (gavel/simulation_throughputs.json), Sia's RTX cards (sia/traces).
  static const std::vector<std::string> types = {"k80", "p100", "rtx2080ti", "rtx6000"};
  return types;
}
// A pool's GPU type: one the hardware catalog knows, or one only throughput tables have.
void check_pool_gpu(const JsonNode& node, const std::string& type) {
  const models::HardwareCatalog& catalog = models::HardwareCatalog::builtin();
  const std::vector<std::string>& tables = table_only_gpus();
  if (catalog.find(type) != nullptr || std::find(tables.begin(), tables.end(), type) != tables.end()) return;
  std::vector<std::string> candidates = tables;
  for (const models::GpuSpec& g : catalog.gpus()) {
    candidates.push_back(ascii_lower(g.name));
    for (const std::string& a : g.aliases) candidates.push_back(ascii_lower(a));
  }
  std::vector<std::string> known;
  for (const std::string& n : catalog.names()) known.push_back(ascii_lower(n));
  node.fail(fmt::format("unknown GPU {}{}; known: {}, and of the throughput tables only: {}", sim::quote(type), sim::did_you_mean(type, candidates),
                        fmt::join(known, ", "), fmt::join(tables, ", ")));
}

std::string resolve(const std::string& base, const std::string& p) {
  const std::filesystem::path path = p;
  return path.is_absolute() ? p : (std::filesystem::path(base).parent_path() / path).string();
}

// Reads a row's fields, or reports "file:line:column".
struct RowReader {
  const CsvTable& t;
  std::size_t r;
  std::string where(std::string_view column) const { return fmt::format("line {}:column {}", t.lines[r], column); }
  double number(std::string_view column, const TraceRange& range) const {
    const std::string& text = t.at(r, column);
    const std::optional<double> v = range.read(text);
    if (!v) throw sim::InputError(t.source, where(column), fmt::format("found {}, expected {}", sim::quote(text), range.expected()));
    return *v;
  }
  int count(std::string_view column, const TraceRange& range) const { return static_cast<int>(number(column, range)); }
};

template <class F>
JobTrace read_rows(const std::string& path, bool skip, F&& row) {
  const CsvTable t = read_csv_file(path, /*ragged=*/true);
  JobTrace out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    try {
      t.check_width(r);
      out.jobs.push_back(row(RowReader{t, r}));
    } catch (const sim::InputError&) {
      if (!skip) throw;
      ++out.skipped;
    }
  }
  if (out.jobs.empty()) {
    throw sim::InputError(path, "", out.skipped > 0 ? fmt::format("found no jobs ({} bad rows skipped)", out.skipped) : "found no jobs");
  }
  return out;
}

}  // namespace

std::optional<double> TraceRange::read(std::string_view cell) const {
  const std::optional<double> v = parse_decimal(cell);
  if (!v || *v < min || *v > max || (whole && *v != std::floor(*v))) return std::nullopt;
  return v;
}

std::string TraceRange::expected() const {
  return fmt::format("{} of at least {} and at most {} {} ({})", whole ? "a whole number" : "a number", min, max, what, reason);
}

JobTrace read_philly_trace(const std::string& path, bool skip_bad_rows) {
  double first = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::size_t, std::string>> stamps;  // each job's line and timestamp
  JobTrace trace = read_rows(path, skip_bad_rows, [&](const RowReader& rr) {
    models::Job j;
    double ts = 0;
    if (!parse_timestamp(rr.t.at(rr.r, "timestamp"), ts)) {
      throw sim::InputError(rr.t.source, fmt::format("line {}:column timestamp", rr.t.lines[rr.r]),
                            fmt::format("found {}, expected YYYY-MM-DD hh:mm:ss", sim::quote(rr.t.at(rr.r, "timestamp"))));
    }
    j.id = fmt::format("philly-{}", rr.t.lines[rr.r]);
    j.arrival_s = ts;
    j.service_s = rr.number("duration", kTraceSeconds);
    j.gpus = rr.count("num_gpus", kTraceGpus);
    first = std::min(first, ts);
    stamps.emplace_back(rr.t.lines[rr.r], rr.t.at(rr.r, "timestamp"));
    return j;
  });
  // Arrivals count from the first timestamp, and must stay in range from there.
  std::vector<models::Job> kept;
  for (std::size_t k = 0; k < trace.jobs.size(); ++k) {
    models::Job& j = trace.jobs[k];
    j.arrival_s -= first;
    if (j.arrival_s <= kMaxTraceSeconds) {
      kept.push_back(std::move(j));
    } else if (skip_bad_rows) {
      ++trace.skipped;
    } else {
      throw sim::InputError(path, fmt::format("line {}:column timestamp", stamps[k].first),
                            fmt::format("found {}, {} s after the first job's, expected {}", sim::quote(stamps[k].second), j.arrival_s,
                                        kTraceSeconds.expected()));
    }
  }
  trace.jobs = std::move(kept);
  if (trace.jobs.empty()) throw sim::InputError(path, "", fmt::format("found no jobs ({} bad rows skipped)", trace.skipped));
  return trace;
}

JobTrace read_arena_trace(const std::string& path, bool skip_bad_rows) {
  return read_rows(path, skip_bad_rows, [&](const RowReader& rr) {
    models::Job j;
    j.id = rr.t.at(rr.r, "job_id");
    j.arrival_s = rr.number("submission_time", kTraceSeconds);
    j.iterations = rr.number("num_iteration", kTraceIterations);
    j.model = rr.t.at(rr.r, "model_name");
    j.batch = rr.count("batch_size", kTraceBatch);
    j.gpus = rr.count("num_gpu", kTraceGpus);
    j.gpu_type = ascii_lower(rr.t.at(rr.r, "gpu_type"));
    return j;
  });
}

JobTrace read_tiresias_trace(const std::string& path, bool skip_bad_rows) {
  return read_rows(path, skip_bad_rows, [&](const RowReader& rr) {
    models::Job j;
    j.id = rr.t.at(rr.r, "job_id");
    j.arrival_s = rr.number("submit_time", kTraceSeconds);
    j.gpus = rr.count("num_gpu", kTraceGpus);
    j.service_s = rr.number("duration", kTraceSeconds);
    j.iterations = rr.number("iterations", kTraceIterations.at_least(0));
    j.model = rr.t.at(rr.r, "model_name");
    return j;
  });
}

JobTrace read_generic_trace(const std::string& path, const ColumnMap& c, bool skip_bad_rows) {
  return read_rows(path, skip_bad_rows, [&](const RowReader& rr) {
    models::Job j;
    j.id = c.id.empty() ? fmt::format("line-{}", rr.t.lines[rr.r]) : rr.t.at(rr.r, c.id);
    j.arrival_s = rr.number(c.arrival, kTraceSeconds);
    j.gpus = rr.count(c.gpus, kTraceGpus);
    j.service_s = rr.number(c.duration, kTraceSeconds);
    if (!c.gpu_type.empty()) j.gpu_type = ascii_lower(rr.t.at(rr.r, c.gpu_type));
    if (!c.min_gpus.empty()) {
      j.min_gpus = rr.count(c.min_gpus, kTraceGpus);
      j.max_gpus = rr.count(c.max_gpus, kTraceGpus);
      if (j.min_gpus > j.gpus || j.gpus > j.max_gpus) {
        throw sim::InputError(rr.t.source, rr.where(c.max_gpus),
                              fmt::format("found the range {}..{}, expected one that holds the requested {} GPUs", j.min_gpus, j.max_gpus, j.gpus));
      }
    }
    return j;
  });
}

models::ClusterSpec read_arena_cluster(const std::string& path) {
  // GPUs per node as Arena's simulator hard-codes them (resources/hardware_specs.py, NODE_CAPACITY;
  // see ../shared/data/arena/SOURCE.md).
  static const std::map<std::string, int, std::less<>> capacity = {{"a100", 4}, {"v100", 16}, {"a40", 2}, {"a10", 2}};
  const auto doc = load_json_file(path);
  models::ClusterSpec c;
  for (const JsonNode& entry : doc->root().as_array()) {
    const auto& j = entry.json();
    if (!j.is_object()) entry.fail_expected("an object of GPU types");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const JsonNode node(it.value(), path, entry.pointer() + "/" + pointer_token(it.key()));
      const auto cap = capacity.find(it.key());
      if (cap == capacity.end()) node.fail(fmt::format("unknown GPU type {}; Arena's types: a100, v100, a40, a10", sim::quote(it.key())));
      JsonObject o = node.as_object();
      const JsonNode nodes = o.required("node_num");
      const std::int64_t n = nodes.as_int();
      if (n < 1 || n > kMaxPoolNodes) nodes.fail_expected(fmt::format("1 to {} nodes (more servers than any cluster has)", kMaxPoolNodes));
      o.finish();
      c.pools.push_back({it.key(), static_cast<int>(n), cap->second});
    }
  }
  if (c.pools.empty()) doc->root().fail_expected("at least one GPU type with nodes");
  return c;
}

ArenaThroughput::ArenaThroughput(const std::string& table_path, const models::ClusterSpec& cluster) {
  const CsvTable t = read_csv_file(table_path);
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string family = t.at(r, "model_family"), size = t.at(r, "param_num");
    sizes_[family].emplace(param_count(size), size);
    if (t.at(r, "status") != "ok") continue;
    iter_time_[t.at(r, "model_key") + "|" + t.at(r, "device_key")] = t.number(r, "iter_time_s");
  }
  for (const models::NodePool& p : cluster.pools) per_node_[p.gpu_type] = p.gpus_per_node;
}

double ArenaThroughput::param_count(std::string_view size) {
  // "760M", "1.3B", "10B"
  if (size.empty()) return 0;
  const double scale = size.back() == 'B' ? 1e9 : size.back() == 'M' ? 1e6 : 1;
  return std::strtod(std::string(size).c_str(), nullptr) * scale;
}

double ArenaThroughput::rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const {
  std::string key = job.model;
  key += '\0';
  key += gpu_type;
  for (const int v : {job.batch, gpus, nodes}) key.append(reinterpret_cast<const char*>(&v), sizeof v);
  {
    const std::lock_guard hold(memo_lock_);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  const double r = lookup_rate(job, gpu_type, gpus, nodes);
  const std::lock_guard hold(memo_lock_);
  memo_.emplace(std::move(key), r);
  return r;
}

double ArenaThroughput::lookup_rate(const models::Job& job, std::string_view gpu_type, int gpus, int nodes) const {
  const auto cap = per_node_.find(gpu_type);
  if (cap == per_node_.end() || gpus < 1) return 0;
  // model "bert__1.3B", batch 128 -> "bert_1.3B_128"; device "{H}_{gpu}_{H}_n_{G}_d" (H hosts of
  // G GPUs each). Missing there, Arena's simulator takes the next larger size of the family that
  // it profiled and counts 1.8x its throughput per size step (arena/SOURCE.md).
  const auto split = job.model.find("__");
  if (split == std::string::npos) return 0;
  const std::string family = job.model.substr(0, split), size = job.model.substr(split + 2);
  const auto sizes = sizes_.find(family);
  // The even split over the fewest hosts no fewer than `nodes` (an uneven spread runs at the
  // locality of the next even one: its largest per-host share sets the pace).
  for (int hosts = std::max(1, nodes); hosts <= gpus; ++hosts) {
    if (gpus % hosts != 0 || gpus / hosts > cap->second) continue;
    const std::string device = fmt::format("{}_{}_{}_n_{}_d", hosts, gpu_type, hosts, gpus / hosts);
    const auto lookup = [&](const std::string& sz) {
      const auto it = iter_time_.find(fmt::format("{}_{}_{}|{}", family, sz, job.batch, device));
      return it == iter_time_.end() || it->second <= 0 ? 0.0 : 1.0 / it->second;
    };
    if (const double r = lookup(size); r > 0) return r;
    if (sizes == sizes_.end()) return 0;
    int step = 0;
    for (auto it = sizes->second.upper_bound(param_count(size)); it != sizes->second.end(); ++it) {
      ++step;
      if (const double r = lookup(it->second); r > 0) return r * std::pow(1.8, step);
    }
    return 0;  // this locality is not profiled for the model
  }
  return 0;
}

ClusterScenario load_cluster_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  JsonObject top = doc->root().as_object();
  top.optional("name");
  top.optional("description");
  ClusterScenario s;
  JsonObject cluster = top.required("cluster").as_object();
  if (auto spec = cluster.optional("arena_spec")) {
    s.cluster = read_arena_cluster(resolve(path, spec->as_string()));
  } else if (auto pai = cluster.optional("pai_nodes")) {
    s.cluster = read_pai_cluster(resolve(path, pai->as_string()));
  } else {
    const JsonNode pools = cluster.required("pools");
    std::int64_t gpus = 0;
    for (const JsonNode& p : pools.as_array()) {
      JsonObject o = p.as_object();
      models::NodePool pool;
      const JsonNode gpu = o.required("gpu");
      pool.gpu_type = ascii_lower(gpu.as_string());
      check_pool_gpu(gpu, pool.gpu_type);
      const JsonNode nodes = o.required("nodes");
      const JsonNode per = o.required("gpus_per_node");
      if (nodes.as_int() < 1 || nodes.as_int() > kMaxPoolNodes) {
        nodes.fail_expected(fmt::format("1 to {} nodes (more servers than any cluster has)", kMaxPoolNodes));
      }
      if (per.as_int() < 1 || per.as_int() > 1024) per.fail_expected("1 to 1024 GPUs per node");
      pool.nodes = static_cast<int>(nodes.as_int());
      pool.gpus_per_node = static_cast<int>(per.as_int());
      gpus += std::int64_t{pool.nodes} * pool.gpus_per_node;
      if (gpus > kMaxClusterGpus) {
        nodes.fail(fmt::format("found {} nodes, which make the cluster {} GPUs, expected at most {} GPUs in all (more than any cluster holds)",
                               pool.nodes, gpus, kMaxClusterGpus));
      }
      o.finish();
      s.cluster.pools.push_back(pool);
    }
    if (s.cluster.pools.empty()) pools.fail_expected("at least one pool {\"gpu\", \"nodes\", \"gpus_per_node\"}");
  }
  cluster.finish();
  JsonObject jobs = top.required("jobs").as_object();
  const JsonNode format = jobs.required("format");
  s.jobs_format = format.as_string();
  static const std::vector<std::string> formats = {"philly", "arena", "tiresias", "gavel", "itp", "pai", "sia", "pollux", "csv"};
  if (std::find(formats.begin(), formats.end(), s.jobs_format) == formats.end()) {
    format.fail(fmt::format("found {}, expected philly, arena, tiresias, gavel, itp, pai, sia, pollux or csv", sim::quote(s.jobs_format)));
  }
  if (s.jobs_format == "sia" || s.jobs_format == "pollux") {
    const JsonNode it = jobs.required("iterations");
    s.iterations = it.as_number();
    if (!(s.iterations >= 1 && s.iterations <= kTraceIterations.max)) {
      it.fail_expected(fmt::format("every job's length in iterations, 1 to {} ({}); these workloads hold none", kTraceIterations.max, kTraceIterations.reason));
    }
  }
  s.jobs_path = resolve(path, jobs.required("path").as_string());
  if (auto v = jobs.optional("elastic")) s.elastic = v->as_bool();
  if (s.jobs_format == "csv") {
    JsonObject c = jobs.required("columns").as_object();
    s.columns.arrival = c.required("arrival").as_string();
    s.columns.gpus = c.required("gpus").as_string();
    s.columns.duration = c.required("duration").as_string();
    if (auto v = c.optional("id")) s.columns.id = v->as_string();
    if (auto v = c.optional("gpu_type")) s.columns.gpu_type = v->as_string();
    auto lo = c.optional("min_gpus");
    auto hi = c.optional("max_gpus");
    if (lo.has_value() != hi.has_value()) (lo ? *lo : *hi).fail("an elastic range needs both min_gpus and max_gpus");
    if (lo) {
      s.columns.min_gpus = lo->as_string();
      s.columns.max_gpus = hi->as_string();
    }
    c.finish();
  }
  jobs.finish();
  if (auto t = top.optional("throughput")) {
    JsonObject o = t->as_object();
    const JsonNode src = o.required("source");
    s.throughput_source = src.as_string();
    if (s.throughput_source == "trace") {
      if (auto e = o.optional("scaling_exponent")) {
        s.scaling_exponent = e->as_number();
        if (!(s.scaling_exponent > 0 && s.scaling_exponent <= 1)) e->fail_expected("an exponent in (0, 1]");
      }
      if (auto f = o.optional("spread_factor")) {
        s.spread_factor = f->as_number();
        if (!(s.spread_factor > 0 && s.spread_factor <= 1)) f->fail_expected("a factor in (0, 1]");
      }
    } else if (s.throughput_source == "arena" || s.throughput_source == "gavel") {
      s.table_path = resolve(path, o.required("table").as_string());
    } else if (s.throughput_source == "elasticflow") {
      s.table_path = resolve(path, o.required("root").as_string());
    } else if (s.throughput_source == "pollux" || s.throughput_source == "sia") {
      s.table_path = resolve(path, o.required("traces").as_string());
    } else if (s.throughput_source == "step") {
      if (auto v = o.optional("model")) {
        s.step_model = v->as_string();
        models::ModelCatalog::builtin().model(s.step_model, path, v->pointer());
      }
      if (auto v = o.optional("global_batch")) {
        if (v->as_int() < 1 || v->as_int() > 1 << 20) v->fail_expected("a global batch of 1 to 1048576 sequences");
        s.step_global_batch = static_cast<int>(v->as_int());
      }
      if (auto v = o.optional("seq_len")) {
        if (v->as_int() < 1 || v->as_int() > models::kMaxSeqLen) {
          v->fail_expected(fmt::format("a sequence length from 1 to {} tokens ({})", models::kMaxSeqLen, models::kMaxSeqLenReason));
        }
        s.step_seq_len = v->as_int();
      }
      if (auto v = o.optional("reference_gpu")) {
        s.reference_gpu = ascii_lower(v->as_string());
        models::HardwareCatalog::builtin().gpu(s.reference_gpu, path, v->pointer());
      }
      if (auto v = o.optional("schedule")) s.step_schedule = v->as_string();
    } else {
      src.fail(fmt::format("found {}, expected trace, arena, gavel, elasticflow, pollux, sia or step", sim::quote(s.throughput_source)));
    }
    o.finish();
  }
  if (auto r = top.optional("restart_overhead_s")) {
    s.restart_overhead_s = r->as_number();
    if (!(s.restart_overhead_s >= 0 && s.restart_overhead_s <= 86400)) {
      r->fail_expected("a restart overhead of 0 to 86400 s (a day; checkpoint and restore take minutes)");
    }
  }
  if (auto f = top.optional("fabric")) {
    JsonObject o = f->as_object();
    const JsonNode per = o.required("nodes_per_leaf");
    if (per.as_int() < 1 || per.as_int() > 4096) per.fail_expected("1 to 4096 nodes per leaf switch");
    s.fabric.nodes_per_leaf = static_cast<int>(per.as_int());
    const JsonNode nic = o.required("nic");
    s.fabric.nic_bytes_per_s = sim::parse_bandwidth(nic.as_string(), nic.location()).value();
    if (!(s.fabric.nic_bytes_per_s >= 1e6 / 8 && s.fabric.nic_bytes_per_s <= 1e15 / 8)) {
      nic.fail(fmt::format("found {}, expected a NIC of 1 Mb/s to 1 Pb/s", sim::quote(nic.as_string())));
    }
    if (auto v = o.optional("oversubscription")) {
      s.fabric.oversubscription = v->as_number();
      if (!(s.fabric.oversubscription >= 1 && s.fabric.oversubscription <= 64)) v->fail_expected("an oversubscription ratio of 1 to 64");
    }
    if (auto v = o.optional("comm_fraction")) {
      s.fabric.comm_fraction = v->as_number();
      if (!(s.fabric.comm_fraction >= 0 && s.fabric.comm_fraction < 1)) v->fail_expected("a fraction of the step in [0, 1)");
    }
    o.finish();
  }
  top.finish();
  return s;
}

bool is_cluster_scenario(const std::string& path) {
  const auto doc = load_json_file(path);
  return doc->root().json().is_object() && doc->root().json().contains("jobs");
}

namespace {
JobTrace read_trace_of_format(const ClusterScenario& sc, const std::string& path, bool skip_bad_rows) {
  if (sc.jobs_format == "philly") return read_philly_trace(path, skip_bad_rows);
  if (sc.jobs_format == "arena") return read_arena_trace(path, skip_bad_rows);
  if (sc.jobs_format == "tiresias") return read_tiresias_trace(path, skip_bad_rows);
  if (sc.jobs_format == "gavel") return read_gavel_trace(path, skip_bad_rows);
  if (sc.jobs_format == "itp") return read_itp_trace(path, skip_bad_rows);
  if (sc.jobs_format == "pai") return read_pai_trace(path, skip_bad_rows);
  if (sc.jobs_format == "sia" || sc.jobs_format == "pollux") {
    JobTrace t = read_sia_trace(path, skip_bad_rows);
    for (models::Job& j : t.jobs) j.iterations = sc.iterations;
    return t;
  }
  return read_generic_trace(path, sc.columns, skip_bad_rows);
}
}  // namespace

JobTrace read_job_trace(const ClusterScenario& sc, const std::string& path, bool skip_bad_rows) {
  JobTrace t = read_trace_of_format(sc, path, skip_bad_rows);
  for (models::Job& j : t.jobs) j.resizable = sc.elastic && !j.elastic();
  return t;
}

}  // namespace orrery::traces
