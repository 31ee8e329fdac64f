// orrery-calibrate-cuda: measures kernels on the first GPU (and NCCL collectives across all
// GPUs, when there are several) and writes a calibration profile (calibration/profile.hpp).
//   orrery-calibrate-cuda -o h200.json [--quick] [--only gemm,attention,memory,nccl]
// Timing discipline: warm-up runs; CUDA events around every timed run; the median of the
// repetitions (with p10/p90 as the spread); inputs rotated over enough buffers to defeat the
// L2 cache; seeded random inputs; every CUDA, cuBLASLt and NCCL call checked.
#include "calibration/profile.hpp"
#include "kernels.cuh"

#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef ORRERY_HAVE_NCCL
#include <nccl.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace orrery::calibration::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: CUDA error {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{}: cuBLASLt status {}", what, static_cast<int>(s)));
}
#ifdef ORRERY_HAVE_NCCL
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("{}: NCCL error {}", what, ncclGetErrorString(r)));
}
#endif

struct Options {
  std::string out_path;
  bool quick = false;
  std::vector<std::string> only;  // empty: everything
  std::uint64_t seed = 1;
  bool wants(const std::string& what) const { return only.empty() || std::find(only.begin(), only.end(), what) != only.end(); }
};

// Device memory freed on scope exit.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) : bytes_(bytes) { check(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 1)), "cudaMalloc"); }
  ~Buffer() { cudaFree(ptr_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

class Timer {
 public:
  explicit Timer(cudaStream_t stream) : stream_(stream) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  // Warm-up runs, then `reps` runs each between two events; run(i) picks its input set from i.
  std::vector<double> time(int warmup, int reps, const std::function<void(int)>& run) {
    for (int i = 0; i < warmup; ++i) run(i);
    check(cudaStreamSynchronize(stream_), "warm-up");
    std::vector<double> samples;
    for (int i = 0; i < reps; ++i) {
      check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      run(warmup + i);
      check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      samples.push_back(static_cast<double>(ms) * 1e-3);
    }
    return samples;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_{}, stop_{};
};

// How many copies of a working set rotate so that the sets together overflow the L2 twice.
int rotation(std::size_t set_bytes, int l2_bytes) {
  const auto need = static_cast<std::size_t>(2 * static_cast<std::size_t>(l2_bytes)) / std::max<std::size_t>(set_bytes, 1) + 1;
  return static_cast<int>(std::clamp<std::size_t>(need, 2, 16));
}

int repetitions_for(double seconds_guess) {
  // About 0.5 s of timed runs per point, between 10 and 100 repetitions.
  return std::clamp(static_cast<int>(0.5 / std::max(seconds_guess, 1e-6)), 10, 100);
}


struct Device {
  cudaDeviceProp prop{};
  cudaStream_t stream{};
  cublasLtHandle_t lt{};
  Buffer workspace{64u << 20};
};

double guess_seconds(double flops, double bytes) { return std::max(flops / 500e12, bytes / 3e12) + 5e-6; }

void measure_gemms(Device& dev, const Options& o, Profile& p) {
  const bool fp8_ok = dev.prop.major * 10 + dev.prop.minor >= 89;
  const std::vector<std::int64_t> ms = o.quick ? std::vector<std::int64_t>{512, 4096} : std::vector<std::int64_t>{512, 2048, 8192, 32768};
  const std::vector<std::int64_t> ns = o.quick ? std::vector<std::int64_t>{1024, 8192} : std::vector<std::int64_t>{1024, 4096, 14336, 28672};
  const std::vector<std::int64_t> ks = o.quick ? std::vector<std::int64_t>{1024, 8192} : std::vector<std::int64_t>{1024, 4096, 8192, 16384};
  std::uint64_t seed = o.seed;
  for (const bool fp8 : {false, true}) {
    if (fp8 && !fp8_ok) continue;
    const models::DType dtype = fp8 ? models::DType::fp8 : models::DType::bf16;
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const std::size_t elem = fp8 ? 1 : 2;
    for (const std::int64_t m : ms) {
      for (const std::int64_t n : ns) {
        for (const std::int64_t k : ks) {
          const models::Kernel kernel = models::Kernel::gemm(m, n, k, dtype);
          // Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T[n,m] = B^T[n,k] A^T[k,m]. fp8
          // needs the "TN" form, so the first operand is stored k x n and transposed.
          const std::size_t a_bytes = static_cast<std::size_t>(n * k) * elem, b_bytes = static_cast<std::size_t>(k * m) * elem;
          const int sets = rotation(a_bytes + b_bytes, dev.prop.l2CacheSize);
          std::vector<std::unique_ptr<Buffer>> as, bs;
          for (int s = 0; s < sets; ++s) {
            as.push_back(std::make_unique<Buffer>(a_bytes));
            bs.push_back(std::make_unique<Buffer>(b_bytes));
            check(fill_random(as.back()->get(), n * k, fp8, seed++, dev.stream), "fill A");
            check(fill_random(bs.back()->get(), k * m, fp8, seed++, dev.stream), "fill B");
          }
          Buffer c(static_cast<std::size_t>(m * n) * 2);
          cublasLtMatmulDesc_t op{};
          check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
          const cublasOperation_t ta = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
          check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "TRANSA");
          check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "TRANSB");
          cublasLtMatrixLayout_t la{}, lb{}, lc{};
          const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
          if (fp8) {
            check(cublasLtMatrixLayoutCreate(&la, in, u(k), u(n), k), "layout A");
          } else {
            check(cublasLtMatrixLayoutCreate(&la, in, u(n), u(k), n), "layout A");
          }
          check(cublasLtMatrixLayoutCreate(&lb, in, u(k), u(m), k), "layout B");
          check(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, u(n), u(m), n), "layout C");
          cublasLtMatmulPreference_t pref{};
          check(cublasLtMatmulPreferenceCreate(&pref), "preference");
          const std::size_t ws = dev.workspace.bytes();
          check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)), "workspace");
          cublasLtMatmulHeuristicResult_t heuristic{};
          int found = 0;
          check(cublasLtMatmulAlgoGetHeuristic(dev.lt, op, la, lb, lc, lc, pref, 1, &heuristic, &found), "heuristic");
          if (found == 0) throw std::runtime_error("cuBLASLt found no algorithm for " + models::describe(kernel));
          const float alpha = 1, beta = 0;
          Timer timer(dev.stream);
          const double guess = guess_seconds(models::flops(kernel).value(), static_cast<double>(a_bytes + b_bytes));
          std::vector<double> samples = timer.time(3, repetitions_for(guess), [&](int i) {
            const auto s = static_cast<std::size_t>(i % sets);
            check(cublasLtMatmul(dev.lt, op, &alpha, as[s]->get(), la, bs[s]->get(), lb, &beta, c.get(), lc, c.get(), lc, &heuristic.algo,
                                 dev.workspace.get(), ws, dev.stream),
                  "cublasLtMatmul");
          });
          p.points.push_back(summarize(kernel, samples));
          cublasLtMatmulPreferenceDestroy(pref);
          cublasLtMatrixLayoutDestroy(la);
          cublasLtMatrixLayoutDestroy(lb);
          cublasLtMatrixLayoutDestroy(lc);
          cublasLtMatmulDescDestroy(op);
          std::fprintf(stderr, "  %s: %.3f ms\n", models::describe(kernel).c_str(), p.points.back().median_s * 1e3);
        }
      }
    }
  }
}

