#include "calibration/kineto.hpp"

#include "models/training/step.hpp"
#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace orrery::calibration {

namespace {

using traces::JsonNode;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

// A number or a whole number from an event's fields, named in errors.
double number_at(const nlohmann::json& o, const char* key, std::string_view source, const std::string& where) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number()) {
    throw sim::InputError(std::string(source), where, fmt::format("expected a number {}{}", key, it == o.end() ? ", found none" : ", found another type"));
  }
  const double v = it->get<double>();
  // Timestamps are microseconds, often since the epoch (1.7e15 in 2026); a duration above a day
  // or a time past the year 5000 is a garbled field.
  const double max = std::string_view(key) == "dur" ? 8.64e10 : 1e17;
  if (!std::isfinite(v) || v < 0 || v > max) throw sim::InputError(std::string(source), where, fmt::format("{} is {}, expected 0 to {:g} (microseconds)", key, v, max));
  return v;
}

std::optional<std::int64_t> integer_arg(const nlohmann::json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end()) return std::nullopt;
  if (it->is_number_integer() || it->is_number_unsigned()) return it->get<std::int64_t>();
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (!std::isfinite(v) || std::fabs(v) >= 9e18) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<models::DType> dtype_of(std::string_view t) {
  if (t == "c10::BFloat16" || t == "BFloat16") return models::DType::bf16;
  if (t == "c10::Half" || t == "Half") return models::DType::fp16;
  if (t == "float" || t == "Float") return models::DType::fp32;
  if (t.find("Float8") != std::string_view::npos) return models::DType::fp8;
  return std::nullopt;
}

double dtype_bytes(std::string_view t) {
  if (t == "c10::BFloat16" || t == "BFloat16" || t == "c10::Half" || t == "Half") return 2;
  if (t == "float" || t == "Float" || t == "int" || t == "Int") return 4;
  if (t == "double" || t == "Double" || t == "long int" || t == "Long") return 8;
  if (t.find("Float8") != std::string_view::npos || t == "unsigned char" || t == "bool" || t == "Bool" || t == "Byte") return 1;
  return 0;
}

std::optional<models::CollectiveOp> collective_of_name(const std::string& n) {
  if (has(n, {"allreduce", "all_reduce"})) return models::CollectiveOp::all_reduce;
  if (has(n, {"reducescatter", "reduce_scatter"})) return models::CollectiveOp::reduce_scatter;
  if (has(n, {"allgather", "all_gather"})) return models::CollectiveOp::all_gather;
  if (has(n, {"alltoall", "all_to_all"})) return models::CollectiveOp::all_to_all;
  if (has(n, {"broadcast"})) return models::CollectiveOp::broadcast;
  if (has(n, {"sendrecv", "send", "recv"})) return models::CollectiveOp::send_recv;
  if (has(n, {"reduce"})) return models::CollectiveOp::reduce;
  return std::nullopt;
}

// What an operator ("cpu_op" event) recorded of its inputs, and of its collective.
struct OpInfo {
  std::string name;
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::string> types, concrete;
  nlohmann::json args;
};

std::string iso_date_of(double base_ns) {
  const auto secs = static_cast<std::time_t>(base_ns / 1e9);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Elements of a tensor of dims `d` (as a double: recorded dims may multiply past int64).
double numel(const std::vector<std::int64_t>& d) {
  double n = 1;
  for (const std::int64_t v : d) n *= static_cast<double>(std::max<std::int64_t>(v, 0));
  return d.empty() ? 0 : n;
}

// The product of the leading dims of `d` (all but the last), or 0 when it is not a sane size.
std::int64_t rows_of(const std::vector<std::int64_t>& d) {
  double m = 1;
  for (std::size_t i = 0; i + 1 < d.size(); ++i) m *= static_cast<double>(d[i]);
  return m > 0 && m < 1e12 ? static_cast<std::int64_t>(m) : 0;
}

}  // namespace

double KinetoTrace::span_us() const {
  double lo = 1e300, hi = 0;
  for (const KinetoKernel& k : kernels) lo = std::min(lo, k.ts_us), hi = std::max(hi, k.ts_us + k.dur_us);
  return kernels.empty() ? 0 : hi - lo;
}

