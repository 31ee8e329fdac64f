// Step validation: Megatron-LM's published training throughput vs the step emulator.
#include "runs/runs.hpp"
#include "validation/validation.hpp"

#include "models/hardware/cost.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "traces/csv.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <ostream>

namespace orrery::validation {

using namespace runs;     // the runs each suite repeats

namespace {

struct StepRow {
  std::string source;
  std::string table;
  std::string what;
  double measured = 0;   // TFLOP/s per GPU, as published
  double simulated = 0;  // the same FLOP count over the simulated step time
  double step_s = 0;
  double mfu = 0;
  double line_rate_step_s = 0;  // with models::CommModel::flows, the communication model before NCCL's
  double line_rate_simulated = 0;
  std::string plan;
  std::string role = "prediction";
};

std::string where(const traces::CsvTable& t, std::size_t r) {
  return fmt::format("{}:{}", std::filesystem::path(t.source).filename().string(), t.lines[r]);
}

// One rule for every row (no per-row tuning): pipelines of more than one stage use Megatron's
// interleaved schedule with the most chunks, up to 8, that divide each stage's layers.
int virtual_stages(int layers, int pp) {
  if (pp == 1) return 1;
  for (int v = 8; v > 1; --v) {
    if (layers % (pp * v) == 0) return v;
  }
  return 1;
}

double simulate(models::StepScenario& sc, StepRow& row) {
  const int layers = sc.model.layers;
  sc.plan.vp = virtual_stages(layers, sc.plan.pp);
  sc.plan.schedule = sc.plan.vp > 1 ? "interleaved-1f1b" : "1f1b";
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"<validation>", "/plan/schedule"});
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu));
  const models::StepResult r = models::run_step(sc, cost, *schedule);
  models::StepOptions line_rate;
  line_rate.comm = models::CommModel::flows;
  row.line_rate_step_s = models::run_step(sc, cost, *schedule, line_rate).step_time.to_seconds();
  row.step_s = r.step_time.to_seconds();
  row.mfu = r.mfu;
  row.plan = fmt::format("tp{} pp{} vp{} dp{} mb{} m={}", sc.plan.tp, sc.plan.pp, sc.plan.vp, sc.plan.dp, sc.plan.micro_batch, r.micro_batches);
  return row.step_s;
}

// Megatron-LM 2024 (H100, Megatron-Core r0.8): GPT, sequence 4096, vocabulary 131072, with
// --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap (README), sequence parallelism,
// the distributed optimizer, flash attention, no recompute, micro-batch 1 (assumed: not stated),
// gradients reduced in bf16 (assumed: NVIDIA's performance recipes set DDP grad_reduce_in_fp32 =
// False, Megatron-Bridge scripts/performance; Megatron-LM's default for bf16 would be fp32).
// Its FLOPs per step (megatron/training/training.py, num_floating_point_operations):
// 12 B s L h^2 (2 + s/h + 4 + V/(2 L h)) for a GELU GPT with as many KV as query heads.
void h100_2024(const std::string& dir, std::vector<StepRow>& rows) {
  const auto t = traces::read_csv_file(dir + "/megatron-lm/megatron_core_h100_weak_scaling_2024.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    models::StepScenario sc;
    std::string size = t.at(r, "model_size");
    for (char& ch : size) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    sc.model = models::ModelCatalog::builtin().model("megatron2024-" + size);
    sc.gpu = models::HardwareCatalog::builtin().gpu("H100");
    models::ParallelPlan& p = sc.plan;
    p.tp = static_cast<int>(t.number(r, "tensor_mp_size"));
    p.pp = static_cast<int>(t.number(r, "pipeline_mp_size"));
    p.dp = static_cast<int>(t.number(r, "data_parallel_size"));
    p.global_batch = static_cast<int>(t.number(r, "batch_size"));
    p.micro_batch = 1;
    p.seq_len = 4096;
    p.zero = 1;
    p.sequence_parallel = true;
    p.overlap_tp_comm = true;
    p.grad_reduce = "bf16";
    p.recompute = models::Recompute::none;
    const int gpus = static_cast<int>(t.number(r, "num_gpus"));
    sc.topology = fmt::format("dgx-h100:nodes={}", gpus / 8);
    StepRow row;
    row.source = where(t, r);
    row.table = "Megatron-Core 2024, H100 weak scaling";
    row.what = fmt::format("GPT {} on {} H100", t.at(r, "model_size"), gpus);
    row.measured = t.number(r, "per_gpu_tflops");
    const double s = 4096, h = static_cast<double>(sc.model.hidden), L = sc.model.layers, V = 131072, B = p.global_batch;
    const double flops = 12 * B * s * L * h * h * (2 + s / h + 4 + V / (2 * L * h));
    const double step = simulate(sc, row);
    row.simulated = flops / step / gpus / 1e12;
    row.line_rate_simulated = flops / row.line_rate_step_s / gpus / 1e12;
    if (r == 0 || r + 1 == t.rows.size()) row.role = "calibration";
    rows.push_back(row);
  }
}

