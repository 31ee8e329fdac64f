#include "models/hardware/kernel.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

namespace orrery::models {

namespace {
constexpr std::array<std::string_view, kKernelKindCount> kKindNames = {
    "gemm", "grouped_gemm", "attention_fwd", "attention_bwd", "elementwise", "norm",
    "softmax", "rope", "embedding", "cross_entropy", "optimizer", "copy", "quantize"};

// Query-key pairs of one document: l^2, or l(l+1)/2 with a causal mask, or with a sliding
// window of w keys, w(w+1)/2 for the first w queries and w for each after them.
double pairs(std::int64_t l, bool causal, std::int64_t window) {
  const auto x = static_cast<double>(l);
  if (causal && window > 0 && window < l) {
    const auto w = static_cast<double>(window);
    return w * (w + 1) / 2 + (x - w) * w;
  }
  return causal ? x * (x + 1) / 2 : x * x;
}

[[noreturn]] void bad(sim::InputLocation at, const std::string& message) {
  throw sim::InputError(std::string(at.source), std::string(at.where), message);
}

std::int64_t parse_count(std::string_view key, std::string_view text, sim::InputLocation at) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0 || v != std::floor(v) ||
      v > 9e15) {
    bad(at, fmt::format("{}: found {}, expected a non-negative whole number", key, sim::quote(text)));
  }
  return static_cast<std::int64_t>(v);
}

std::vector<std::int64_t> parse_list(std::string_view key, std::string_view text, sim::InputLocation at) {
  std::vector<std::int64_t> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t slash = std::min(text.find('/', begin), text.size());
    out.push_back(parse_count(key, text.substr(begin, slash - begin), at));
    begin = slash + 1;
  }
  return out;
}
}  // namespace

std::string_view to_string(KernelKind k) { return kKindNames[static_cast<std::size_t>(k)]; }

std::optional<KernelKind> parse_kernel_kind(std::string_view text) {
  for (std::size_t i = 0; i < kKernelKindCount; ++i) {
    if (kKindNames[i] == text) return static_cast<KernelKind>(i);
  }
  return std::nullopt;
}

std::vector<std::string> kernel_kind_names() { return {kKindNames.begin(), kKindNames.end()}; }

bool is_memory_bound(KernelKind k) {
  return k != KernelKind::gemm && k != KernelKind::grouped_gemm && k != KernelKind::attention_fwd &&
         k != KernelKind::attention_bwd;
}

Kernel Kernel::gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, std::int64_t batch) {
  Kernel x;
  x.kind = KernelKind::gemm;
  x.dtype = dtype;
  x.m = m;
  x.n = n;
  x.k = k;
  x.batch = batch;
  return x;
}

Kernel Kernel::grouped_gemm(std::vector<std::int64_t> group_m, std::int64_t n, std::int64_t k, DType dtype) {
  Kernel x;
  x.kind = KernelKind::grouped_gemm;
  x.dtype = dtype;
  x.group_m = std::move(group_m);
  x.m = std::accumulate(x.group_m.begin(), x.group_m.end(), std::int64_t{0});
  x.n = n;
  x.k = k;
  return x;
}

Kernel Kernel::attention(Pass pass, std::vector<std::int64_t> doc_lens, std::int64_t heads, std::int64_t kv_heads,
                         std::int64_t head_dim, bool causal, DType dtype, std::int64_t head_dim_v, std::int64_t window) {
  Kernel x;
  x.kind = pass == Pass::forward ? KernelKind::attention_fwd : KernelKind::attention_bwd;
  x.dtype = dtype;
  x.doc_lens = std::move(doc_lens);
  x.heads = heads;
  x.kv_heads = kv_heads;
  x.head_dim = head_dim;
  x.head_dim_v = head_dim_v == 0 ? head_dim : head_dim_v;
  x.causal = causal;
  x.window = causal ? window : 0;
  return x;
}

Kernel Kernel::memory_bound(KernelKind kind, sim::Bytes bytes, DType dtype) {
  Kernel x;
  x.kind = kind;
  x.dtype = dtype;
  x.bytes = bytes.value();
  return x;
}

Kernel Kernel::optimizer(std::int64_t params) {
  Kernel x;
  x.kind = KernelKind::optimizer;
  x.dtype = DType::fp32;
  x.params = params;
  x.bytes = kAdamBytesPerParam * static_cast<double>(params);
  return x;
}

std::int64_t launches(const Kernel& x) {
  if (!x.launch_per_product) return 1;
  return x.kind == KernelKind::grouped_gemm ? static_cast<std::int64_t>(x.group_m.size()) : x.batch;
}

std::int64_t tokens(const Kernel& x) { return std::accumulate(x.doc_lens.begin(), x.doc_lens.end(), std::int64_t{0}); }

