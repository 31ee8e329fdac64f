#include "models/hardware/hardware.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace orrery::models {

namespace {
constexpr std::array<std::string_view, kDTypeCount> kDTypeNames = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp4"};

using sim::iequals;

bool answers_to(const GpuSpec& g, std::string_view name) {
  if (iequals(g.name, name)) return true;
  return std::any_of(g.aliases.begin(), g.aliases.end(), [&](const std::string& a) { return iequals(a, name); });
}

constexpr double T = 1e12;  // TFLOP/s
constexpr double GB = 1e9;

// Peak dense tensor FLOP/s (no sparsity), order fp32, tf32, bf16, fp16, fp8, fp4; 0 = unsupported.
// Source for all of them: ../shared/data/ml-engineering/accelerator_peak_tflops.csv (S. Bekman,
// ML Engineering Open Book, compute/accelerator/README.md "TFLOPS comparison table", which
// collects the vendors' spec pages; GB200 figures are per GPU). fp4: the table's NVFP4 column where
// it has one (B200 10,000, B300 15,000), else its FP4 column (GB200 10,000, GB300 15,000).
constexpr std::array<double, kDTypeCount> kA100Flops = {19.5 * T, 156 * T, 312 * T, 312 * T, 0};
constexpr std::array<double, kDTypeCount> kH100Flops = {67 * T, 494.5 * T, 989 * T, 989 * T, 1979 * T};
constexpr std::array<double, kDTypeCount> kB200Flops = {80 * T, 1125 * T, 2250 * T, 2250 * T, 4500 * T, 10000 * T};
constexpr std::array<double, kDTypeCount> kGB200Flops = {80 * T, 1250 * T, 2500 * T, 2500 * T, 5000 * T, 10000 * T};
constexpr std::array<double, kDTypeCount> kB300Flops = {80 * T, 1125 * T, 2250 * T, 2250 * T, 4500 * T, 15000 * T};
constexpr std::array<double, kDTypeCount> kGB300Flops = {80 * T, 1250 * T, 2500 * T, 2500 * T, 5000 * T, 15000 * T};
constexpr std::array<double, kDTypeCount> kMI300XFlops = {163.4 * T, 653.7 * T, 1300 * T, 1300 * T, 2610 * T};

std::vector<GpuSpec> builtin_gpus() {
  std::vector<GpuSpec> g;
  // HBM: ../shared/data/ml-engineering/accelerator_hbm.csv unless stated. NVLink per GPU and
  // direction: ../shared/data/ml-engineering/nvlink_generations.csv (NVLink 3: 12 links x 25
  // GB/s = 300 GB/s; NVLink 4: 18 x 25 = 450; NVLink 5: 18 x 50 = 900).
  // SM counts: NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs), NVIDIA H100 Tensor
  // Core GPU Architecture whitepaper (132 SMs on H100 SXM5; H200 is the same GH100 die), Chips
  // and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling" (2025: 74 SMs enabled per
  // die, 148 per GPU; GB200 uses the same GPU), AMD Instinct MI300X data sheet (304 CUs).
  g.push_back({"A100-40GB", {"A100-SXM4-40GB", "A100-40G"}, kA100Flops, 40 * GB, 1555 * GB, 108, "nvlink", 3, 300 * GB,
               "NVIDIA A100 datasheet: 40 GB HBM2 at 1,555 GB/s (SXM); FLOP/s and NVLink as A100-80GB"});
  g.push_back({"A100-80GB", {"A100", "A100-SXM", "A100-SXM4-80GB"}, kA100Flops, 80 * GB, 2039 * GB, 108, "nvlink", 3,
               300 * GB,
               "ml-engineering accelerator tables (A100 SXM); bandwidth 2,039 GB/s from the NVIDIA A100 "
               "datasheet (the book rounds it to 2.0 TB/s)"});
  g.push_back({"H100", {"H100-SXM", "H100-SXM5", "H100-80GB"}, kH100Flops, 80 * GB, 3350 * GB, 132, "nvlink", 4, 450 * GB,
               "ml-engineering accelerator tables (H100 SXM): 80 GB HBM3 at 3.35 TB/s"});
  // The H100s of Meta's Grand Teton hosts, where torchtitan's H100 figures were measured
  // (torchtitan benchmarks/llama3_h100_202412_torchtitan.md): 96 GB HBM2e at 2.4 TB/s, run at a
  // 500 W power limit. Peaks as H100 SXM (the power cap's lower sustained clock not modelled).
  g.push_back({"H100-96GB-500W", {"H100-96GB"}, kH100Flops, 96 * GB, 2400 * GB, 132, "nvlink", 4, 450 * GB,
               "torchtitan llama3_h100_202412 benchmark: H100 96 GB HBM2e at 2.4 TB/s, 500 W limit; H100 SXM peaks"});
  g.push_back({"H200", {"H200-SXM", "H200-141GB"}, kH100Flops, 141 * GB, 4800 * GB, 132, "nvlink", 4, 450 * GB,
               "ml-engineering accelerator tables (H200 SXM): 141 GB HBM3e at 4.8 TB/s"});
  // China-market Hopper parts (the GPUs of StreamRL's heterogeneous setting, arXiv 2504.15930):
  // H800 SXM is the H100 SXM die with NVLink cut to 400 GB/s bidirectional (200 GB/s per
  // direction); compute and HBM as H100 SXM (NVIDIA H800 product page, as quoted by the vendors'
  // spec listings). H20: 148 TFLOP/s dense fp16/bf16, 74 tf32, 44 fp32, 296 fp8; 96 GB HBM3 at
  // 4.0 TB/s; NVLink 4 at 900 GB/s bidirectional; 78 SMs (spec listings collected at
  // willitrunai.com/gpus/h20-96gb and zangshuxian.com/new/674733024499207168, the SM count from
  // a Geekbench 6 report).
  g.push_back({"H800", {"H800-SXM", "H800-80GB"}, kH100Flops, 80 * GB, 3350 * GB, 132, "nvlink", 4, 200 * GB,
               "NVIDIA H800 SXM: H100 SXM compute and HBM, NVLink 400 GB/s bidirectional"});
  g.push_back({"H20", {"H20-96GB"}, {44 * T, 74 * T, 148 * T, 148 * T, 296 * T}, 96 * GB, 4000 * GB, 78, "nvlink", 4, 450 * GB,
               "NVIDIA H20 spec listings: 148 TFLOP/s bf16 dense, 96 GB HBM3 at 4.0 TB/s, NVLink 900 GB/s bidirectional"});
  g.push_back({"B200", {"B200-SXM", "B200-180GB"}, kB200Flops, 180 * GB, 8000 * GB, 148, "nvlink", 5, 900 * GB,
               "ml-engineering accelerator tables (B200 SXM): 180 GB HBM3e at 8.0 TB/s"});
  g.push_back({"GB200", {"GB200-SXM", "GB200-NVL72"}, kGB200Flops, 186 * GB, 8000 * GB, 148, "nvlink", 5, 900 * GB,
               "ml-engineering accelerator tables (GB200 SXM, per GPU): 186 GB HBM3e at 8.0 TB/s"});
  // Blackwell Ultra: B300 288 GB HBM3e at 8.0 TB/s (ml-engineering accelerator_hbm.csv); GB300
  // the same per GPU (NVIDIA GB300 NVL72 product page: up to 21 TB of HBM3e and 576 TB/s for 72
  // GPUs); 160 SMs (NVIDIA Blackwell Ultra technical blog, "Inside NVIDIA Blackwell Ultra", 2025).
  g.push_back({"B300", {"B300-SXM", "B300-288GB"}, kB300Flops, 288 * GB, 8000 * GB, 160, "nvlink", 5, 900 * GB,
               "ml-engineering accelerator tables (B300 SXM): 288 GB HBM3e at 8.0 TB/s; special function units doubled (NVIDIA Blackwell Ultra softmax blog)"});
  g.back().sfu_scale = 2;  // Blackwell Ultra's doubled special function units (GpuSpec::sfu_scale)
  g.push_back({"GB300", {"GB300-SXM", "GB300-NVL72"}, kGB300Flops, 288 * GB, 8000 * GB, 160, "nvlink", 5, 900 * GB,
               "ml-engineering accelerator tables (GB300 SXM, per GPU); 288 GB HBM3e at 8 TB/s from NVIDIA's GB300 NVL72 page; special function units doubled (NVIDIA Blackwell Ultra softmax blog)"});
  g.back().sfu_scale = 2;
  // MI300X: Infinity Fabric (xGMI) has 7 links to its peers at 64 GB/s per direction each
  // (AMD Instinct MI300X data sheet: 896 GB/s aggregate bidirectional peer bandwidth).
  g.push_back({"MI300X", {"MI300X-OAM"}, kMI300XFlops, 192 * GB, 5300 * GB, 304, "xgmi", 0, 448 * GB,
               "ml-engineering accelerator tables (AMD MI300X): 192 GB HBM3 at 5.3 TB/s; AMD MI300X data sheet"});
  // Older and inference-class GPUs of the shared clusters whose traces Orrery replays (Philly,
  // Arena's heterogeneous cluster): NVIDIA V100 SXM2 datasheet (fp16 tensor 125 TFLOP/s, fp32 15.7,
  // no bf16; 32 GB HBM2 at 900 GB/s; 80 SMs; NVLink 2, 6 links x 25 GB/s per direction); A40
  // datasheet (fp16/bf16 tensor 149.7 TFLOP/s dense, tf32 74.8, fp32 37.4; 48 GB GDDR6 at 696 GB/s;
  // 84 SMs); A10 datasheet (fp16/bf16 tensor 125 dense, tf32 62.5, fp32 31.2; 24 GB GDDR6 at 600
  // GB/s; 72 SMs); T4 datasheet (fp16 tensor 65 TFLOP/s, fp32 8.1, no bf16; 16 GB GDDR6 at 320
  // GB/s; 40 SMs).
  g.push_back({"V100", {"V100-SXM2", "V100-32GB"}, {15.7 * T, 0, 0, 125 * T, 0}, 32 * GB, 900 * GB, 80, "nvlink", 2, 150 * GB,
               "NVIDIA V100 datasheet (SXM2 32GB)"});
  g.push_back({"A40", {}, {37.4 * T, 74.8 * T, 149.7 * T, 149.7 * T, 0}, 48 * GB, 696 * GB, 84, "", 0, 0, "NVIDIA A40 datasheet"});
  g.push_back({"A10", {}, {31.2 * T, 62.5 * T, 125 * T, 125 * T, 0}, 24 * GB, 600 * GB, 72, "", 0, 0, "NVIDIA A10 datasheet"});
  g.push_back({"T4", {}, {8.1 * T, 0, 0, 65 * T, 0}, 16 * GB, 320 * GB, 40, "", 0, 0, "NVIDIA T4 datasheet"});
  // Hosts, per GPU. DGX H100 / H200 (NVIDIA DGX H100 datasheet): 2 TB of DDR5 for 8 GPUs, two
  // Xeon Platinum 8480C of 8 DDR5-4800 channels each (2 x 8 x 38.4 GB/s = 614 GB/s), each GPU on
  // PCIe 5.0 x16 (64 GB/s per direction). DGX B200 (datasheet): 2 TB (to 4 TB), two Xeon Platinum
  // 8570 of 8 DDR5-5600 channels (717 GB/s), PCIe 5.0 x16. DGX A100 (datasheet): 1 TB (to 2 TB),
  // two EPYC 7742 of 8 DDR4-3200 channels (410 GB/s), PCIe 4.0 x16 (32 GB/s). GB200 / GB300 (NVIDIA
  // GB200 NVL72 page, Grace CPU datasheet): one Grace per two GPUs with 480 GB LPDDR5X at up to 512
  // GB/s, on NVLink-C2C of 900 GB/s (450 GB/s each way) shared by the two.
  // GEMM tiles: data-center Blackwell's tcgen05.mma with cta_group::2 computes a 256-row tile over
  // a pair of SMs, up to 256 columns (CUTLASS documentation, "Blackwell SM100 GEMMs": the 2-SM
  // MMA shapes), and its fastest GEMM kernels tile the output so; Hopper's and older GPUs' best
  // kernels tile by 128 (two consumer warpgroups of 64 rows each on Hopper).
  for (GpuSpec& x : g) {
    const auto host = [&](double memory, double bandwidth, double link) {
      x.host_memory_bytes = memory, x.host_memory_bandwidth = bandwidth, x.host_link_bandwidth = link;
    };
    if (x.name == "H100" || x.name == "H200" || x.name == "H800" || x.name == "H100-96GB-500W") host(2000 * GB / 8, 614.4 * GB / 8, 64 * GB);
    if (x.name == "B200" || x.name == "B300") host(2000 * GB / 8, 716.8 * GB / 8, 64 * GB);
    if (x.name == "A100-80GB" || x.name == "A100-40GB") host(1000 * GB / 8, 409.6 * GB / 8, 32 * GB);
    if (x.name == "GB200" || x.name == "GB300") host(480 * GB / 2, 512 * GB / 2, 450 * GB / 2);
    if (x.name == "B200" || x.name == "GB200" || x.name == "B300" || x.name == "GB300") x.gemm_tile = 256;
  }
  return g;
}
}  // namespace

