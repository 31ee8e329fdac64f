// Calibration profiles: what a harness measured on one device, with everything needed to know
// whether the numbers still hold (device identity, driver/CUDA/library versions, clocks, date).
//   {"schema": "orrery.profile/1", "harness": "cuda", "device": "NVIDIA H200",
//    "identity": {"uuid": "GPU-...", "compute_capability": "9.0", "sm_count": "132", ...},
//    "software": {"driver": "580.65", "cuda_runtime": "13.0", "cublas": "13.0.0", ...},
//    "clocks": {"sm_mhz": "1980", "memory_mhz": "3201"}, "date": "2026-11-30T06:00:00Z",
//    "points": [{"kind": "gemm", "dtype": "bf16", "shape": {"m": 4096, "n": 4096, "k": 4096},
//                "median_s": 1.6e-4, "p10_s": 1.58e-4, "p90_s": 1.63e-4, "repetitions": 50}],
//    "collectives": [{"op": "all-reduce", "bytes": 1073741824, "ranks": 8, "median_s": ..., ...}]}
// Shapes by kind: gemm {m, n, k, batch}; grouped_gemm {m: [rows per group], n, k}; attention
// {seqlen, batch} or {docs: [lengths]}, plus heads, kv_heads, head_dim, head_dim_v, causal;
// memory-bound kinds {bytes}; optimizer {params}.
#pragma once

#include "models/hardware/kernel.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orrery::calibration {

inline constexpr std::string_view kProfileSchema = "orrery.profile/1";

struct Measurement {
  models::Kernel kernel;
  double median_s = 0;
  double p10_s = 0;  // spread: 10th and 90th percentiles of the repetitions
  double p90_s = 0;
  int repetitions = 0;
};

using Fields = std::vector<std::pair<std::string, std::string>>;

// A collective measured with NCCL (when the harness saw more than one GPU). Not fitted into
// kernel curves: the network model is validated against collectives on its own.
struct CollectiveMeasurement {
  std::string op;  // "all-reduce", ...
  double bytes = 0;
  int ranks = 0;
  double median_s = 0, p10_s = 0, p90_s = 0;
  int repetitions = 0;
};

struct Profile {
  std::string harness;  // "cpu" or "cuda"
  std::string device;
  Fields identity;
  Fields software;
  Fields clocks;
  std::string date;  // ISO 8601, UTC
  std::vector<Measurement> points;
  std::vector<CollectiveMeasurement> collectives;
};

Profile read_profile(std::string_view json_text, const std::string& source);
Profile load_profile(const std::string& path);
std::string profile_to_json(const Profile&);
void write_profile(const Profile&, const std::string& path);

// Now, as an ISO 8601 UTC timestamp ("2026-11-30T06:00:00Z"), for a profile's date.
std::string utc_now_iso8601();

// Median and 10th/90th percentiles of repeated timings (seconds); `samples` is reordered.
Measurement summarize(const models::Kernel& kernel, std::vector<double>& samples);

}  // namespace orrery::calibration