// Megatron-LM 2021 (A100 80GB, Selene; Narayanan et al. SC'21): GPT, sequence 2048, vocabulary
// 51200, full activation recomputation, tensor parallelism 8 within a server (the model-parallel
// size split as TP = min(8, MP), PP = MP / TP), no sequence parallelism, distributed optimizer
// or flash attention (all came later), micro-batch 1 (assumed); fp16 training, so gradients are
// all-reduced in fp16 (Megatron's arguments.py forces fp32 only for bf16). FLOPs per step (paper, eq. 3):
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
void a100_2021(const std::string& dir, std::vector<StepRow>& rows) {
  const auto t = traces::read_csv_file(dir + "/megatron-lm/megatron_lm_a100_weak_scaling_2021.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    models::StepScenario sc;
    std::string size = t.at(r, "model_size");
    for (char& ch : size) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    sc.model = models::ModelCatalog::builtin().model("megatron2021-" + size);
    sc.gpu = models::HardwareCatalog::builtin().gpu("A100-80GB");
    models::ParallelPlan& p = sc.plan;
    const int mp = static_cast<int>(t.number(r, "model_parallel_size"));
    const int gpus = static_cast<int>(t.number(r, "num_gpus"));
    p.tp = std::min(mp, 8);
    p.pp = mp / p.tp;
    p.dp = gpus / mp;
    p.global_batch = static_cast<int>(t.number(r, "batch_size"));
    p.micro_batch = 1;
    p.seq_len = 2048;
    p.zero = 0;
    p.sequence_parallel = false;
    p.flash_attention = false;
    p.overlap_tp_comm = false;
    p.grad_reduce = "fp16";
    p.recompute = models::Recompute::full;
    sc.topology = fmt::format("dgx-a100:nodes={},nic=200Gb/s", (gpus + 7) / 8);
    StepRow row;
    row.source = where(t, r);
    row.table = "Megatron-LM 2021, A100 weak scaling";
    row.what = fmt::format("GPT {} on {} A100", t.at(r, "model_size"), gpus);
    row.measured = t.number(r, "achieved_tflops_per_gpu");
    const double s = 2048, h = static_cast<double>(sc.model.hidden), l = sc.model.layers, V = 51200, B = p.global_batch;
    const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const double step = simulate(sc, row);
    row.simulated = flops / step / gpus / 1e12;
    row.line_rate_simulated = flops / row.line_rate_step_s / gpus / 1e12;
    if (r == 0 || r + 1 == t.rows.size()) row.role = "calibration";
    rows.push_back(row);
  }
}

}  // namespace

