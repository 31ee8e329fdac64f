#include "calibration/cpu_harness.hpp"

#include "sim/error.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

namespace orrery::calibration {

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr std::int64_t kNormWidth = 4096;

void randomize(float* data, std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) data[i] = u(rng);
}

Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
  Matrix m(rows, cols);
  randomize(m.data(), static_cast<std::size_t>(m.size()), rng);
  return m;
}

// One warm-up run, then `repetitions` timed runs; run(i) uses input set i % 2 (rotation keeps
// a run from finding its inputs in cache just because the previous run left them there).
Measurement time_runs(const models::Kernel& kernel, int repetitions, const std::function<void(int)>& run) {
  run(0);
  std::vector<double> samples;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run(i + 1);
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return summarize(kernel, samples);
}

Measurement gemm(const models::Kernel& k, int reps, std::mt19937_64& rng) {
  std::array<Matrix, 2> a = {random_matrix(k.m, k.k, rng), random_matrix(k.m, k.k, rng)};
  std::array<Matrix, 2> b = {random_matrix(k.k, k.n, rng), random_matrix(k.k, k.n, rng)};
  Matrix c(k.m, k.n);
  return time_runs(k, reps, [&](int i) {
    for (std::int64_t r = 0; r < k.batch; ++r) c.noalias() = a[static_cast<std::size_t>(i % 2)] * b[static_cast<std::size_t>(i % 2)];
  });
}

// y = 1.5 x + b: two streams read, one written.
Measurement elementwise(const models::Kernel& k, int reps, std::mt19937_64& rng) {
  const auto n = static_cast<Eigen::Index>(k.bytes / 3 / sizeof(float));
  std::array<Eigen::VectorXf, 2> x, b;
  for (std::size_t s = 0; s < 2; ++s) {
    x[s].resize(n);
    b[s].resize(n);
    randomize(x[s].data(), static_cast<std::size_t>(n), rng);
    randomize(b[s].data(), static_cast<std::size_t>(n), rng);
  }
  Eigen::VectorXf y(n);
  return time_runs(k, reps, [&](int i) {
    const auto s = static_cast<std::size_t>(i % 2);
    y.noalias() = 1.5f * x[s] + b[s];
  });
}

Measurement copy(const models::Kernel& k, int reps, std::mt19937_64& rng) {
  const auto n = static_cast<std::size_t>(k.bytes / 2 / sizeof(float));  // half read, half written
  std::array<std::vector<float>, 2> src = {std::vector<float>(n), std::vector<float>(n)};
  for (auto& s : src) randomize(s.data(), n, rng);
  std::vector<float> dst(n);
  return time_runs(k, reps, [&](int i) { std::memcpy(dst.data(), src[static_cast<std::size_t>(i % 2)].data(), n * sizeof(float)); });
}

Measurement norm(const models::Kernel& k, int reps, std::mt19937_64& rng) {
  const auto rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(k.bytes / 2 / sizeof(float)) / kNormWidth);
  std::array<Matrix, 2> x = {random_matrix(rows, kNormWidth, rng), random_matrix(rows, kNormWidth, rng)};
  Matrix y(rows, kNormWidth);
  const Eigen::RowVectorXf gamma = Eigen::RowVectorXf::Random(kNormWidth);
  return time_runs(k, reps, [&](int i) {
    const Matrix& in = x[static_cast<std::size_t>(i % 2)];
    for (Eigen::Index r = 0; r < rows; ++r) {
      const float mean = in.row(r).mean();
      const float var = (in.row(r).array() - mean).square().mean();
      y.row(r) = ((in.row(r).array() - mean) * (1.0f / std::sqrt(var + 1e-5f))).matrix().cwiseProduct(gamma);
    }
  });
}

Measurement attention(const models::Kernel& k, int reps, std::mt19937_64& rng) {
  const std::int64_t tokens = models::tokens(k);
  const std::int64_t longest = *std::max_element(k.doc_lens.begin(), k.doc_lens.end());
  // Per head: Q [tokens x d]; per kv head: K [tokens x d], V [tokens x dv]; two input sets.
  std::array<std::vector<Matrix>, 2> q, kk, v;
  for (int s = 0; s < 2; ++s) {
    for (std::int64_t h = 0; h < k.heads; ++h) q[static_cast<std::size_t>(s)].push_back(random_matrix(tokens, k.head_dim, rng));
    for (std::int64_t h = 0; h < k.kv_heads; ++h) {
      kk[static_cast<std::size_t>(s)].push_back(random_matrix(tokens, k.head_dim, rng));
      v[static_cast<std::size_t>(s)].push_back(random_matrix(tokens, k.head_dim_v, rng));
    }
  }
  Matrix out(tokens, k.head_dim_v);
  Matrix scores(longest, longest);
  const float scale = 1.0f / std::sqrt(static_cast<float>(k.head_dim));
  const std::int64_t group = k.heads / k.kv_heads;
  return time_runs(k, reps, [&](int i) {
    const auto set = static_cast<std::size_t>(i % 2);
    for (std::int64_t h = 0; h < k.heads; ++h) {
      const auto kvh = static_cast<std::size_t>(h / group);
      std::int64_t offset = 0;
      for (const std::int64_t l : k.doc_lens) {
        auto s = scores.topLeftCorner(l, l);
        s.noalias() = q[set][static_cast<std::size_t>(h)].middleRows(offset, l) * kk[set][kvh].middleRows(offset, l).transpose();
        for (Eigen::Index r = 0; r < l; ++r) {
          const Eigen::Index visible = k.causal ? r + 1 : l;
          auto row = s.row(r).head(visible);
          row *= scale;
          const float mx = row.maxCoeff();
          row = (row.array() - mx).exp().matrix();
          row /= row.sum();
          if (visible < l) s.row(r).tail(l - visible).setZero();
        }
        out.middleRows(offset, l).noalias() = s * v[set][kvh].middleRows(offset, l);
        offset += l;
      }
    }
  });
}

