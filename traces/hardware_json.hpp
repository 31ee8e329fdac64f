// GPU catalog files: add GPUs to the built-in catalog, or override built-in ones.
//   {"gpus": [
//     {"name": "H100-PCIe", "base": "H100",                 // start from a built-in GPU
//      "peak_flops": {"bf16": "756 TFLOP/s", "fp8": "1513 TFLOP/s"},
//      "hbm": "80 GB", "hbm_bandwidth": "2 TB/s", "sm_count": 114,
//      "nvlink_bandwidth": "300 GB/s", "source": "NVIDIA H100 PCIe datasheet"}]}
// Fields: name (required), base, aliases, peak_flops (per dtype: fp32 tf32 bf16 fp16 fp8; null
// = unsupported), hbm, hbm_bandwidth, sm_count, interconnect, nvlink_generation,
// nvlink_bandwidth, source. A GPU named like a built-in one overrides only the fields given; a
// new GPU without a base must give peak_flops (with bf16), hbm, hbm_bandwidth and sm_count.
#pragma once

#include "models/hardware/hardware.hpp"

#include <string>
#include <string_view>

namespace orrery::traces {

void merge_gpu_catalog(models::HardwareCatalog& catalog, std::string_view json_text, const std::string& source);
// The built-in catalog plus the GPUs of `path` (none when `path` is empty).
models::HardwareCatalog load_gpu_catalog(const std::string& path);

}  // namespace orrery::traces