void measure_memory(Device& dev, const Options& o, Profile& p) {
  const std::vector<double> mib = o.quick ? std::vector<double>{16, 256} : std::vector<double>{4, 16, 64, 256, 1024, 4096};
  std::uint64_t seed = o.seed + 1000;
  for (const double size : mib) {
    const auto bytes = static_cast<std::size_t>(size * 1048576);
    // copy: `bytes` moved (half read, half written), as cudaMemcpyAsync device to device.
    {
      const int sets = rotation(bytes, dev.prop.l2CacheSize);
      std::vector<std::unique_ptr<Buffer>> src;
      for (int s = 0; s < sets; ++s) {
        src.push_back(std::make_unique<Buffer>(bytes / 2));
        check(fill_random(src.back()->get(), static_cast<std::int64_t>(bytes / 4), false, seed++, dev.stream), "fill");
      }
      Buffer dst(bytes / 2);
      Timer timer(dev.stream);
      std::vector<double> samples = timer.time(3, repetitions_for(guess_seconds(0, static_cast<double>(bytes))), [&](int i) {
        check(cudaMemcpyAsync(dst.get(), src[static_cast<std::size_t>(i % sets)]->get(), bytes / 2, cudaMemcpyDeviceToDevice, dev.stream),
              "cudaMemcpyAsync");
      });
      p.points.push_back(summarize(models::Kernel::memory_bound(models::KernelKind::copy, sim::Bytes(static_cast<double>(bytes)),
                                                                models::DType::bf16),
                                   samples));
    }
    // elementwise: y = 1.5 x + b over bf16, `bytes` moved (two thirds read, one third written).
    {
      const auto n = static_cast<std::int64_t>(bytes / 3 / 2);
      const int sets = rotation(static_cast<std::size_t>(n) * 4, dev.prop.l2CacheSize);
      std::vector<std::unique_ptr<Buffer>> xs, bs;
      for (int s = 0; s < sets; ++s) {
        xs.push_back(std::make_unique<Buffer>(static_cast<std::size_t>(n) * 2));
        bs.push_back(std::make_unique<Buffer>(static_cast<std::size_t>(n) * 2));
        check(fill_random(xs.back()->get(), n, false, seed++, dev.stream), "fill");
        check(fill_random(bs.back()->get(), n, false, seed++, dev.stream), "fill");
      }
      Buffer y(static_cast<std::size_t>(n) * 2);
      Timer timer(dev.stream);
      std::vector<double> samples = timer.time(3, repetitions_for(guess_seconds(0, static_cast<double>(bytes))), [&](int i) {
        const auto s = static_cast<std::size_t>(i % sets);
        check(elementwise(xs[s]->get(), bs[s]->get(), y.get(), n, dev.stream), "elementwise");
      });
      p.points.push_back(summarize(models::Kernel::memory_bound(models::KernelKind::elementwise, sim::Bytes(static_cast<double>(n * 6)),
                                                                models::DType::bf16),
                                   samples));
    }
    // layer norm: rows of 4096 bf16 values, read once and written once.
    {
      const std::int64_t cols = 4096, rows = static_cast<std::int64_t>(bytes / 2 / 2) / cols;
      const int sets = rotation(bytes / 2, dev.prop.l2CacheSize);
      std::vector<std::unique_ptr<Buffer>> xs;
      for (int s = 0; s < sets; ++s) {
        xs.push_back(std::make_unique<Buffer>(static_cast<std::size_t>(rows * cols * 2)));
        check(fill_random(xs.back()->get(), rows * cols, false, seed++, dev.stream), "fill");
      }
      Buffer gain(static_cast<std::size_t>(cols * 2)), y(static_cast<std::size_t>(rows * cols * 2));
      check(fill_random(gain.get(), cols, false, seed++, dev.stream), "fill");
      Timer timer(dev.stream);
      std::vector<double> samples = timer.time(3, repetitions_for(guess_seconds(0, static_cast<double>(bytes))), [&](int i) {
        check(layernorm(xs[static_cast<std::size_t>(i % sets)]->get(), gain.get(), y.get(), rows, cols, dev.stream), "layernorm");
      });
      p.points.push_back(summarize(models::Kernel::memory_bound(models::KernelKind::norm, sim::Bytes(static_cast<double>(rows * cols * 4)),
                                                                models::DType::bf16),
                                   samples));
    }
    std::fprintf(stderr, "  copy, elementwise and layernorm of %.0f MiB done\n", size);
  }
}

