#include "traces/cluster_traces.hpp"

#include "sim/error.hpp"
#include "traces/csv.hpp"
#include "traces/json_input.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace orrery::traces {

namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);

// A delimited file kept row by row, ragged rows included, so that a row with a wrong field
// count is one bad row (skippable) rather than a broken file. A field may be double-quoted
// ("a,b"; "" inside quotes is a quote); none of the traces here spans lines inside quotes.
struct Rows {
  std::string source;
  std::vector<std::string> header;  // empty for headerless files
  std::size_t header_line = 0;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> lines;
};

std::vector<std::string> split_fields(std::string_view line, char sep) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"' && out.back().empty()) {
      quoted = true;
    } else if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

Rows read_rows(const std::string& path, char sep, bool header) {
  const std::string file = read_text_file(path);
  std::string_view text = file;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte-order mark
  Rows t;
  t.source = path;
  std::size_t line = 0;
  // The last line may lack its '\n' (the ITP files do: microsoft-itp-elasticflow/SOURCE.md).
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string_view l(text.data() + begin, end - begin);
    begin = end + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (header && t.header.empty()) {
      t.header = split_fields(l, sep);
      t.header_line = line;
    } else {
      t.rows.push_back(split_fields(l, sep));
      t.lines.push_back(line);
    }
  }
  if (header && t.header.empty()) throw sim::InputError(path, "line 1", "empty file, expected a header row");
  return t;
}

// The index of the first of `names` in the header; npos when optional and absent.
std::size_t column(const Rows& t, std::initializer_list<std::string_view> names, bool required = true) {
  for (std::string_view name : names) {
    for (std::size_t i = 0; i < t.header.size(); ++i) {
      if (t.header[i] == name) return i;
    }
  }
  if (!required) return npos;
  const std::string_view want = *names.begin();
  throw sim::InputError(t.source, fmt::format("line {}", t.header_line),
                        fmt::format("missing column {}{}; found {}", sim::quote(want), sim::did_you_mean(want, t.header),
                                    list_columns(t.header)));
}

// One row; every failure names "line N:column NAME" and what was found and expected.
struct Row {
  const Rows& t;
  std::size_t r;
  const std::vector<std::string>& names;  // column names by index

  const std::string& text(std::size_t i) const { return t.rows[r][i]; }
  std::string where(std::size_t i) const { return fmt::format("line {}:column {}", t.lines[r], names[i]); }
  [[noreturn]] void fail(std::size_t i, std::string_view expected) const {
    throw sim::InputError(t.source, where(i), fmt::format("found {}, expected {}", sim::quote(text(i)), expected));
  }
  void check_width() const {
    const std::size_t n = t.rows[r].size(), want = names.size();
    if (n == want) return;
    // Name the first missing column, or the first one too many.
    const std::string col = n < want ? names[n] : std::to_string(want + 1);
    throw sim::InputError(t.source, fmt::format("line {}:column {}", t.lines[r], col),
                          fmt::format("found {} fields, expected {}{}", n, want, t.header.empty() ? "" : " (as in the header)"));
  }
  const std::string& nonempty(std::size_t i, std::string_view expected) const {
    if (text(i).empty()) fail(i, expected);
    return text(i);
  }
  double number(std::size_t i, const TraceRange& range) const {
    const std::optional<double> v = range.read(text(i));
    if (!v) fail(i, range.expected());
    return *v;
  }
  int count(std::size_t i, const TraceRange& range) const { return static_cast<int>(number(i, range)); }
};

// Runs `parse` on every row: a job, or nothing for a row that is not a job; a bad row's
// InputError propagates, or is counted with `skip`.
template <class F>
JobTrace collect(const Rows& t, bool skip, F&& parse) {
  JobTrace out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    try {
      if (std::optional<models::Job> j = parse(r)) out.jobs.push_back(std::move(*j));
    } catch (const sim::InputError&) {
      if (!skip) throw;
      ++out.skipped;
    }
  }
  if (out.jobs.empty()) {
    throw sim::InputError(t.source, "", out.skipped > 0 ? fmt::format("found no jobs ({} bad rows skipped)", out.skipped) : "found no jobs");
  }
  return out;
}

