// Kernel validation: the roofline cost model against published kernel throughput.
#include "runs/runs.hpp"
#include "validation/common.hpp"
#include "validation/validation.hpp"

#include "models/hardware/cost.hpp"
#include "sim/error.hpp"
#include "traces/csv.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>

namespace orrery::validation {

using namespace runs;     // the runs each suite repeats

namespace {

struct KernelRow {
  std::string source;  // file:line
  std::string table;   // the table it belongs to (MAPE is per table)
  std::string what;
  double measured = 0;   // TFLOP/s
  double simulated = 0;  // TFLOP/s
  std::string role;      // calibration, prediction
  std::string note;
};

// Catalog names of the accelerators in mamf_matmul_tflops.csv that the catalog has.
const char* catalog_name(std::string_view accelerator) {
  static const std::map<std::string_view, const char*> names = {
      {"NVIDIA A100 SXM", "A100-80GB"}, {"NVIDIA H100 SXM", "H100"},   {"NVIDIA H200 SXM", "H200"},
      {"NVIDIA B200 SXM", "B200"},      {"NVIDIA GB200 SXM", "GB200"}, {"NVIDIA B300 SXM", "B300"}, {"AMD MI300X", "MI300X"}};
  const auto it = names.find(accelerator);
  return it == names.end() ? nullptr : it->second;
}

void mamf(const std::string& dir, std::vector<KernelRow>& rows, std::vector<std::string>& skipped) {
  const auto t = traces::read_csv_file(dir + "/ml-engineering/mamf_matmul_tflops.csv");
  const models::HardwareCatalog& catalog = models::HardwareCatalog::builtin();
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& accel = t.at(r, "Accelerator");
    const char* name = catalog_name(accel);
    if (name == nullptr || t.at(r, "MAMF").empty()) {
      skipped.push_back(fmt::format("{} {} {} ({})", where(t, r), t.at(r, "dtype"), accel,
                                    name == nullptr ? "not in the catalog" : "no measurement"));
      continue;
    }
    const auto dtype = models::parse_dtype(t.at(r, "dtype"));
    if (!dtype) throw sim::InputError(t.source, fmt::format("line {}", t.lines[r]), fmt::format("unknown dtype {}", t.at(r, "dtype")));
    const std::string& shape = t.at(r, "Best Shape MxNxK");
    long m = 0, n = 0, k = 0;
    if (std::sscanf(shape.c_str(), "%ldx%ldx%ld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) {
      throw sim::InputError(t.source, fmt::format("line {}", t.lines[r]), fmt::format("found shape {}, expected MxNxK", sim::quote(shape)));
    }
    const models::Kernel kernel = models::Kernel::gemm(m, n, k, *dtype);
    const models::RooflineCostModel model(catalog.gpu(name));
    const double seconds = model.terms(kernel).seconds();
    const bool calibration = std::string_view(name) == "H100" && (*dtype == models::DType::bf16 || *dtype == models::DType::fp8);
    rows.push_back({where(t, r), fmt::format("best-shape matmul ({})", t.at(r, "dtype")),
                    fmt::format("{} {}", name, models::describe(kernel)), t.number(r, "MAMF"), models::flops(kernel).value() / seconds / 1e12,
                    calibration ? "calibration" : "prediction", calibration ? (*dtype == models::DType::fp8 ? "sets gemm_efficiency_fp8" : "sets gemm_efficiency") : t.at(r, "Notes")});
  }
}

void flash_attention(const std::string& dir, std::vector<KernelRow>& rows) {
  const auto t = traces::read_csv_file(dir + "/flashattention/attention_kernel_tflops_a100_h100.csv");
  const models::HardwareCatalog& catalog = models::HardwareCatalog::builtin();
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& impl = t.at(r, "implementation");
    // State-of-the-art kernels only; the unfused and older ones are far from any roofline.
    if (impl != "FlashAttention-2" && impl != "FlashAttention-3" && impl != "cuDNN") continue;
    const std::string& value = t.at(r, "tflops");
    if (value.empty() || value == "OOM") continue;
    const bool a100 = t.at(r, "gpu").find("A100") != std::string::npos;
    const std::string& pass = t.at(r, "pass");
    const bool causal = t.at(r, "causal") == "1";
    const auto seqlen = static_cast<std::int64_t>(t.number(r, "seqlen"));
    const auto head_dim = static_cast<std::int64_t>(t.number(r, "head_dim"));
    const auto batch = static_cast<std::int64_t>(t.number(r, "batch_size"));
    const auto heads = static_cast<std::int64_t>(t.number(r, "num_heads"));
    const std::vector<std::int64_t> docs(static_cast<std::size_t>(batch), seqlen);
    const models::RooflineCostModel model(catalog.gpu(a100 ? "A100-80GB" : "H100"));
    const auto kernel = [&](models::Pass p) {
      return models::Kernel::attention(p, docs, heads, heads, head_dim, causal, models::DType::bf16);
    };
    double seconds = model.terms(kernel(models::Pass::forward)).seconds();
    if (pass == "fwd+bwd") seconds += model.terms(kernel(models::Pass::backward)).seconds();
    // The FlashAttention benchmark's FLOP count: 4 l^2 d heads batch forward, halved when
    // causal, x3.5 for forward plus backward (benchmarks/benchmark_flash_attention.py).
    const double fa_flops = 4.0 * static_cast<double>(seqlen) * static_cast<double>(seqlen) * static_cast<double>(head_dim * heads * batch) /
                            (causal ? 2 : 1) * (pass == "fwd+bwd" ? 3.5 : 1);
    const bool calibration = !causal && ((impl == "FlashAttention-3" && pass == "fwd" && !a100 &&
                                          ((head_dim == 128 && (seqlen == 16384 || seqlen == 512)) || (head_dim == 64 && seqlen == 16384))) ||
                                         (impl == "FlashAttention-2" && a100 && pass == "fwd+bwd" && head_dim == 128 && seqlen == 16384));
    rows.push_back({where(t, r), fmt::format("{} {}, {}", impl, pass, a100 ? "A100 80GB SXM4" : "H100 80GB SXM5"),
                    fmt::format("{}seqlen {} head_dim {}", causal ? "causal, " : "", seqlen, head_dim), t.number(r, "tflops"),
                    fa_flops / seconds / 1e12, calibration ? "calibration" : "prediction", ""});
  }
}

}  // namespace