KinetoTrace parse_kineto_trace(std::string_view text, const std::string& source) {
  const std::unique_ptr<traces::JsonDocument> doc = traces::parse_json(text, source);
  const nlohmann::json& root = doc->root().json();
  KinetoTrace t;
  t.source = source;
  const nlohmann::json* events = nullptr;
  std::string events_at = "/traceEvents";
  if (root.is_array()) {
    events = &root, events_at = "";
  } else if (root.is_object() && root.contains("traceEvents") && root["traceEvents"].is_array()) {
    events = &root["traceEvents"];
  } else {
    doc->root().fail_expected("a Chrome trace: an object with a traceEvents array (torch.profiler's export_chrome_trace)");
  }
  if (root.is_object()) {
    if (const auto it = root.find("deviceProperties"); it != root.end() && it->is_array() && !it->empty() && (*it)[0].is_object()) {
      const nlohmann::json& d = (*it)[0];
      if (d.contains("name") && d["name"].is_string()) t.device = d["name"].get<std::string>();
      for (const char* key : {"computeMajor", "computeMinor", "numSms", "totalGlobalMem"}) {
        if (d.contains(key) && d[key].is_number()) t.identity.emplace_back(key, d[key].dump());
      }
    }
    for (const auto& [key, v] : root.items()) {
      if ((v.is_string() || v.is_number()) && key != "baseTimeNanoseconds" && key != "traceName") {
        t.software.emplace_back(key, v.is_string() ? v.get<std::string>() : v.dump());
      }
    }
    if (const auto it = root.find("baseTimeNanoseconds"); it != root.end() && it->is_number()) t.date = iso_date_of(it->get<double>());
  }
  if (t.device.empty()) t.device = "unknown GPU (the trace has no deviceProperties)";
  std::unordered_map<std::int64_t, OpInfo> ops;         // External id -> operator
  std::unordered_map<std::int64_t, double> launches;    // correlation -> launch ts
  std::vector<std::pair<std::int64_t, std::int64_t>> kernel_links;  // (External id, correlation) per kernel (-1: none)
  for (std::size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json& e = (*events)[i];
    const std::string where = fmt::format("{}/{}", events_at, i);
    if (!e.is_object()) throw sim::InputError(source, where, "expected an event object");
    const auto cat_it = e.find("cat");
    const auto ph_it = e.find("ph");
    if (cat_it == e.end() || !cat_it->is_string() || ph_it == e.end() || !ph_it->is_string() || ph_it->get<std::string>() != "X") continue;
    const std::string cat = cat_it->get<std::string>();
    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& args = e.contains("args") && e["args"].is_object() ? e["args"] : empty;
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    if (cat == "cpu_op") {
      const std::optional<std::int64_t> ext = integer_arg(args, "External id");
      if (!ext) continue;
      OpInfo op;
      op.name = name;
      op.args = args;
      if (const auto d = args.find("Input Dims"); d != args.end() && d->is_array()) {
        for (const nlohmann::json& dims : *d) {
          std::vector<std::int64_t> v;
          if (dims.is_array()) {
            for (const nlohmann::json& x : dims) {
              if (x.is_number_integer() || x.is_number_unsigned()) {
                v.push_back(x.get<std::int64_t>());
              } else if (x.is_number_float() && std::isfinite(x.get<double>()) && std::fabs(x.get<double>()) < 9e15 &&
                         x.get<double>() == std::floor(x.get<double>())) {
                v.push_back(static_cast<std::int64_t>(x.get<double>()));
              }
            }
          }
          op.dims.push_back(std::move(v));
        }
      }
      for (const char* key : {"Input type", "Concrete Inputs"}) {
        if (const auto d = args.find(key); d != args.end() && d->is_array()) {
          for (const nlohmann::json& x : *d) (std::string_view(key) == "Input type" ? op.types : op.concrete).push_back(x.is_string() ? x.get<std::string>() : "");
        }
      }
      ops[*ext] = std::move(op);
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (const std::optional<std::int64_t> c = integer_arg(args, "correlation")) {
        launches[*c] = number_at(e, "ts", source, where) + (e.contains("dur") ? number_at(e, "dur", source, where) : 0.0);
      }
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      KinetoKernel k;
      k.name = name;
      k.category = cat;
      k.where = where;
      k.ts_us = number_at(e, "ts", source, where);
      k.dur_us = number_at(e, "dur", source, where);
      const std::optional<std::int64_t> stream = integer_arg(args, "stream");
      if (!stream) throw sim::InputError(source, where, fmt::format("GPU event {} has no args.stream, expected the CUDA stream it ran on", sim::quote(name)));
      k.stream = *stream;
      k.device = static_cast<int>(integer_arg(args, "device").value_or(0));
      if (const std::optional<std::int64_t> b = integer_arg(args, "bytes")) k.bytes = static_cast<double>(*b);
      // NCCL kernels: the collective from the kernel's own args (recent PyTorch) or, below,
      // from its operator (record_param_comms).
      const std::string lname = lower(name);
      if (lname.find("nccl") != std::string::npos) {
        k.collective = collective_of_name(lower(args.value("Collective name", std::string()) + " " + lname));
      }
      kernel_links.emplace_back(integer_arg(args, "External id").value_or(-1), integer_arg(args, "correlation").value_or(-1));
      // Collective sizes on the kernel itself.
      if (k.collective) {
        const auto elems = integer_arg(args, k.collective == models::CollectiveOp::all_gather ? "Out msg nelems" : "In msg nelems");
        const double size = args.contains("dtype") && args["dtype"].is_string() ? dtype_bytes(args["dtype"].get<std::string>()) : 0;
        if (elems && size > 0) k.comm_bytes = static_cast<double>(*elems) * size;
        k.group_size = static_cast<int>(std::clamp<std::int64_t>(integer_arg(args, "Group size").value_or(0), 0, 1 << 21));
      }
      t.kernels.push_back(std::move(k));
    }
  }
  if (t.kernels.empty()) {
    throw sim::InputError(source, events_at, "no GPU kernels (events of category \"kernel\"): record the trace with ProfilerActivity.CUDA");
  }
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    KinetoKernel& k = t.kernels[i];
    const auto [ext, corr] = kernel_links[i];
    // Sizes past a petabyte or groups past a million ranks are garbled: the size is unknown.
    const auto sane = [](KinetoKernel& x) {
      if (x.comm_bytes < 0 || x.comm_bytes > 1e15) x.comm_bytes = 0;
      if (x.group_size < 0 || x.group_size > (1 << 20)) x.group_size = 0;
    };
    sane(k);
    if (const auto it = launches.find(corr); corr >= 0 && it != launches.end()) k.launch_us = it->second;
    const auto it = ops.find(ext);
    if (ext < 0 || it == ops.end()) continue;
    const OpInfo& op = it->second;
    k.op = op.name;
    k.input_dims = op.dims;
    k.input_types = op.types;
    k.concrete_inputs = op.concrete;
    if (k.collective && (k.comm_bytes == 0 || k.group_size == 0)) {
      const auto elems = integer_arg(op.args, k.collective == models::CollectiveOp::all_gather ? "Out msg nelems" : "In msg nelems");
      const double size = op.args.contains("dtype") && op.args["dtype"].is_string() ? dtype_bytes(op.args["dtype"].get<std::string>()) : 0;
      if (k.comm_bytes == 0 && elems && size > 0) k.comm_bytes = static_cast<double>(*elems) * size;
      if (k.group_size == 0) k.group_size = static_cast<int>(std::clamp<std::int64_t>(integer_arg(op.args, "Group size").value_or(0), 0, 1 << 21));
      sane(k);
    }
  }
  std::stable_sort(t.kernels.begin(), t.kernels.end(), [](const KinetoKernel& a, const KinetoKernel& b) {
    return std::tie(a.device, a.stream, a.ts_us) < std::tie(b.device, b.stream, b.ts_us);
  });
  return t;
}