StepValidationSummary validate_steps(const std::string& data_dir, std::string& md, std::ostream& out) {
  if (!std::filesystem::is_directory(data_dir + "/megatron-lm")) {
    throw sim::InputError(data_dir, "", "expected the shared data folder with megatron-lm/ (see ../shared/data)");
  }
  std::vector<StepRow> rows;
  h100_2024(data_dir, rows);
  a100_2021(data_dir, rows);
  StepValidationSummary summary;
  for (const StepRow& row : rows) {
    if (summary.tables.empty() || summary.tables.back().name != row.table) summary.tables.push_back({row.table, 0, 0, 0, 0});
    auto& t = summary.tables.back();
    const double err = std::fabs(row.simulated / row.measured - 1);
    if (row.role == "calibration") {
      t.worst_calibration = std::max(t.worst_calibration, err);
    } else {
      t.mape += err;
      t.line_rate_mape += std::fabs(row.line_rate_simulated / row.measured - 1);
      ++t.rows;
    }
  }
  for (auto& t : summary.tables) t.mape /= t.rows, t.line_rate_mape /= t.rows;

  const models::RooflineParams h100 = models::training_roofline_params(models::HardwareCatalog::builtin().gpu("H100"));
  const models::RooflineParams a100 = models::training_roofline_params(models::HardwareCatalog::builtin().gpu("A100-80GB"));
  const auto us = [](const models::RooflineParams& q) { return q.kernel_overhead.to_seconds() * 1e6; };
  md += "## Training steps: step emulator vs Megatron-LM's published throughput\n\n";
  md += "Each row runs `models::run_step` with the roofline cost model (the kernel section's parameters, the same for\n"
        "every GPU) and NCCL's communication model (`models::CommModel::nccl`, the default: every collective as NCCL runs\n"
        "it, `models/network/nccl.hpp`, with the NCCL section's fitted shares and latencies) on the row's model, GPU count\n"
        "and parallel sizes, and converts the simulated step time to TFLOP/s per GPU with the source's own FLOP formula.\n"
        "Settings not in the tables are one rule for all rows (validation/validate_step.cpp): micro-batch 1; pipelines use\n"
        "the interleaved schedule with the most chunks (up to 8) dividing each stage's layers; 2024 runs overlap gradient\n"
        "reduction, parameter gathers and TP communication with sequence parallelism, the distributed optimizer and flash\n"
        "attention, and reduce gradients in bf16 (`plan.grad_reduce`; assumed from NVIDIA's performance recipes, which set\n"
        "DDP `grad_reduce_in_fp32 = False`); 2021 runs (fp16) use full recompute without those, reduce gradients in fp16\n"
        "(Megatron forces fp32 only for bf16), and unfused attention (its s x s scores written and read by separate softmax\n"
        "and dropout kernels, costed as memory-bound kernels).\n"
        "Kernels inside a training step run slower than in isolated benchmarks (framework dispatch, kernels the model\n"
        "does not list, less friendly shapes): per GPU type, a step efficiency and a per-kernel overhead\n";
  md += fmt::format("(`models::training_roofline_params`: H100 {:.4f} and {:.1f} us, A100 {:.4f} and {:.1f} us) are set by the two rows\n",
                    h100.step_efficiency, us(h100), a100.step_efficiency, us(a100));
  md += "marked *calibration* of that GPU's table (its smallest and its largest model); every other row is a prediction.\n\n";
  md += "The columns *line-rate* run the same rows with the communication model before NCCL's (`models::CommModel::flows`,\n"
        "`orrery step --comm line-rate`: every collective a ring, or direct sends, at the links' peak NCCL efficiency with\n"
        "the links' own latencies), at the same step efficiency and overhead: the difference is NCCL's latency, algorithm\n"
        "choice and fitted link shares alone.\n\n";
  md += "| table | predictions | MAPE | calibration rows within | MAPE with line-rate communication |\n|---|---|---|---|---|\n";
  for (const auto& t : summary.tables) {
    md += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% |\n", t.name, t.rows, 100 * t.mape, 100 * t.worst_calibration, 100 * t.line_rate_mape);
  }
  md += "\n| source | run | plan | measured TFLOP/s/GPU | simulated | error | role | simulated step | MFU | line-rate |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const StepRow& row : rows) {
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {} | {:.3f} s | {:.1f}% | {:.1f} ({:+.1f}%) |\n", row.source, row.what, row.plan,
                      row.measured, row.simulated, 100 * (row.simulated / row.measured - 1), row.role, row.step_s, 100 * row.mfu,
                      row.line_rate_simulated, 100 * (row.line_rate_simulated / row.measured - 1));
  }
  md += "\n";
  out << fmt::format("steps: {} rows in {} tables:\n", rows.size(), summary.tables.size());
  for (const auto& t : summary.tables) {
    out << fmt::format("  {:<40} {:>3} predictions, MAPE {:5.1f}% (calibration rows within {:.1f}%; with line-rate communication {:.1f}%)\n",
                       t.name, t.rows, 100 * t.mape, 100 * t.worst_calibration, 100 * t.line_rate_mape);
  }
  return summary;
}

}  // namespace orrery::validation