// "ResNet-50 (batch size 64)" -> 64; 0 when the job type names no batch size ("A3C"); -1 when
// the size is not a whole number in kTraceBatch's range.
int batch_of(std::string_view job_type) {
  constexpr std::string_view mark = "(batch size ";
  const std::size_t at = job_type.find(mark);
  if (at == std::string_view::npos) return 0;
  const std::string_view rest = job_type.substr(at + mark.size());
  const std::optional<double> v = kTraceBatch.read(rest.substr(0, rest.find(')')));
  return v ? static_cast<int>(*v) : -1;
}

}  // namespace

JobTrace read_gavel_trace(const std::string& path, bool skip_bad_rows) {
  // Field names as gavel/SOURCE.md lists them (Gavel's scheduler/utils.py::parse_trace).
  static const std::vector<std::string> msr = {"job_type",     "command",      "num_steps_arg", "needs_data_dir",
                                               "total_steps",  "arrival_time", "scale_factor"};
  static const std::vector<std::string> physical = {"job_type",     "command",      "working_directory", "num_steps_arg",
                                                    "needs_data_dir", "total_steps", "scale_factor",     "priority_weight",
                                                    "SLO",          "arrival_time"};
  const Rows t = read_rows(path, '\t', false);
  // The file's form is that of its first row with 7 or 10 fields; rows of another count are bad.
  const std::vector<std::string>* names = &msr;
  for (const auto& row : t.rows) {
    if (row.size() == msr.size() || row.size() == physical.size()) {
      names = row.size() == msr.size() ? &msr : &physical;
      break;
    }
  }
  const auto index = [&](std::string_view n) { return static_cast<std::size_t>(std::find(names->begin(), names->end(), n) - names->begin()); };
  const std::size_t type = index("job_type"), steps = index("total_steps"), arrival = index("arrival_time"), scale = index("scale_factor");
  return collect(t, skip_bad_rows, [&](std::size_t r) -> std::optional<models::Job> {
    const Row row{t, r, *names};
    row.check_width();
    models::Job j;
    j.id = fmt::format("gavel-{}", t.lines[r]);
    j.model = row.nonempty(type, "a job type such as \"ResNet-50 (batch size 64)\"");
    j.batch = batch_of(j.model);
    if (j.batch < 0) row.fail(type, fmt::format("a job type whose batch size is {}", kTraceBatch.expected()));
    j.iterations = row.number(steps, kTraceIterations);
    j.arrival_s = row.number(arrival, kTraceSeconds);
    j.gpus = row.count(scale, kTraceGpus);
    return j;
  });
}

JobTrace read_itp_trace(const std::string& path, bool skip_bad_rows) {
  const Rows t = read_rows(path, ',', true);
  const std::size_t id = column(t, {"job_id"}), submit = column(t, {"submission_time", "submit_time"});
  const std::size_t duration = column(t, {"duration"}), gpus = column(t, {"num_gpu"});
  const std::size_t model = column(t, {"model_name"}, false);
  const std::size_t iterations = model == npos ? npos : column(t, {"num_iteration", "iteration"});
  const std::size_t batch = model == npos ? npos : column(t, {"batch_size"});
  return collect(t, skip_bad_rows, [&](std::size_t r) -> std::optional<models::Job> {
    const Row row{t, r, t.header};
    row.check_width();
    models::Job j;
    j.id = row.nonempty(id, "a job id");
    j.arrival_s = row.number(submit, kTraceSeconds);
    j.service_s = row.number(duration, kTraceSeconds);
    j.gpus = row.count(gpus, kTraceGpus);
    if (model != npos) {
      j.model = row.nonempty(model, "a model name");
      j.iterations = row.number(iterations, kTraceIterations);
      j.batch = row.count(batch, kTraceBatch);
    }
    return j;
  });
}