void measure_attention(Device& dev, const Options& o, Profile& p) {
  const std::int32_t heads = 16, kv_heads = 4, head_dim = 128;
  const std::vector<std::int32_t> token_counts = o.quick ? std::vector<std::int32_t>{8192} : std::vector<std::int32_t>{8192, 32768};
  const std::vector<std::int32_t> lengths = o.quick ? std::vector<std::int32_t>{512, 2048}
                                                    : std::vector<std::int32_t>{256, 512, 1024, 2048, 4096, 8192};
  std::uint64_t seed = o.seed + 2000;
  for (const bool causal : {false, true}) {
    for (const std::int32_t tokens : token_counts) {
      for (const std::int32_t len : lengths) {
        const std::int32_t docs = tokens / len;
        std::vector<std::int32_t> cu(static_cast<std::size_t>(docs) + 1);
        for (std::int32_t d = 0; d <= docs; ++d) cu[static_cast<std::size_t>(d)] = d * len;
        Buffer cu_dev(cu.size() * sizeof(std::int32_t));
        check(cudaMemcpy(cu_dev.get(), cu.data(), cu.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice), "cu_seqlens");
        const std::size_t q_elems = static_cast<std::size_t>(tokens) * heads * head_dim;
        const std::size_t kv_elems = static_cast<std::size_t>(tokens) * kv_heads * head_dim;
        std::array<std::unique_ptr<Buffer>, 2> q, k, v, d_o;
        for (std::size_t s = 0; s < 2; ++s) {
          q[s] = std::make_unique<Buffer>(q_elems * 2);
          k[s] = std::make_unique<Buffer>(kv_elems * 2);
          v[s] = std::make_unique<Buffer>(kv_elems * 2);
          d_o[s] = std::make_unique<Buffer>(q_elems * 2);
          check(fill_random(q[s]->get(), static_cast<std::int64_t>(q_elems), false, seed++, dev.stream), "fill");
          check(fill_random(k[s]->get(), static_cast<std::int64_t>(kv_elems), false, seed++, dev.stream), "fill");
          check(fill_random(v[s]->get(), static_cast<std::int64_t>(kv_elems), false, seed++, dev.stream), "fill");
          check(fill_random(d_o[s]->get(), static_cast<std::int64_t>(q_elems), false, seed++, dev.stream), "fill");
        }
        Buffer out(q_elems * 2), lse(static_cast<std::size_t>(tokens) * heads * 4), delta(static_cast<std::size_t>(tokens) * heads * 4);
        Buffer dq(q_elems * 2), dk(q_elems * 2), dv(q_elems * 2);
        AttentionShape shape;
        shape.cu_seqlens = static_cast<const std::int32_t*>(cu_dev.get());
        shape.docs = docs;
        shape.max_len = len;
        shape.tokens = tokens;
        shape.heads = heads;
        shape.kv_heads = kv_heads;
        shape.head_dim = head_dim;
        shape.causal = causal;
        const std::vector<std::int64_t> doc_lens(static_cast<std::size_t>(docs), len);
        for (const models::Pass pass : {models::Pass::forward, models::Pass::backward}) {
          const models::Kernel kernel = models::Kernel::attention(pass, doc_lens, heads, kv_heads, head_dim, causal, models::DType::bf16);
          // The forward fills O and lse, which the backward reads.
          check(attention_forward(shape, q[0]->get(), k[0]->get(), v[0]->get(), out.get(), static_cast<float*>(lse.get()), dev.stream),
                "attention_forward");
          Timer timer(dev.stream);
          // A CUDA-core kernel: guess 20 TFLOP/s.
          const int reps = std::clamp(static_cast<int>(0.5 / (models::flops(kernel).value() / 20e12 + 1e-5)), 3, 30);
          std::vector<double> samples = timer.time(1, reps, [&](int i) {
            const auto s = static_cast<std::size_t>(i % 2);
            if (pass == models::Pass::forward) {
              check(attention_forward(shape, q[s]->get(), k[s]->get(), v[s]->get(), out.get(), static_cast<float*>(lse.get()), dev.stream),
                    "attention_forward");
            } else {
              check(attention_backward(shape, q[s]->get(), k[s]->get(), v[s]->get(), out.get(), d_o[s]->get(),
                                       static_cast<const float*>(lse.get()), static_cast<float*>(delta.get()), dq.get(), dk.get(), dv.get(),
                                       dev.stream),
                    "attention_backward");
            }
          });
          p.points.push_back(summarize(kernel, samples));
          std::fprintf(stderr, "  %s: %.3f ms\n", models::describe(kernel).c_str(), p.points.back().median_s * 1e3);
        }
      }
    }
  }
}