double sum_squares(const Kernel& x) {
  double s = 0;
  for (const std::int64_t l : x.doc_lens) s += static_cast<double>(l) * static_cast<double>(l);
  return s;
}

sim::Flops flops(const Kernel& x) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  switch (x.kind) {
    case KernelKind::gemm: return sim::Flops(2 * d(x.m) * d(x.n) * d(x.k) * d(x.batch));
    case KernelKind::grouped_gemm: {
      double rows = 0;
      for (const std::int64_t gm : x.group_m) rows += d(gm);
      return sim::Flops(2 * rows * d(x.n) * d(x.k));
    }
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: {
      double p = 0;
      for (const std::int64_t l : x.doc_lens) p += pairs(l, x.causal, x.window);
      if (!x.causal) p *= x.kept;
      const double per_pair = x.kind == KernelKind::attention_fwd ? 2 * (d(x.head_dim) + d(x.head_dim_v))
                                                                  : 2 * (3 * d(x.head_dim) + 2 * d(x.head_dim_v));
      return sim::Flops(p * per_pair * d(x.heads));
    }
    default: return sim::Flops(0);
  }
}

sim::Bytes min_bytes(const Kernel& x) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double e = element_bytes(x.dtype);
  switch (x.kind) {
    case KernelKind::gemm: return sim::Bytes((d(x.m) * d(x.k) + d(x.k) * d(x.n) + d(x.m) * d(x.n)) * e * d(x.batch));
    case KernelKind::grouped_gemm: {
      const double rows = d(x.m);
      return sim::Bytes((rows * d(x.k) + rows * d(x.n) + d(static_cast<std::int64_t>(x.group_m.size())) * d(x.k) * d(x.n)) * e);
    }
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: {
      const double t = d(tokens(x));
      // Forward reads Q, K, V and writes O; backward reads Q, K, V, O, dO and writes dQ, dK, dV.
      const double q = d(x.heads) * d(x.head_dim), o = d(x.heads) * d(x.head_dim_v);
      const double kv = d(x.kv_heads) * (d(x.head_dim) + d(x.head_dim_v));
      const double per_token = x.kind == KernelKind::attention_fwd ? q + kv + o : 2 * (q + kv + o) + o;
      return sim::Bytes(t * per_token * e);
    }
    default: return sim::Bytes(x.bytes);
  }
}

std::string describe(const Kernel& x) {
  switch (x.kind) {
    case KernelKind::gemm:
      return x.batch == 1 ? fmt::format("gemm m={} n={} k={} {}", x.m, x.n, x.k, to_string(x.dtype))
                          : fmt::format("gemm m={} n={} k={} batch={} {}", x.m, x.n, x.k, x.batch, to_string(x.dtype));
    case KernelKind::grouped_gemm:
      return fmt::format("grouped_gemm groups={} m={} n={} k={} {}", x.group_m.size(), x.m, x.n, x.k, to_string(x.dtype));
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
      return fmt::format("{} docs={} tokens={} heads={} kv_heads={} head_dim={}{}{}{}{} {}", to_string(x.kind),
                         x.doc_lens.size(), tokens(x), x.heads, x.kv_heads, x.head_dim,
                         x.head_dim_v != x.head_dim ? fmt::format(" head_dim_v={}", x.head_dim_v) : "",
                         x.causal ? " causal" : "", x.window > 0 ? fmt::format(" window={}", x.window) : "",
                         x.kept < 1 && !x.causal ? fmt::format(" kept={:g}", x.kept) : "", to_string(x.dtype));
    case KernelKind::optimizer: return fmt::format("optimizer params={}", x.params);
    default: return fmt::format("{} bytes={} {}", to_string(x.kind), sim::to_string(sim::Bytes(x.bytes)), to_string(x.dtype));
  }
}

void validate_kernel(const Kernel& x, sim::InputLocation at) {
  const auto positive = [&](std::string_view name, std::int64_t v) {
    if (v <= 0) bad(at, fmt::format("{}: found {}, expected a positive size for {}", name, v, to_string(x.kind)));
  };
  switch (x.kind) {
    case KernelKind::gemm:
      positive("m", x.m), positive("n", x.n), positive("k", x.k), positive("batch", x.batch);
      break;
    case KernelKind::grouped_gemm:
      if (x.group_m.empty()) bad(at, "grouped_gemm: found no groups, expected m=rows/rows/...");
      for (const std::int64_t gm : x.group_m) {
        if (gm < 0) bad(at, fmt::format("m: found a group of {} rows, expected zero or more", gm));
      }
      positive("n", x.n), positive("k", x.k);
      break;
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
      if (x.doc_lens.empty()) bad(at, fmt::format("{}: found no documents, expected seqlen= or docs=", to_string(x.kind)));
      for (const std::int64_t l : x.doc_lens) positive("document length", l);
      positive("heads", x.heads), positive("kv_heads", x.kv_heads), positive("head_dim", x.head_dim);
      positive("head_dim_v", x.head_dim_v);
      if (x.heads % x.kv_heads != 0) {
        bad(at, fmt::format("kv_heads: found {}, expected a divisor of heads={}", x.kv_heads, x.heads));
      }
      break;
    case KernelKind::optimizer: positive("params", x.params); break;
    default:
      if (!(x.bytes > 0) || !std::isfinite(x.bytes)) {
        bad(at, fmt::format("bytes: found {}, expected a positive size for {}", x.bytes, to_string(x.kind)));
      }
  }
}