PaiTrace read_pai_pods(const std::string& path, bool skip_bad_rows) {
  const Rows t = read_rows(path, ',', true);
  const std::size_t name = column(t, {"name"}), gpus = column(t, {"num_gpu"}), milli = column(t, {"gpu_milli"});
  const std::size_t spec = column(t, {"gpu_spec"}), created = column(t, {"creation_time"});
  const std::size_t deleted = column(t, {"deletion_time"}), scheduled = column(t, {"scheduled_time"});
  PaiTrace out;
  out.trace = collect(t, skip_bad_rows, [&](std::size_t r) -> std::optional<models::Job> {
    const Row row{t, r, t.header};
    row.check_width();
    const int n = row.count(gpus, kTraceGpus.at_least(0));
    if (n == 0) {
      ++out.cpu_pods;
      return std::nullopt;
    }
    // gpu_milli: the share of one GPU a sharing pod uses (1000 = whole GPUs).
    const int share = row.count(milli, TraceRange{1, 1000, true, "milli-GPUs", "1000 is one whole GPU"});
    models::Job j;
    j.id = row.nonempty(name, "a pod name");
    j.gpus = n;  // a share of one GPU rounds up to that whole GPU
    j.arrival_s = row.number(created, kTraceSeconds);
    const bool ran = !row.text(scheduled).empty();
    const double start = ran ? row.number(scheduled, kTraceSeconds.at_least(j.arrival_s)) : j.arrival_s;
    j.service_s = row.number(deleted, kTraceSeconds.at_least(start)) - start;
    std::set<std::string> types;
    for (const std::string& s : split_fields(row.text(spec), '|')) {
      if (!s.empty()) types.insert(ascii_lower(s));
    }
    if (types.size() == 1) j.gpu_type = *types.begin();
    if (share < 1000) ++out.shared_pods;
    if (!ran) ++out.unscheduled_pods;
    return j;
  });
  return out;
}

JobTrace read_pai_trace(const std::string& path, bool skip_bad_rows) { return read_pai_pods(path, skip_bad_rows).trace; }

models::ClusterSpec read_pai_cluster(const std::string& path) {
  const Rows t = read_rows(path, ',', true);
  const std::size_t gpus = column(t, {"gpu"}), model = column(t, {"model"});
  std::map<std::pair<std::string, int>, int> count;  // (type, GPUs per node) -> nodes
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const Row row{t, r, t.header};
    row.check_width();
    const int n = row.count(gpus, TraceRange{0, 1024, true, "GPUs per node", "more than any server holds"});
    if (n > 0) ++count[{ascii_lower(row.nonempty(model, "the GPU model of a node with GPUs")), n}];
  }
  models::ClusterSpec c;
  for (const auto& [key, nodes] : count) c.pools.push_back({key.first, nodes, key.second});
  if (c.pools.empty()) throw sim::InputError(path, "", "found no nodes with GPUs");
  return c;
}

JobTrace read_sia_trace(const std::string& path, bool skip_bad_rows) {
  const Rows t = read_rows(path, ',', true);
  const std::size_t name = column(t, {"name"}), time = column(t, {"time"}), app = column(t, {"application"});
  const std::size_t replicas = column(t, {"num_replicas"}), batch = column(t, {"batch_size"});
  return collect(t, skip_bad_rows, [&](std::size_t r) -> std::optional<models::Job> {
    const Row row{t, r, t.header};
    row.check_width();
    models::Job j;
    j.id = row.nonempty(name, "a job name");
    j.arrival_s = row.number(time, kTraceSeconds);
    j.model = row.nonempty(app, "an application such as \"cifar10\"");
    j.gpus = row.count(replicas, kTraceGpus);
    j.batch = row.count(batch, kTraceBatch);
    return j;
  });
}

}  // namespace orrery::traces