KinetoTrace read_kineto_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw sim::InputError(path, "", "cannot open the trace");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_kineto_trace(ss.str(), path);
}

std::optional<models::Kernel> kineto_kernel(const KinetoKernel& k, std::string& why) {
  const std::string n = lower(k.name);
  const auto dims = [&](std::size_t i) -> const std::vector<std::int64_t>& {
    static const std::vector<std::int64_t> none;
    return i < k.input_dims.size() ? k.input_dims[i] : none;
  };
  const auto type = [&](std::size_t i) { return i < k.input_types.size() ? k.input_types[i] : std::string(); };
  if (k.collective || n.find("nccl") != std::string::npos) {
    why = "a collective (NCCL): the network model, not a kernel curve";
    return std::nullopt;
  }
  if (k.category == "gpu_memset") {
    why = "a memset";
    return std::nullopt;
  }
  if (k.category == "gpu_memcpy") {
    if (k.bytes <= 0 || k.bytes > 1e15) {
      why = "a memcpy without its bytes";
      return std::nullopt;
    }
    return models::Kernel::memory_bound(models::KernelKind::copy, sim::Bytes(2 * k.bytes), models::DType::bf16);
  }
  const bool attention = has(n, {"flash", "fmha", "attention", "attn"});
  if (!attention && has(n, {"gemm", "nvjet", "cutlass", "xmma", "cublas", "matmul"})) {
    if (k.op.empty() || k.input_dims.empty()) {
      why = "a GEMM whose operator's shapes were not recorded (profile with record_shapes=True)";
      return std::nullopt;
    }
    std::size_t a = 0, b = 1;
    if (k.op == "aten::addmm" || k.op == "aten::baddbmm") a = 1, b = 2;
    const std::vector<std::int64_t>& A = dims(a);
    const std::vector<std::int64_t>& B = dims(b);
    const std::optional<models::DType> t = dtype_of(type(a));
    std::int64_t m = 0, nn = 0, kk = 0, batch = 1;
    if ((k.op == "aten::mm" || k.op == "aten::addmm" || k.op == "aten::_scaled_mm" || k.op == "aten::matmul") && A.size() == 2 && B.size() == 2) {
      m = A[0], kk = A[1], nn = B[1];
    } else if ((k.op == "aten::bmm" || k.op == "aten::baddbmm") && A.size() == 3 && B.size() == 3) {
      batch = A[0], m = A[1], kk = A[2], nn = B[2];
    } else if (k.op == "aten::linear" && A.size() >= 2 && B.size() == 2) {
      m = rows_of(A), kk = A.back(), nn = B[0];
    } else if (k.op == "aten::matmul" && A.size() >= 3 && B.size() == 2) {
      m = rows_of(A), kk = A.back(), nn = B[1];
    } else {
      why = fmt::format("a GEMM under {}, whose inputs Orrery does not read as a GEMM's shape", k.op);
      return std::nullopt;
    }
    if (!t) {
      why = fmt::format("a GEMM of input type {}", type(a).empty() ? "(not recorded)" : type(a));
      return std::nullopt;
    }
    constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
    if (m <= 0 || nn <= 0 || kk <= 0 || batch <= 0 || m > kMaxDim || nn > kMaxDim || kk > kMaxDim || batch > kMaxDim) {
      why = "a GEMM with an empty or impossible dimension";
      return std::nullopt;
    }
    return models::Kernel::gemm(m, nn, kk, *t, batch);
  }
  if (attention) {
    const bool bwd = has(n, {"bwd", "backward"});
    const bool bshd = k.op.rfind("aten::_flash_attention", 0) == 0 || k.op.rfind("aten::_efficient_attention", 0) == 0;
    const bool bhsd = k.op.rfind("aten::_scaled_dot_product_", 0) == 0;
    if (!bshd && !bhsd) {
      why = k.op.empty() ? "an attention kernel whose operator was not recorded" : fmt::format("an attention kernel under {}", k.op);
      return std::nullopt;
    }
    // Backward operators take the output's gradient first, then q, k, v.
    const std::size_t q = bwd ? 1 : 0;
    const std::vector<std::int64_t>& Q = dims(q);
    const std::vector<std::int64_t>& K = dims(q + 1);
    if (Q.size() != 4 || K.size() != 4) {
      why = "an attention kernel whose q and k shapes were not recorded";
      return std::nullopt;
    }
    const std::int64_t batch = Q[0], seq = bshd ? Q[1] : Q[2], heads = bshd ? Q[2] : Q[1], kv = bshd ? K[2] : K[1], d = Q[3];
    std::optional<bool> causal;
    for (const std::string& c : k.concrete_inputs) {
      if (c == "True" || c == "False") {
        causal = c == "True";
        break;
      }
    }
    if (!causal) {
      why = "an attention kernel whose causal flag was not recorded (its operator's Concrete Inputs)";
      return std::nullopt;
    }
    const std::optional<models::DType> t = dtype_of(type(q));
    constexpr std::int64_t kMax = std::int64_t{1} << 24;
    if (!t || batch <= 0 || seq <= 0 || heads <= 0 || kv <= 0 || d <= 0 || batch > kMax || seq > kMax || heads > kMax || kv > kMax || d > kMax) {
      why = "an attention kernel of an unread shape or type";
      return std::nullopt;
    }
    return models::Kernel::attention(bwd ? models::Pass::backward : models::Pass::forward, std::vector<std::int64_t>(static_cast<std::size_t>(batch), seq),
                                     heads, kv, d, *causal, *t);
  }
  std::optional<models::KernelKind> kind;
  if (has(n, {"layer_norm", "layernorm", "rms_norm", "rmsnorm"})) kind = models::KernelKind::norm;
  else if (has(n, {"cross_entropy", "nll_loss", "log_softmax"})) kind = models::KernelKind::cross_entropy;
  else if (has(n, {"softmax"})) kind = models::KernelKind::softmax;
  else if (has(n, {"embedding"})) kind = models::KernelKind::embedding;
  else if (has(n, {"elementwise", "vectorized", "unrolled", "reduce_kernel"})) kind = models::KernelKind::elementwise;
  if (!kind) {
    why = "no Orrery kernel kind for this name";
    return std::nullopt;
  }
  // Bytes: every tensor input read, and an output the size of the largest written.
  double bytes = 0, largest = 0;
  for (std::size_t i = 0; i < k.input_dims.size(); ++i) {
    const double b = numel(k.input_dims[i]) * dtype_bytes(type(i));
    bytes += b;
    largest = std::max(largest, b);
  }
  if (bytes <= 0 || bytes > 1e15) {
    why = bytes > 0 ? "a memory-bound kernel of more than a petabyte (garbled shapes)" : "a memory-bound kernel whose operator's shapes were not recorded";
    return std::nullopt;
  }
  return models::Kernel::memory_bound(*kind, sim::Bytes(bytes + largest), dtype_of(type(0)).value_or(models::DType::bf16));
}

