// torchtitan's published runs (../shared/data/torchtitan: PyTorch-native FSDP2, TP, PP and CP
// training of Llama 3.1 8B, 70B and 405B on H100 96 GB hosts and H200) against the step
// emulator: tokens/s per GPU and the peak memory per GPU. Nothing is fitted on these rows.
#include "validation/validation.hpp"

#include "models/hardware/cost.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "traces/csv.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <ostream>

namespace orrery::validation {

namespace {

struct TitanRow {
  std::string source, what, plan, note;
  double measured = 0, simulated = 0;
  double memory_gib = 0, simulated_gib = 0;  // measured 0: not printed
};

constexpr double kGiB = 1073741824.0;

}  // namespace

// The allocator's reserved memory, as this validation states it: the tensors the memory model
// counts at their peak plus the budget's fragmentation share of HBM (kMemoryReserveFraction);
// the fixed part of the budget's reserve (CUDA context, NCCL buffers) is outside PyTorch's
// reserved pool, which is what torchtitan prints (torch.cuda.max_memory_reserved).
double reserved_bytes(const models::MemoryEstimate& m, const models::GpuSpec& gpu) {
  return m.total() + models::kMemoryReserveFraction * gpu.hbm_bytes;
}

TorchtitanValidationSummary validate_torchtitan(const std::string& data_dir, std::string& md, std::ostream& out) {
  const std::string path = data_dir + "/torchtitan/torchtitan_llama3_h100_h200.csv";
  if (!std::filesystem::exists(path)) {
    throw sim::InputError(data_dir, "", "expected the shared data folder with torchtitan/ (see ../shared/data)");
  }
  const auto t = traces::read_csv_file(path);
  std::vector<TitanRow> rows;
  std::vector<std::string> missing_rows;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string where = fmt::format("{}:{}", std::filesystem::path(t.source).filename().string(), t.lines[r]);
    const std::string float8 = t.at(r, "float8");
    const std::string what = fmt::format("{} on {} {}, float8 {}, compile {}, async TP {}", t.at(r, "model"), t.at(r, "gpus"), t.at(r, "gpu"), float8,
                                         t.at(r, "compile"), t.at(r, "async_tp"));
    models::StepScenario sc;
    sc.model = models::ModelCatalog::builtin().model(t.at(r, "model"), where, "model");
    sc.gpu = models::HardwareCatalog::builtin().gpu(t.at(r, "gpu"), where, "gpu");
    const int gpus = static_cast<int>(t.number(r, "gpus"));
    const bool h200 = sc.gpu.name == "H200";
    sc.topology = fmt::format("dgx-{}:nodes={}", h200 ? "h200" : "h100", std::max(1, gpus / 8));
    sc.source = where;
    models::ParallelPlan& p = sc.plan;
    p.tp = static_cast<int>(t.number(r, "tp"));
    p.pp = static_cast<int>(t.number(r, "pp"));
    p.cp = static_cast<int>(t.number(r, "cp"));
    p.dp = static_cast<int>(t.number(r, "fsdp"));
    const int local = static_cast<int>(t.number(r, "local_batch"));
    // FSDP2 (fully_shard, FULL_SHARD) is ZeRO-3 over the data-parallel group, gradients reduced
    // in fp32 (torchtitan's mixed_precision_reduce default); TP with sequence parallelism for
    // the norms; ring attention for CP. Without PP one micro-batch of the local batch; with PP
    // micro-batches of one sequence (torchtitan's pipeline_parallel_microbatch_size default).
    p.zero = 3;
    p.grad_reduce = "fp32";
    p.sequence_parallel = p.tp > 1;
    p.micro_batch = p.pp > 1 ? 1 : local;
    p.global_batch = local * p.dp;
    p.seq_len = static_cast<std::int64_t>(t.number(r, "seq_len"));
    const std::string ac = t.at(r, "recompute");
    p.recompute = ac == "full" ? models::Recompute::full : models::Recompute::selective;
    p.overlap_tp_comm = t.at(r, "async_tp") == "yes";
    // torchao float8: tensorwise dynamic scaling (an amax per tensor, as fp8 current scaling);
    // rowwise (a scale per row) taken as block-wise scaling; "+fsdp-fp8-allgather" all-gathers
    // the FSDP parameters in float8.
    p.precision = float8 == "none" ? "bf16" : float8.rfind("rowwise", 0) == 0 ? "fp8-block" : "fp8";
    p.fp8_param_gather = float8.find("fsdp-fp8-allgather") != std::string::npos;
    const std::string schedule = t.at(r, "pp_schedule");
    p.schedule = schedule.empty() ? "1f1b" : schedule;
    p.vp = schedule == "interleaved-1f1b" ? 2 : 1;  // two stages per rank (assumed: not printed)
    TitanRow row;
    row.source = where;
    row.what = what;
    row.measured = t.number(r, "tokens_per_s_per_gpu");
    if (!t.at(r, "memory_gib").empty()) row.memory_gib = t.number(r, "memory_gib");
    row.plan = fmt::format("fsdp{} tp{} pp{}{} cp{} mb{} {} {}{}", p.dp, p.tp, p.pp, p.vp > 1 ? fmt::format(" vp{}", p.vp) : "", p.cp,
                           p.micro_batch, ac, p.precision, p.fp8_param_gather ? " fp8-gather" : "");
    if (t.at(r, "compile") == "yes") row.note = "torch.compile's fusions not modelled";
    try {
      const auto sched = policies::pipeline_schedules().create(p.schedule, {}, {where, "/plan/schedule"});
      const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu));
      const models::StepResult s = models::run_step(sc, cost, *sched);
      row.simulated = s.tokens_per_s / gpus;
      row.simulated_gib = reserved_bytes(s.memory, sc.gpu) / kGiB;
    } catch (const sim::InputError& e) {
      missing_rows.push_back(fmt::format("{} ({}): {}", where, what, e.what()));
      continue;
    }
    rows.push_back(row);
  }

  TorchtitanValidationSummary summary;
  summary.rows = static_cast<int>(t.rows.size());
  summary.run = static_cast<int>(rows.size());
  int with_memory = 0;
  for (const TitanRow& row : rows) {
    const double err = std::fabs(row.simulated / row.measured - 1);
    summary.mape += err;
    summary.worst = std::max(summary.worst, err);
    if (row.memory_gib > 0) {
      summary.memory_mape += std::fabs(row.simulated_gib / row.memory_gib - 1);
      ++with_memory;
    }
  }
  if (!rows.empty()) summary.mape /= static_cast<double>(rows.size());
  if (with_memory > 0) summary.memory_mape /= with_memory;
  summary.memory_rows = with_memory;

  md += "### torchtitan (PyTorch FSDP2, TP, PP, CP; 2024-2025): predictions\n\n";
  md += fmt::format(
      "Each row of ../shared/data/torchtitan runs as a step scenario ({} of {}): FSDP2 as ZeRO-3 over the data-parallel\n"
      "group (gradients reduced in fp32), TP with sequence parallelism, async TP as overlapped TP communication, ring CP,\n"
      "torchao float8 tensorwise as fp8 (current scaling) and rowwise as fp8-block, interleaved 1F1B with two stages per rank\n"
      "(assumed), as validation/validate_torchtitan.cpp states them. H100 rows are Meta's 96 GB HBM2e parts at 500 W\n"
      "(H100-96GB-500W: H100 SXM peaks, the power cap not modelled). Nothing is fitted on these rows. Memory: the printed\n"
      "peak (PyTorch's reserved memory) against the memory model's peak plus {:.0f}% of HBM for the caching allocator\n"
      "(a stated model).\n\n",
      rows.size(), t.rows.size(), 100 * models::kMemoryReserveFraction);
  md += fmt::format("Tokens/s per GPU: {} rows, MAPE {:.1f}% (worst {:.1f}%). Peak memory: {} rows, MAPE {:.1f}%.\n\n", rows.size(),
                    100 * summary.mape, 100 * summary.worst, with_memory, 100 * summary.memory_mape);
  md += "| source | run | plan | measured tokens/s/GPU | simulated | error | memory GiB | simulated | error | note |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const TitanRow& row : rows) {
    const std::string mem = row.memory_gib > 0 ? fmt::format("{:.1f} | {:.1f} | {:+.1f}%", row.memory_gib, row.simulated_gib,
                                                             100 * (row.simulated_gib / row.memory_gib - 1))
                                               : fmt::format("- | {:.1f} | -", row.simulated_gib);
    md += fmt::format("| {} | {} | {} | {:.0f} | {:.0f} | {:+.1f}% | {} | {} |\n", row.source, row.what, row.plan, row.measured, row.simulated,
                      100 * (row.simulated / row.measured - 1), mem, row.note);
  }
  md += fmt::format("\nNot run ({} rows){}\n", missing_rows.size(), missing_rows.empty() ? "." : ":");
  for (const std::string& m : missing_rows) md += "- " + m + "\n";
  md += "\n";
  out << fmt::format("torchtitan: {} of {} rows run; tokens/s per GPU MAPE {:.1f}% (worst {:.1f}%), peak memory MAPE {:.1f}% ({} rows)\n",
                     rows.size(), t.rows.size(), 100 * summary.mape, 100 * summary.worst, 100 * summary.memory_mape, with_memory);
  return summary;
}

}  // namespace orrery::validation