#ifdef ORRERY_HAVE_NCCL
void measure_nccl(int gpus, const Options& o, Profile& p) {
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(gpus));
  check(ncclCommInitAll(comms.data(), gpus, nullptr), "ncclCommInitAll");
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(gpus));
  std::vector<std::unique_ptr<Buffer>> bufs;
  const std::vector<double> sizes = o.quick ? std::vector<double>{1 << 20, 1 << 30} : std::vector<double>{1 << 20, 16 << 20, 256 << 20, 1 << 30, 4.0 * (1 << 30)};
  for (int g = 0; g < gpus; ++g) {
    check(cudaSetDevice(g), "cudaSetDevice");
    check(cudaStreamCreate(&streams[static_cast<std::size_t>(g)]), "cudaStreamCreate");
    bufs.push_back(std::make_unique<Buffer>(static_cast<std::size_t>(sizes.back())));
  }
  for (const double size : sizes) {
    const auto count = static_cast<std::size_t>(size / 2);
    const auto once = [&] {
      check(ncclGroupStart(), "ncclGroupStart");
      for (int g = 0; g < gpus; ++g) {
        check(ncclAllReduce(bufs[static_cast<std::size_t>(g)]->get(), bufs[static_cast<std::size_t>(g)]->get(), count, ncclBfloat16, ncclSum,
                            comms[static_cast<std::size_t>(g)], streams[static_cast<std::size_t>(g)]),
              "ncclAllReduce");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      for (int g = 0; g < gpus; ++g) check(cudaStreamSynchronize(streams[static_cast<std::size_t>(g)]), "sync");
    };
    for (int i = 0; i < 3; ++i) once();
    std::vector<double> samples;
    for (int i = 0; i < 20; ++i) {
      const auto start = std::chrono::steady_clock::now();
      once();
      samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const Measurement m = summarize(models::Kernel::memory_bound(models::KernelKind::elementwise, sim::Bytes(size), models::DType::bf16), samples);
    p.collectives.push_back({"all-reduce", size, gpus, m.median_s, m.p10_s, m.p90_s, m.repetitions});
  }
  for (int g = 0; g < gpus; ++g) {
    ncclCommDestroy(comms[static_cast<std::size_t>(g)]);
    cudaStreamDestroy(streams[static_cast<std::size_t>(g)]);
  }
  check(cudaSetDevice(0), "cudaSetDevice");
}
#endif

// The user's machine, not a bug of ours: no GPU, no driver, or a driver older than this build.
class NoGpu : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int count_gpus() {
  int gpus = 0;
  const cudaError_t e = cudaGetDeviceCount(&gpus);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const std::string built = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && gpus == 0)) {
    throw NoGpu("no GPU found: the CUDA driver sees no device (check nvidia-smi, and CUDA_VISIBLE_DEVICES if set)");
  }
  if (e == cudaErrorInsufficientDriver) {
    throw NoGpu(fmt::format("no GPU found: no NVIDIA driver is loaded, or it is older than this build's CUDA {} runtime "
                            "(cudaErrorInsufficientDriver; check nvidia-smi)", built));
  }
  if (e != cudaSuccess) {
    throw NoGpu(fmt::format("no usable GPU: cudaGetDeviceCount failed with {} ({})", cudaGetErrorName(e), cudaGetErrorString(e)));
  }
  return gpus;
}