std::string first_cpuinfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}


}  // namespace

bool cpu_supports(const models::Kernel& k) {
  switch (k.kind) {
    case models::KernelKind::gemm:
    case models::KernelKind::attention_fwd: return k.dtype == models::DType::fp32;
    case models::KernelKind::copy:
    case models::KernelKind::elementwise:
    case models::KernelKind::norm: return true;
    default: return false;
  }
}

Measurement measure_cpu_kernel(const models::Kernel& k, int repetitions, std::uint64_t seed) {
  if (!cpu_supports(k)) {
    throw sim::InputError("<cpu harness>", models::describe(k),
                          "the CPU harness runs gemm and attention_fwd in fp32, copy, elementwise and norm; not this kernel");
  }
  ORRERY_CHECK(repetitions >= 1, "repetitions {} < 1", repetitions);
  std::mt19937_64 rng(seed);
  switch (k.kind) {
    case models::KernelKind::gemm: return gemm(k, repetitions, rng);
    case models::KernelKind::attention_fwd: return attention(k, repetitions, rng);
    case models::KernelKind::norm: return norm(k, repetitions, rng);
    case models::KernelKind::elementwise: return elementwise(k, repetitions, rng);
    default: return copy(k, repetitions, rng);
  }
}

std::vector<models::Kernel> cpu_grid(const CpuHarnessOptions& o) {
  std::vector<models::Kernel> grid;
  const std::vector<std::int64_t> sizes = o.quick ? std::vector<std::int64_t>{128, 256, 512}
                                                  : std::vector<std::int64_t>{64, 128, 256, 512, 1024};
  for (const std::int64_t m : sizes) {
    for (const std::int64_t n : sizes) {
      for (const std::int64_t k : sizes) grid.push_back(models::Kernel::gemm(m, n, k, models::DType::fp32));
    }
  }
  // Sizes beyond the last-level cache (a copy of 32 MiB half fits in some), where bandwidth is flat.
  const std::vector<double> mib = o.quick ? std::vector<double>{64, 128, 256} : std::vector<double>{64, 128, 256, 512};
  for (const models::KernelKind kind : {models::KernelKind::copy, models::KernelKind::elementwise, models::KernelKind::norm}) {
    for (const double m : mib) grid.push_back(models::Kernel::memory_bound(kind, sim::Bytes(m * 1048576), models::DType::fp32));
  }
  const std::vector<std::int64_t> token_counts = o.quick ? std::vector<std::int64_t>{1024, 2048} : std::vector<std::int64_t>{1024, 4096};
  const std::vector<std::int64_t> lengths = o.quick ? std::vector<std::int64_t>{128, 256, 512}
                                                    : std::vector<std::int64_t>{128, 256, 512, 1024};
  for (const bool causal : o.quick ? std::vector<bool>{false} : std::vector<bool>{false, true}) {
    for (const std::int64_t t : token_counts) {
      for (const std::int64_t l : lengths) {
        grid.push_back(models::Kernel::attention(models::Pass::forward, std::vector<std::int64_t>(static_cast<std::size_t>(t / l), l),
                                                 2, 2, 64, causal, models::DType::fp32));
      }
    }
  }
  return grid;
}

Profile measure_grid(Profile header, const std::vector<models::Kernel>& grid, const KernelTimer& timer,
                     const CpuHarnessOptions& o) {
  std::uint64_t seed = o.seed;
  for (const models::Kernel& k : grid) {
    header.points.push_back(timer(k, o.repetitions, seed++));
    if (o.on_point) o.on_point(header.points.size(), grid.size());
  }
  return header;
}

Profile measure_cpu(const CpuHarnessOptions& o) {
  Profile p;
  p.harness = "cpu";
  p.device = first_cpuinfo("model name");
  p.identity = {{"hardware_threads", std::to_string(std::thread::hardware_concurrency())}, {"threads_used", "1"}};
  p.software = {{"compiler", __VERSION__},
                {"eigen", fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION)}};
  p.clocks = {{"cpu_mhz", first_cpuinfo("cpu MHz")}};
  p.date = utc_now_iso8601();
  return measure_grid(std::move(p), cpu_grid(o), &measure_cpu_kernel, o);
}

}  // namespace orrery::calibration