Kernel parse_kernel(std::string_view spec, sim::InputLocation at) {
  const std::size_t colon = spec.find(':');
  const std::string_view kind_text = spec.substr(0, colon);
  const std::optional<KernelKind> kind = parse_kernel_kind(kind_text);
  if (!kind) {
    bad(at, fmt::format("unknown kernel kind {}{}; valid: {}", sim::quote(kind_text),
                        sim::did_you_mean(kind_text, kernel_kind_names()), fmt::join(kernel_kind_names(), ", ")));
  }
  Kernel x;
  x.kind = *kind;
  std::int64_t seqlen = 0, batch = 1;
  bool have_docs = false;
  std::vector<std::string> allowed;
  switch (*kind) {
    case KernelKind::gemm: allowed = {"m", "n", "k", "batch", "dtype"}; break;
    case KernelKind::grouped_gemm: allowed = {"m", "n", "k", "dtype"}; break;
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
      allowed = {"seqlen", "batch", "docs", "heads", "kv_heads", "head_dim", "head_dim_v", "causal", "dtype"};
      break;
    case KernelKind::optimizer: allowed = {"params"}; break;
    default: allowed = {"bytes", "dtype"};
  }
  std::string_view rest = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view item = rest.substr(0, comma);
    rest = comma < rest.size() ? rest.substr(comma + 1) : std::string_view{};
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) bad(at, fmt::format("found {}, expected key=value", sim::quote(item)));
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      bad(at, fmt::format("unknown key {} for {}{}; valid: {}", sim::quote(key), to_string(*kind),
                          sim::did_you_mean(key, allowed), fmt::join(allowed, ", ")));
    }
    if (key == "dtype") {
      const std::optional<DType> t = parse_dtype(value);
      if (!t) {
        bad(at, fmt::format("dtype: found {}{}, expected one of {}", sim::quote(value), sim::did_you_mean(value, dtype_names()),
                            fmt::join(dtype_names(), ", ")));
      }
      x.dtype = *t;
    } else if (key == "m" && *kind == KernelKind::grouped_gemm) {
      x.group_m = parse_list(key, value, at);
    } else if (key == "m") {
      x.m = parse_count(key, value, at);
    } else if (key == "n") {
      x.n = parse_count(key, value, at);
    } else if (key == "k") {
      x.k = parse_count(key, value, at);
    } else if (key == "batch") {
      batch = parse_count(key, value, at);
      x.batch = batch;
    } else if (key == "seqlen") {
      seqlen = parse_count(key, value, at);
    } else if (key == "docs") {
      x.doc_lens = parse_list(key, value, at);
      have_docs = true;
    } else if (key == "heads") {
      x.heads = parse_count(key, value, at);
    } else if (key == "kv_heads") {
      x.kv_heads = parse_count(key, value, at);
    } else if (key == "head_dim") {
      x.head_dim = parse_count(key, value, at);
    } else if (key == "head_dim_v") {
      x.head_dim_v = parse_count(key, value, at);
    } else if (key == "causal") {
      if (value != "0" && value != "1") bad(at, fmt::format("causal: found {}, expected 0 or 1", sim::quote(value)));
      x.causal = value == "1";
    } else if (key == "bytes") {
      x.bytes = sim::parse_bytes(value, at).value();
    } else if (key == "params") {
      x.params = parse_count(key, value, at);
    }
  }
  if (*kind == KernelKind::grouped_gemm) x = Kernel::grouped_gemm(x.group_m, x.n, x.k, x.dtype);
  if (*kind == KernelKind::optimizer) x = Kernel::optimizer(x.params);
  if (*kind == KernelKind::attention_fwd || *kind == KernelKind::attention_bwd) {
    if (have_docs && seqlen != 0) bad(at, "found both seqlen= and docs=, expected one of them");
    if (!have_docs && seqlen > 0) x.doc_lens.assign(static_cast<std::size_t>(batch), seqlen);
    if (x.kv_heads == 0) x.kv_heads = x.heads;
    if (x.head_dim_v == 0) x.head_dim_v = x.head_dim;
    x.batch = 1;
  }
  validate_kernel(x, at);
  return x;
}

}  // namespace orrery::models