std::string_view to_string(DType t) { return kDTypeNames[static_cast<std::size_t>(t)]; }

std::optional<DType> parse_dtype(std::string_view text) {
  for (std::size_t i = 0; i < kDTypeCount; ++i) {
    if (iequals(kDTypeNames[i], text)) return static_cast<DType>(i);
  }
  return std::nullopt;
}

std::vector<std::string> dtype_names() { return {kDTypeNames.begin(), kDTypeNames.end()}; }

double element_bytes(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32: return 4;
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp8: return 1;
    case DType::fp4: return 0.5;
  }
  return 4;
}

const HardwareCatalog& HardwareCatalog::builtin() {
  static const HardwareCatalog catalog = [] {
    HardwareCatalog c;
    c.gpus_ = builtin_gpus();
    return c;
  }();
  return catalog;
}

const GpuSpec* HardwareCatalog::find(std::string_view name) const {
  for (const GpuSpec& g : gpus_) {
    if (answers_to(g, name)) return &g;
  }
  return nullptr;
}

std::vector<std::string> HardwareCatalog::names() const {
  std::vector<std::string> out;
  for (const GpuSpec& g : gpus_) out.push_back(g.name);
  return out;
}

const GpuSpec& HardwareCatalog::gpu(std::string_view name, std::string_view source, std::string_view where) const {
  if (const GpuSpec* g = find(name)) return *g;
  std::vector<std::string> candidates;
  for (const GpuSpec& g : gpus_) {
    candidates.push_back(g.name);
    candidates.insert(candidates.end(), g.aliases.begin(), g.aliases.end());
  }
  throw sim::InputError(std::string(source), std::string(where),
                        fmt::format("unknown GPU {}{}; known: {}", sim::quote(name), sim::did_you_mean(name, candidates),
                                    fmt::join(names(), ", ")));
}

void HardwareCatalog::add_or_replace(GpuSpec spec) {
  for (GpuSpec& g : gpus_) {
    if (answers_to(g, spec.name)) {
      g = std::move(spec);
      return;
    }
  }
  gpus_.push_back(std::move(spec));
}

}  // namespace orrery::models
