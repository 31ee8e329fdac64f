// torchtitan's published runs (../shared/data/torchtitan: PyTorch-native FSDP2, TP, PP and CP
// training of Llama 3.1 8B, 70B and 405B on H100 96 GB hosts and H200) against the step
// emulator: tokens/s per GPU (leave-one-out, step_fit.hpp) and the peak memory per GPU.
#include "validation/step_fit.hpp"
#include "validation/common.hpp"
#include "validation/validation.hpp"

#include "models/hardware/cost.hpp"
#include "models/hardware/step_params.hpp"
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


// The caching allocator's fragmentation: the share of PyTorch's reserved memory no tensor
// occupies at the peak. GMLake (Guo et al., ASPLOS 2024, arXiv 2401.08156) removes 15% of it on
// average (up to 33%) across eight LLMs trained on A100 80 GB with recomputation, ZeRO, LoRA
// and offloading: PyTorch's allocator wastes at least that share. A stated model, the same for
// every row; nothing fitted on them.
constexpr double kAllocatorFragmentation = 0.15;

// The memory of a row's plan with the pipeline's micro-batches as the benchmarked torchtitan
// split them: at 9dec370 (the December 2024 tables, the only ones with PP)
// experimental.pipeline_parallel_microbatches defaults to the number of pipeline stages (pp x
// stages per rank), each micro-batch local_batch / that many sequences (config_manager.py:
// "The default value will be the number of pipeline stages"). Without PP, the step's memory.
models::MemoryEstimate titan_memory(const StepFitRow& row, int& micro_batch) {
  micro_batch = row.sc.plan.micro_batch;
  const int local = row.sc.plan.global_batch / row.sc.plan.dp;
  if (row.sc.plan.pp == 1 || local % row.sc.plan.virtual_stages() != 0) return row.memory;
  models::ParallelPlan p = row.sc.plan;
  p.micro_batch = micro_batch = local / p.virtual_stages();
  const auto schedule = policies::pipeline_schedules().create(p.schedule, {}, {row.source, "/plan/schedule"});
  return models::estimate_memory(p, row.sc.model, schedule->plan({p.pp, p.micro_batches(), p.vp}, row.source, "/plan/schedule"),
                                 models::fp8_any_layout(row.sc.gpu));
}

}  // namespace

// The allocator's reserved memory, which torchtitan prints (torch.cuda.memory_stats()
// "reserved_bytes.all.peak", torchtitan/metrics.py): the tensors the memory model counts at
// their peak over (1 - the fragmentation). The CUDA context and NCCL's buffers are outside
// PyTorch's pool, so the GPU does not enter.
double reserved_bytes(const models::MemoryEstimate& m, const models::GpuSpec& /*gpu*/) {
  return m.total() / (1 - kAllocatorFragmentation);
}

