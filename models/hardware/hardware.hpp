// Hardware catalog: the GPUs Orrery knows, with peak dense FLOP/s per data type, HBM capacity
// and bandwidth, SM count and NVLink bandwidth. Every built-in number cites its source in
// hardware.cpp; users add or override GPUs in JSON (traces/hardware_json.hpp).
//   const HardwareCatalog catalog = HardwareCatalog::builtin();
//   const GpuSpec& h100 = catalog.gpu("H100");            // case-insensitive, aliases allowed
//   sim::FlopsPerSecond peak = h100.peak(DType::bf16);     // 989e12
#pragma once

#include "sim/units.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

// Data types a kernel computes in. tf32 is fp32 storage with tensor-core math; fp4 is the
// block-scaled 4-bit float of Blackwell's tensor cores (NVFP4: E2M1 with an fp8 scale per 16
// elements).
enum class DType : std::uint8_t { fp32, tf32, bf16, fp16, fp8, fp4 };
inline constexpr std::size_t kDTypeCount = 6;
inline constexpr std::array<DType, kDTypeCount> kAllDTypes = {DType::fp32, DType::tf32, DType::bf16, DType::fp16,
                                                               DType::fp8,  DType::fp4};
std::string_view to_string(DType);
std::optional<DType> parse_dtype(std::string_view);  // "bf16", "fp8", ...
std::vector<std::string> dtype_names();
// Bytes of one element as stored in memory (tf32 is stored as fp32; fp4 is half a byte, its
// block scales aside).
double element_bytes(DType);

struct GpuSpec {
  std::string name;                       // canonical, e.g. "H100"
  std::vector<std::string> aliases;       // other names it answers to, e.g. "H100-SXM"
  std::array<double, kDTypeCount> peak_flops{};  // dense FLOP/s per DType; 0 = not supported
  double hbm_bytes = 0;
  double hbm_bandwidth = 0;               // bytes/s
  int sm_count = 0;                       // streaming multiprocessors (compute units on AMD)
  std::string interconnect;               // "nvlink", "xgmi" (AMD Infinity Fabric), or "" for none
  int nvlink_generation = 0;              // 0 when the GPU has no NVLink
  double nvlink_bandwidth = 0;            // per GPU, per direction, bytes/s
  std::string source;                     // where the numbers come from
  // The host each GPU shares (optimizer and activation offload): its share of host memory, of the
  // host's memory bandwidth, and its own host link (PCIe or NVLink-C2C) per direction, bytes and
  // bytes/s; 0 = not known (offload then refused).
  double host_memory_bytes = 0;
  double host_memory_bandwidth = 0;
  double host_link_bandwidth = 0;
  // The output tile, rows and columns, of the GPU's fastest tensor-core GEMM kernels: a GEMM's m
  // and n round up to it (RooflineParams::gemm_tile). 128 on Hopper and older; 256 on data-center
  // Blackwell, whose tcgen05.mma runs one 256-row MMA over a pair of SMs (cta_group::2).
  int gemm_tile = 128;
  // The special function units' throughput (the softmax's exponentials, MUFU.EX2) per FP32
  // FLOP/s of the CUDA cores, against Hopper's and Blackwell's: attention's softmax share scales
  // with the bf16 tensor peak over (FP32 peak x this). 2 on Blackwell Ultra (B300, GB300),
  // whose SFUs doubled while its FP32 cores did not ("Making Softmax More Efficient with NVIDIA
  // Blackwell Ultra", NVIDIA technical blog, 2026: "doubling SFU throughput over the standard
  // NVIDIA Blackwell architecture").
  double sfu_scale = 1;

  bool supports(DType t) const { return peak_flops[static_cast<std::size_t>(t)] > 0; }
  sim::FlopsPerSecond peak(DType t) const { return sim::FlopsPerSecond(peak_flops[static_cast<std::size_t>(t)]); }
  sim::Bytes hbm() const { return sim::Bytes(hbm_bytes); }
  sim::BytesPerSecond memory_bandwidth() const { return sim::BytesPerSecond(hbm_bandwidth); }
};

class HardwareCatalog {
 public:
  // The built-in GPUs: A100-40GB, A100-80GB, H100, H200, H800, H20, B200, GB200, B300, GB300, MI300X, and for cluster
  // traces V100, A40, A10, T4.
  static const HardwareCatalog& builtin();

  // Case-insensitive lookup by name or alias; nullptr when absent.
  const GpuSpec* find(std::string_view name) const;
  // As find(), but an unknown name throws InputError(source, where) with "did you mean".
  const GpuSpec& gpu(std::string_view name, std::string_view source = "<input>", std::string_view where = "") const;
  // Adds a GPU, or replaces the one with the same name (or alias).
  void add_or_replace(GpuSpec spec);
  std::span<const GpuSpec> gpus() const { return gpus_; }
  std::vector<std::string> names() const;

 private:
  std::vector<GpuSpec> gpus_;
};

}  // namespace orrery::models