KinetoProfile kineto_profile(const KinetoTrace& trace) {
  KinetoProfile out;
  out.profile.harness = "kineto";
  out.profile.device = trace.device;
  out.profile.identity = trace.identity;
  out.profile.software = trace.software;
  out.profile.date = trace.date.empty() ? "unknown" : trace.date;
  std::map<std::string, std::pair<models::Kernel, std::vector<double>>> groups;
  for (const KinetoKernel& k : trace.kernels) {
    out.total_us += k.dur_us;
    std::string why;
    const std::optional<models::Kernel> kernel = kineto_kernel(k, why);
    if (!kernel) {
      ++out.skipped[why][k.name];
      continue;
    }
    auto& g = groups[models::describe(*kernel)];
    g.first = *kernel;
    g.second.push_back(k.dur_us * 1e-6);
    ++out.matched[std::string(models::to_string(kernel->kind))];
    out.matched_us += k.dur_us;
  }
  for (auto& [key, g] : groups) out.profile.points.push_back(summarize(g.first, g.second));
  return out;
}

KinetoReplay replay_kineto(const KinetoTrace& trace, const KinetoReplayOptions& o) {
  KinetoReplay out;
  sim::TaskGraph& g = out.graph;
  std::optional<models::FabricCosts> fabric;
  if (!o.topology.empty()) fabric.emplace(o.topology, o.comm);
  double t0 = 1e300;
  for (const KinetoKernel& k : trace.kernels) t0 = std::min(t0, k.ts_us);
  const auto us = [](double v) { return sim::ceil_duration_ns(std::max(0.0, v) * 1e3); };
  std::vector<sim::TaskId> task(trace.kernels.size());
  // Per device, every kernel's observed end with its task, for the waits across streams.
  std::map<int, std::vector<std::pair<double, std::size_t>>> ends;
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) ends[trace.kernels[i].device].emplace_back(trace.kernels[i].ts_us + trace.kernels[i].dur_us, i);
  for (auto& [d, v] : ends) std::sort(v.begin(), v.end());
  constexpr double kSlackUs = 1.0;  // a kernel this much later than its stream and launch allow waited on something
  // A kernel that starts within this of its launch call's end, after its stream went idle, was
  // held by the host: it starts at its observed time (the host's pace is not the GPU's to change).
  constexpr double kLaunchWindowUs = 50.0;
  std::vector<std::pair<std::size_t, std::size_t>> waits;
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) {
    const KinetoKernel& k = trace.kernels[i];
    const sim::StreamId s = g.add_stream(fmt::format("gpu{}", k.device), fmt::format("stream {}", k.stream));
    double dur = k.dur_us;
    if (k.collective) {
      ++out.collectives;
      const int ranks = o.ranks > 0 ? o.ranks : k.group_size;
      if (fabric && k.comm_bytes > 0 && ranks > 1) dur = 1e6 * fabric->collective(*k.collective, k.comm_bytes, ranks, 1);
    }
    task[i] = g.add_compute(k.name, s, us(dur));
    ++out.kernels;
    const bool same_stream = i > 0 && trace.kernels[i - 1].device == k.device && trace.kernels[i - 1].stream == k.stream;
    double ready = t0;
    if (same_stream) {
      g.add_dependency(task[i - 1], task[i]);
      ready = trace.kernels[i - 1].ts_us + trace.kernels[i - 1].dur_us;
    }
    if (k.launch_us) {
      const bool host_bound = k.ts_us > ready + kSlackUs && k.ts_us <= *k.launch_us + kLaunchWindowUs;
      const double at = host_bound ? k.ts_us : *k.launch_us;
      if (at > t0) {
        const sim::TaskId launch = g.add_delay(fmt::format("launch {}", k.name), us(at - t0));
        g.add_dependency(launch, task[i]);
      }
      ready = std::max(ready, at);
    }
    if (k.ts_us > ready + kSlackUs) {
      // It waited on another stream: the kernel of this device that ended last before it
      // started (and started before it: every edge then goes from an earlier start to a later
      // one, or along a stream, so the graph has no cycle).
      const auto& v = ends[k.device];
      auto it = std::upper_bound(v.begin(), v.end(), std::pair{k.ts_us, trace.kernels.size()});
      while (it != v.begin()) {
        --it;
        const KinetoKernel& other = trace.kernels[it->second];
        if (other.stream != k.stream && other.ts_us < k.ts_us) {
          ++out.waits;
          waits.emplace_back(it->second, i);
          break;
        }
      }
    }
  }
  for (const auto& [before, after] : waits) g.add_dependency(task[before], task[after]);
  sim::Engine engine;
  sim::Executor exec(engine, g);
  exec.start();
  engine.run();
  ORRERY_CHECK(exec.finished(), "{} of {} tasks ran", exec.completed(), g.task_count());
  out.spans = exec.spans();
  // From the first kernel's start (the launch delays count from there too).
  sim::Time first = sim::Time::max();
  for (std::size_t i = 0; i < task.size(); ++i) first = std::min(first, out.spans[sim::index_of(task[i])].start);
  out.span = exec.makespan() - (first - sim::Time::zero());
  return out;
}

}  // namespace orrery::calibration