void torchtitan_fit_rows(const std::string& data_dir, StepFit& fit) {
  const std::string path = data_dir + "/torchtitan/torchtitan_llama3_h100_h200.csv";
  if (!std::filesystem::exists(path)) {
    throw sim::InputError(data_dir, "", "expected the shared data folder with torchtitan/ (see ../shared/data)");
  }
  const auto t = traces::read_csv_file(path);
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string where = fmt::format("{}:{}", std::filesystem::path(t.source).filename().string(), t.lines[r]);
    const std::string float8 = t.at(r, "float8");
    const std::string what = fmt::format("{} on {} {}, float8 {}, compile {}, async TP {}", t.at(r, "model"), t.at(r, "gpus"), t.at(r, "gpu"), float8,
                                         t.at(r, "compile"), t.at(r, "async_tp"));
    StepFitRow row;
    models::StepScenario& sc = row.sc;
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
    // torchtitan's "selective" AC is per-op selective in these runs: selective_ac_option "op" in
    // the llama3 train configs of both benchmarked commits (train_configs/llama3_8b.toml at
    // 9dec370, models/llama3/train_configs/llama3_8b.toml at e7c0cae), as "per-op-selective".
    p.recompute = ac == "full" ? models::Recompute::full : models::Recompute::op_selective;
    // Memory: FSDP2 as torchtitan applies it (fp32 sharded parameters as master weights, the root
    // gathered through the backward, PP stages kept gathered), and its loss: F.cross_entropy on
    // logits.float(), compiled with the model from June 2025 on (torchtitan/components/loss.py at
    // e7c0cae compiles it with training.compile) but not in December 2024 (train.py at 9dec370
    // leaves the loss uncompiled, its comment citing CUDA errors when it was compiled).
    p.sharding = "fsdp2";
    const std::string file = t.at(r, "source");
    const bool june_2025 = file.find("202506") != std::string::npos || file.find("2025-06") != std::string::npos;
    p.cross_entropy = june_2025 && t.at(r, "compile") == "yes" ? "compiled" : "eager";
    p.overlap_tp_comm = t.at(r, "async_tp") == "yes";
    // torchao float8: tensorwise dynamic scaling (an amax per tensor, as fp8 current scaling);
    // rowwise (a scale per row) taken as block-wise scaling; "+fsdp-fp8-allgather" all-gathers
    // the FSDP parameters in float8.
    p.precision = float8 == "none" ? "bf16" : float8.rfind("rowwise", 0) == 0 ? "fp8-block" : "fp8";
    p.fp8_param_gather = float8.find("fsdp-fp8-allgather") != std::string::npos;
    p.framework = t.at(r, "compile") == "yes" ? "pytorch-compile" : "pytorch";
    const std::string schedule = t.at(r, "pp_schedule");
    p.schedule = schedule.empty() ? "1f1b" : schedule;
    p.vp = schedule == "interleaved-1f1b" ? 2 : 1;  // two stages per rank (assumed: not printed)
    row.source = where;
    row.table = "torchtitan";
    row.group = fmt::format("{} {}", sc.gpu.name, p.precision);
    row.what = what;
    row.measured = t.number(r, "tokens_per_s_per_gpu");
    row.per_second = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len) / gpus;
    if (!t.at(r, "memory_gib").empty()) row.memory_gib = t.number(r, "memory_gib");
    row.plan = fmt::format("fsdp{} tp{} pp{}{} cp{} mb{} seq {}K {} {}{}", p.dp, p.tp, p.pp, p.vp > 1 ? fmt::format(" vp{}", p.vp) : "", p.cp,
                           p.micro_batch, p.seq_len / 1024, ac, p.precision, p.fp8_param_gather ? " fp8-gather" : "");
    fit.rows.push_back(std::move(row));  // fit_steps lists it with why if its step cannot run
  }
}