KernelValidationSummary validate_kernels(const std::string& data_dir, std::string& md, std::ostream& out) {
  if (!std::filesystem::is_directory(data_dir + "/ml-engineering") || !std::filesystem::is_directory(data_dir + "/flashattention")) {
    throw sim::InputError(data_dir, "", "expected the shared data folder with ml-engineering/ and flashattention/ (see ../shared/data)");
  }
  std::vector<KernelRow> rows;
  std::vector<std::string> skipped;
  mamf(data_dir, rows, skipped);
  flash_attention(data_dir, rows);

  KernelValidationSummary summary;
  std::map<std::string, std::pair<double, int>> by_table;  // sum of |error|, predictions
  std::vector<std::string> order;
  for (const KernelRow& row : rows) {
    const double err = std::fabs(row.simulated / row.measured - 1);
    if (!by_table.contains(row.table)) order.push_back(row.table);
    auto& [sum, count] = by_table[row.table];
    if (row.role == "calibration") {
      summary.worst_calibration_error = std::max(summary.worst_calibration_error, err);
    } else {
      sum += err;
      ++count;
    }
  }
  for (const std::string& name : order) {
    const auto& [sum, count] = by_table[name];
    summary.tables.push_back({name, count, count > 0 ? sum / count : 0});
  }

  const models::RooflineParams p;
  md += "## Kernels: roofline cost model vs published throughput\n\n";
  md += fmt::format(
      "Each row costs the kernel with `RooflineCostModel` (models/hardware/cost.hpp) on the catalog GPU and converts the time\n"
      "to TFLOP/s the way the source counts FLOPs. Parameters: gemm efficiency {:.4f} (fp8 and fp4: {:.4f}) on 128-padded tiles; attention\n"
      "efficiency {:.4f} forward, {:.4f} backward, x L/(L+{:.1f}) for mean key tokens L per 128-token query tile,\n"
      "x d/(d+{:.2f}) for head dim d; {} per kernel. Each parameter is set by the rows marked *calibration*; every\n"
      "other row is a prediction. The model describes a state-of-the-art kernel for the GPU: FlashAttention-2 on\n"
      "H100 (not tuned for Hopper) and the AMD MI300X matmul (ROCm software) fall short of it, and the table shows\n"
      "by how much. `orrery calibrate` replaces these curves with measured ones.\n\n",
      p.gemm_efficiency, p.gemm_efficiency_fp8, p.attention_fwd_efficiency, p.attention_bwd_efficiency, p.attention_half_kv, p.attention_half_head_dim,
      sim::to_string(p.kernel_overhead));
  md += "| table | predictions | MAPE |\n|---|---|---|\n";
  for (const auto& t : summary.tables) md += fmt::format("| {} | {} | {:.1f}% |\n", t.name, t.predictions, 100 * t.mape);
  md += fmt::format("\nCalibration rows reproduce their measurement within {:.2f}%.\n\n", 100 * summary.worst_calibration_error);
  md += "| source | table | kernel | measured TFLOP/s | simulated TFLOP/s | error | role | note |\n|---|---|---|---|---|---|---|---|\n";
  for (const KernelRow& row : rows) {
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {} | {} |\n", row.source, row.table, row.what, row.measured, row.simulated,
                      100 * (row.simulated / row.measured - 1), row.role, row.note);
  }
  md += "\n### Not compared\n\n";
  for (const std::string& s : skipped) md += fmt::format("- {}\n", s);
  md += "\n";
  out << fmt::format("kernels: {} rows compared in {} tables:\n", rows.size(), summary.tables.size());
  for (const auto& t : summary.tables) out << fmt::format("  {:<40} {:>3} predictions, MAPE {:5.1f}%\n", t.name, t.predictions, 100 * t.mape);
  return summary;
}

}  // namespace orrery::validation