int run(const Options& o) {
  const int gpus = count_gpus();
  Device dev;
  check(cudaGetDeviceProperties(&dev.prop, 0), "cudaGetDeviceProperties");
  if (const cudaError_t e = kernels_runnable(); e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
    throw NoGpu(fmt::format("{} (sm_{}{}) cannot run this build's kernels, compiled for sm_{}: rebuild with "
                            "-DCMAKE_CUDA_ARCHITECTURES={}{}", dev.prop.name, dev.prop.major, dev.prop.minor, ORRERY_CUDA_ARCHS,
                            dev.prop.major, dev.prop.minor));
  }
  check(cudaStreamCreate(&dev.stream), "cudaStreamCreate");
  check(cublasLtCreate(&dev.lt), "cublasLtCreate");

  Profile p;
  p.harness = "cuda";
  p.device = dev.prop.name;
  std::string uuid = "GPU-";
  for (int i = 0; i < 16; ++i) uuid += fmt::format("{:02x}", static_cast<unsigned char>(dev.prop.uuid.bytes[i]));
  p.identity = {{"uuid", uuid},
                {"pci_bus_id", fmt::format("{:04x}:{:02x}:{:02x}.0", dev.prop.pciDomainID, dev.prop.pciBusID, dev.prop.pciDeviceID)},
                {"compute_capability", fmt::format("{}.{}", dev.prop.major, dev.prop.minor)},
                {"sm_count", std::to_string(dev.prop.multiProcessorCount)},
                {"memory_bytes", std::to_string(dev.prop.totalGlobalMem)},
                {"l2_bytes", std::to_string(dev.prop.l2CacheSize)},
                {"devices", std::to_string(gpus)}};
  int driver = 0, runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  const auto cuda_version = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  p.software = {{"cuda_driver_api", cuda_version(driver)},
                {"cuda_runtime", cuda_version(runtime)},
                {"cublaslt", std::to_string(cublasLtGetVersion())},
                {"attention_kernel", "orrery reference (fused, CUDA cores, no tensor cores)"}};
#ifdef ORRERY_HAVE_NCCL
  int nccl = 0;
  check(ncclGetVersion(&nccl), "ncclGetVersion");
  p.software.emplace_back("nccl", std::to_string(nccl));
#endif
  int sm_khz = 0, mem_khz = 0;
  if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, 0) == cudaSuccess) p.clocks.emplace_back("sm_max_mhz", std::to_string(sm_khz / 1000));
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) {
    p.clocks.emplace_back("memory_max_mhz", std::to_string(mem_khz / 1000));
  }
  cudaGetLastError();  // an attribute this driver lacks is not an error of ours
  p.date = utc_now_iso8601();
  std::fprintf(stderr, "orrery-calibrate-cuda: %s (%s), %d GPU(s)\n", p.device.c_str(), uuid.c_str(), gpus);

  const auto stage = [&](const char* what, const std::function<void()>& measure) {
    const auto start = std::chrono::steady_clock::now();
    const std::size_t before = p.points.size() + p.collectives.size();
    std::fprintf(stderr, "measuring %s ...\n", what);
    measure();
    std::fprintf(stderr, "measured %s: %zu points in %.1f s\n", what, p.points.size() + p.collectives.size() - before,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  if (o.wants("gemm")) stage("gemm", [&] { measure_gemms(dev, o, p); });
  if (o.wants("memory")) stage("memory", [&] { measure_memory(dev, o, p); });
  if (o.wants("attention")) stage("attention", [&] { measure_attention(dev, o, p); });
#ifdef ORRERY_HAVE_NCCL
  if (o.wants("nccl") && gpus > 1) stage("nccl all-reduce", [&] { measure_nccl(gpus, o, p); });
  if (o.wants("nccl") && gpus < 2) std::fprintf(stderr, "nccl skipped: all-reduce needs 2 GPUs or more, this machine has %d\n", gpus);
#else
  if (o.wants("nccl")) std::fprintf(stderr, "nccl skipped: this build has no NCCL (CMake found none)\n");
#endif
  write_profile(p, o.out_path);
  std::fprintf(stderr, "%zu points written to %s\n", p.points.size(), o.out_path.c_str());
  cublasLtDestroy(dev.lt);
  cudaStreamDestroy(dev.stream);
  return 0;
}

}  // namespace
}  // namespace orrery::calibration::cuda