TorchtitanValidationSummary validate_torchtitan(const StepFit& fit, std::string& md, std::ostream& out) {
  const std::vector<const StepFitRow*> rows = fit.rows_of("torchtitan");
  const std::vector<std::string> missing_rows = fit.missing_of("torchtitan");
  TorchtitanValidationSummary summary;
  summary.rows = static_cast<int>(rows.size() + missing_rows.size());
  summary.run = static_cast<int>(rows.size());
  int with_memory = 0;
  double memory_worst = 0;
  std::string memory_worst_row;
  // The memory model's peak per row, its reserved GiB and its parts.
  std::vector<double> row_gib;
  std::vector<std::string> row_parts;
  for (const StepFitRow* row : rows) {
    int micro_batch = 0;
    const models::MemoryEstimate mem = titan_memory(*row, micro_batch);
    row_gib.push_back(reserved_bytes(mem, row->sc.gpu) / kGiB);
    row_parts.push_back(fmt::format("{:.1f} + {:.1f} + {:.1f} + max({:.1f}, {:.1f}){}", (mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes) / kGiB,
                                    mem.gathered_params_bytes / kGiB, mem.activations_bytes / kGiB, mem.logits_bytes / kGiB, mem.backward_bytes / kGiB,
                                    micro_batch != row->sc.plan.micro_batch ? fmt::format(" (micro-batches of {})", micro_batch) : ""));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StepFitRow* row = rows[i];
    const double err = std::fabs(row->loo / row->measured - 1);
    summary.mape += err;
    summary.worst = std::max(summary.worst, err);
    summary.fitted_mape += std::fabs(row->fitted / row->measured - 1);
    if (row->memory_gib > 0) {
      const double memory_err = std::fabs(row_gib[i] / row->memory_gib - 1);
      summary.memory_mape += memory_err;
      if (memory_err > memory_worst) memory_worst = memory_err, memory_worst_row = fmt::format("{}, {}", row->source, row->plan);
      ++with_memory;
    }
  }
  if (!rows.empty()) summary.mape /= static_cast<double>(rows.size()), summary.fitted_mape /= static_cast<double>(rows.size());
  if (with_memory > 0) summary.memory_mape /= with_memory;
  summary.memory_rows = with_memory;

  md += "### torchtitan (PyTorch FSDP2, TP, PP, CP; 2024-2025)\n\n";
  md += fmt::format(
      "Each row of ../shared/data/torchtitan runs as a step scenario ({} of {}): FSDP2 as ZeRO-3 over the data-parallel\n"
      "group (gradients reduced in fp32), TP with sequence parallelism, async TP as overlapped TP communication, ring CP,\n"
      "torchao float8 tensorwise as fp8 (current scaling) and rowwise as fp8-block, interleaved 1F1B with two stages per rank\n"
      "(assumed), PyTorch eager or torch.compile as the framework (`plan.framework`: pytorch, pytorch-compile), as\n"
      "validation/validate_torchtitan.cpp states them. H100 rows are Meta's 96 GB HBM2e parts at 500 W (H100-96GB-500W: H100\n"
      "SXM peaks, the power cap not modelled). Tokens/s per GPU are predicted leave-one-out as the steps section says.\n"
      "Memory: the printed peak (PyTorch's reserved memory) against the memory model's peak over 1 - {:.0f}%, the caching\n"
      "allocator's fragmentation (GMLake, ASPLOS 2024: 15% on average in LLM training), with FSDP2 as torchtitan applies it\n"
      "(fp32 sharded parameters as master weights; the root gathered through the backward; PP stages kept gathered, their\n"
      "gradients accumulated unsharded), per-op selective AC, the loss as each commit ran it (eager F.cross_entropy on fp32\n"
      "logits in Dec 2024, compiled in June 2025) and PP micro-batches as the Dec 2024 default split them (one per pipeline\n"
      "stage). The model's parts: sharded states + gathered parameters + kept activations + the larger of the loss's\n"
      "backward and a layer's backward. Nothing is fitted on memory.\n\n",
      rows.size(), summary.rows, 100 * kAllocatorFragmentation);
  md += fmt::format("Tokens/s per GPU: {} rows, leave-one-out MAPE {:.1f}% (worst {:.1f}%; fitted {:.1f}%). Peak memory: {} rows, MAPE {:.1f}% "
                    "(worst {:.1f}%: {}).\n\n",
                    rows.size(), 100 * summary.mape, 100 * summary.worst, 100 * summary.fitted_mape, with_memory, 100 * summary.memory_mape,
                    100 * memory_worst, memory_worst_row);
  md += "| source | run | plan | measured tokens/s/GPU | predicted (left out) | error | fitted | memory GiB | simulated | error | memory model's parts, GiB |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StepFitRow* row = rows[i];
    const double gib = row_gib[i];
    const std::string mem = row->memory_gib > 0 ? fmt::format("{:.1f} | {:.1f} | {:+.1f}% | {}", row->memory_gib, gib, 100 * (gib / row->memory_gib - 1), row_parts[i])
                                                : fmt::format("- | {:.1f} | - | {}", gib, row_parts[i]);
    md += fmt::format("| {} | {} | {} | {:.0f} | {:.0f} | {} | {:.0f} ({:+.1f}%) | {} |\n", row->source, row->what, row->plan, row->measured,
                      row->loo, loo_error_cell(*row), row->fitted, 100 * (row->fitted / row->measured - 1), mem);
  }
  md += fmt::format("\nNot run ({} rows){}\n", missing_rows.size(), missing_rows.empty() ? "." : ":");
  for (const std::string& m : missing_rows) md += "- " + m + "\n";
  md += "\n";
  out << fmt::format("torchtitan: {} of {} rows run; tokens/s per GPU leave-one-out MAPE {:.1f}% (worst {:.1f}%; fitted {:.1f}%), peak memory MAPE {:.1f}% ({} rows, "
                     "worst {:.1f}%)\n",
                     rows.size(), summary.rows, 100 * summary.mape, 100 * summary.worst, 100 * summary.fitted_mape, 100 * summary.memory_mape, with_memory,
                     100 * memory_worst);
  return summary;
}

}  // namespace orrery::validation