namespace {

constexpr const char* kUsage = "usage: orrery-calibrate-cuda -o profile.json [--quick] [--only gemm,memory,attention,nccl] [--seed N]\n";

constexpr const char* kHelp =
    "orrery-calibrate-cuda: measure kernels on this machine's GPU and write a calibration profile.\n"
    "\n"
    "It times GEMMs (cuBLASLt, bf16/fp16/fp8 where supported), memory-bound kernels, attention forward and\n"
    "backward on the first GPU, and NCCL all-reduce across every GPU when there are several (and NCCL was\n"
    "found at build time). Each point is the median of timed runs after warm-ups, with CUDA events, on\n"
    "inputs rotated to defeat the L2 cache. The full grid takes minutes; --quick a smaller one.\n"
    "\n"
    "Then fit cost curves and use them in a scenario:\n"
    "  orrery-calibrate-cuda -o h100.json\n"
    "  orrery calibrate fit h100.json -o h100-curves.json      (prints leave-one-out errors per kind)\n"
    "  a step scenario: \"calibration\": \"h100-curves.json\"     (or orrery cost --calibration h100-curves.json)\n"
    "\n"
    "Options:\n"
    "  -o, --out FILE   the profile JSON to write (required; its folder must exist)\n"
    "  --quick          a small grid: about a minute\n"
    "  --only LIST      comma-separated: gemm, memory, attention, nccl (default: all)\n"
    "  --seed N         seed of the random inputs (default 1)\n"
    "  --help           this text\n"
    "\n"
    "Without a GPU, `orrery calibrate measure --device cpu` runs the same pipeline on the CPU.\n"
    "Exit codes: 0 done, 1 bad options or no usable GPU, 2 a failed CUDA, cuBLASLt or NCCL call.\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "orrery-calibrate-cuda: error: %s\n%s", message.c_str(), kUsage);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  orrery::calibration::cuda::Options o;
  const std::vector<std::string> kinds = {"gemm", "memory", "attention", "nccl"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "-o" || a == "--out") {
      if (!has_value) return usage_error(a + " expects a file name");
      o.out_path = argv[++i];
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--seed") {
      if (!has_value) return usage_error("--seed expects a number");
      const std::string v = argv[++i];
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19) {
        return usage_error(fmt::format("--seed: found \"{}\", expected a whole number of 0 or more", v));
      }
      o.seed = std::stoull(v);
    } else if (a == "--only") {
      if (!has_value) return usage_error("--only expects a list such as gemm,attention");
      const std::string list = argv[++i];
      for (std::size_t b = 0; b <= list.size();) {
        const std::size_t e = std::min(list.find(',', b), list.size());
        const std::string kind = list.substr(b, e - b);
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
          return usage_error(fmt::format("--only: found \"{}\", expected gemm, memory, attention or nccl", kind));
        }
        o.only.push_back(kind);
        b = e + 1;
      }
    } else {
      return usage_error(fmt::format("unknown option \"{}\" (see --help)", a));
    }
  }
  if (o.out_path.empty()) return usage_error("expected -o profile.json");
  // The profile is written after minutes of measuring: a folder that cannot take it fails now.
  const std::filesystem::path out(o.out_path);
  const std::filesystem::path dir = out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return usage_error(fmt::format("-o: cannot write \"{}\": the folder \"{}\" does not exist", o.out_path, dir.string()));
  if (std::filesystem::is_directory(out, ec)) return usage_error(fmt::format("-o: found \"{}\", expected a file name", o.out_path));
  try {
    return orrery::calibration::cuda::run(o);
  } catch (const orrery::calibration::cuda::NoGpu& e) {
    std::fprintf(stderr, "orrery-calibrate-cuda: error: %s; without a GPU, `orrery calibrate measure --device cpu` runs the CPU harness\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orrery-calibrate-cuda: error: %s\n", e.what());
    return 2;
  }
}
