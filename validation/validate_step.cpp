// Step validation: Megatron-LM's published training throughput vs the step emulator.
#include "runs/runs.hpp"
#include "validation/step_fit.hpp"
#include "validation/common.hpp"
#include "validation/validation.hpp"

#include "models/training/step.hpp"
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

void set_schedule(models::ParallelPlan& p, int layers) {
  p.vp = virtual_stages(layers, p.pp);
  p.schedule = p.vp > 1 ? "interleaved-1f1b" : "1f1b";
}

std::string plan_text(const models::ParallelPlan& p) {
  return fmt::format("tp{} pp{} vp{} dp{} mb{} m={}", p.tp, p.pp, p.vp, p.dp, p.micro_batch, p.micro_batches());
}

// Megatron-LM 2024 (H100, Megatron-Core r0.8): GPT, sequence 4096, vocabulary 131072, with
// --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap (README), sequence parallelism,
// the distributed optimizer, flash attention, no recompute, micro-batch 1 (assumed: not stated),
// gradients reduced in bf16 (assumed: NVIDIA's performance recipes set DDP grad_reduce_in_fp32 =
// False, Megatron-Bridge scripts/performance; Megatron-LM's default for bf16 would be fp32).
// Its FLOPs per step (megatron/training/training.py, num_floating_point_operations):
// 12 B s L h^2 (2 + s/h + 4 + V/(2 L h)) for a GELU GPT with as many KV as query heads.
void h100_2024(const std::string& dir, StepFit& fit) {
  const auto t = traces::read_csv_file(dir + "/megatron-lm/megatron_core_h100_weak_scaling_2024.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    StepFitRow row;
    models::StepScenario& sc = row.sc;
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
    // The loss op by op: the README's runs do not pass --cross-entropy-loss-fusion, off by
    // default in Megatron-Core r0.8 (megatron/training/arguments.py, core_r0.8.0).
    p.cross_entropy = "unfused";
    set_schedule(p, sc.model.layers);
    const int gpus = static_cast<int>(t.number(r, "num_gpus"));
    sc.topology = fmt::format("dgx-h100:nodes={}", gpus / 8);
    row.source = sc.source = where(t, r);
    row.table = row.group = "Megatron-Core 2024, H100 weak scaling";
    row.what = fmt::format("GPT {} on {} H100", t.at(r, "model_size"), gpus);
    row.plan = plan_text(p);
    row.measured = t.number(r, "per_gpu_tflops");
    const double s = 4096, h = static_cast<double>(sc.model.hidden), L = sc.model.layers, V = 131072, B = p.global_batch;
    row.per_second = 12 * B * s * L * h * h * (2 + s / h + 4 + V / (2 * L * h)) / gpus / 1e12;
    fit.rows.push_back(std::move(row));
  }
}

// Megatron-LM 2021 (A100 80GB, Selene; Narayanan et al. SC'21): GPT, sequence 2048, vocabulary
// 51200, full activation recomputation, tensor parallelism 8 within a server (the model-parallel
// size split as TP = min(8, MP), PP = MP / TP), no sequence parallelism, distributed optimizer
// or flash attention (all came later), micro-batch 1 (assumed); fp16 training, so gradients are
// all-reduced in fp16 (Megatron's arguments.py forces fp32 only for bf16). FLOPs per step (paper, eq. 3):
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
void a100_2021(const std::string& dir, StepFit& fit) {
  const auto t = traces::read_csv_file(dir + "/megatron-lm/megatron_lm_a100_weak_scaling_2021.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    StepFitRow row;
    models::StepScenario& sc = row.sc;
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
    p.cross_entropy = "unfused";  // Megatron-LM's vocab-parallel cross entropy of 2021, op by op
    set_schedule(p, sc.model.layers);
    sc.topology = fmt::format("dgx-a100:nodes={},nic=200Gb/s", (gpus + 7) / 8);
    row.source = sc.source = where(t, r);
    row.table = row.group = "Megatron-LM 2021, A100 weak scaling";
    row.what = fmt::format("GPT {} on {} A100", t.at(r, "model_size"), gpus);
    row.plan = plan_text(p);
    row.measured = t.number(r, "achieved_tflops_per_gpu");
    const double s = 2048, h = static_cast<double>(sc.model.hidden), l = sc.model.layers, V = 51200, B = p.global_batch;
    row.per_second = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) / gpus / 1e12;
    fit.rows.push_back(std::move(row));
  }
}

}  // namespace

void megatron_fit_rows(const std::string& data_dir, StepFit& fit) {
  if (!std::filesystem::is_directory(data_dir + "/megatron-lm")) {
    throw sim::InputError(data_dir, "", "expected the shared data folder with megatron-lm/ (see ../shared/data)");
  }
  h100_2024(data_dir, fit);
  a100_2021(data_dir, fit);
}

StepValidationSummary validate_steps(const StepFit& fit, std::string& md, std::ostream& out) {
  std::vector<StepFitRow> rows;
  for (const StepFitRow& row : fit.rows) {
    if (row.table.rfind("Megatron-", 0) == 0 && row.table != "Megatron-Bridge") rows.push_back(row);
  }
  StepValidationSummary summary;
  for (const StepFitTable& t : step_fit_tables(rows, false)) summary.tables.push_back({t.table, t.rows, t.loo_mape, t.worst_loo, t.fitted_mape});

  md += "## Training steps: step emulator vs published training throughput\n\n";
  md += "Each row of the public training tables runs `models::run_step` as a scenario: the roofline cost model with the fitted\n"
        "step parameters (models/hardware/step_params.json, `models::training_roofline_params`) and NCCL's communication model\n"
        "(`models::CommModel::nccl`, the default). The step parameters are a few physical quantities per GPU architecture\n"
        "(Ampere, Hopper, Blackwell) and framework (Megatron, PyTorch): the fraction of the dtype's peak a linear layer's GEMM\n"
        "sustains per precision, a multiplier on the isolated flash-attention efficiency, the fraction of HBM bandwidth a\n"
        "memory-bound kernel sustains, a per-kernel gap on the GPU, the share of overlapped TP/CP communication that hides\n"
        "and, apart, of the expert all-to-alls overlapped with the other micro-batch (NCCL's or DeepEP's kernels beside the\n"
        "compute, where TP overlap is Transformer Engine's userbuffers),\n"
        "the grouped (MoE) GEMMs' efficiency relative to plain ones, and the host's time to issue one of the kernels the model\n"
        "counts (a GEMM, an attention or a fused memory-bound kernel: Transformer Engine runs a module's Python and several\n"
        "launches around each; NVIDIA/TransformerEngine issue 2053 finds steps CPU-bound on Grace), which costs a step only\n"
        "where it exceeds the GPU's queued work (a MoE layer's forward waits for the device: its token counts) and nothing\n"
        "in a CUDA graph, and the host's time for each further GEMM a grouped GEMM launches from its C++ loop (Transformer\n"
        "Engine runs one cuBLAS GEMM per local expert, nvte_multi_stream_cublas_gemm, inside one module); each starts from its isolated-kernel value (`models::step_parameter_prior`), which also weakly\n"
        "holds any the rows do not determine. Megatron's FP8 and MXFP8 GEMM efficiencies are also tied to the same\n"
        "architecture's bf16 one (`models::step_parameter_tie`): their ratio is pulled, within 1.1x, towards what the maximum\n"
        "achievable matmul FLOPS table measures at both precisions (../shared/data/ml-engineering/mamf_matmul_tflops.csv:\n"
        "0.907 on Hopper, 0.974 on Blackwell, each a mean over three GPUs). On Blackwell no dense model runs in bf16, so the\n"
        "bf16 efficiency and the grouped GEMMs' factor were held apart by the MoE rows alone: untied, the fit without\n"
        "GPT-OSS's MXFP8 rows traded one for the other (step parameters v21: bf16 0.47, grouped GEMMs 1.0, against 0.64\n"
        "and 0.48 with them).\n"
        "A refit starts from the priors, and once more with the host's time at its prior\n"
        "times its spread squared (it binds nowhere at the prior, where the rows cannot move it), keeping the fit of lower cost.\n"
        "It fits each parameter block apart (one architecture and framework: the configurations that share parameters). No row\n"
        "depends on two blocks' parameters, so the all-rows optimum is each block's own; fitted together, one trial's\n"
        "acceptance and damping waited on every block (version 20's exact leave-one-out fits, run so, stopped short of\n"
        "their optimum; its all-rows values differ from these by at most 2% on Blackwell, more on Hopper).\n\n";
  md += fmt::format(
      "**Leave one out.** The parameters are fitted on every row of the Megatron-LM, Megatron-Bridge and torchtitan tables\n"
      "together ({} rows, {} distinct configurations, {} parameters; validation/step_fit.cpp): least squares on\n"
      "ln(simulated / measured), derivatives by simulation. Each row's *prediction* is simulated with the parameters fitted\n"
      "without its configuration (a configuration's repeated rows, such as two releases printing the same run, are left out\n"
      "together). The refit makes each of those fits: Levenberg-Marquardt from the all-rows fit on every other row that\n"
      "shares a parameter with it, each trial simulated, the all-rows Jacobian kept (a chord method; `orrery validate --only\n"
      "steps --check-loo ROWS` sets it beside a fit re-linearised at every step). Where that prediction errs by more than {:.0f}%\n"
      "on a row, the refit fits the configuration again re-linearised at every step, on every other row of its block, and keeps that\n"
      "(*exact* in the error column: {} configurations). step_params.json stores the values each\n"
      "configuration's step uses{}. *fitted* is the all-rows fit's value (in-sample). A single Gauss-Newton step\n"
      "from the all-rows fit would not do: the linearised problem's optimum lies {:.4f} (largest change in ln) from the\n"
      "fit, because the 5% finite differences straddle the points where an op's time passes from the GPU's work to the\n"
      "host's, and such a step carries that offset into every prediction.\n\n",
      fit.rows.size(), fit.configurations, fit.fitted_names.size(), 100 * kExactLooAbove, fit.params.leave_one_out_exact.size(),
      fit.loo_one_step == 0 ? ""
                            : fmt::format(" ({} configurations the file has none for, rows added since the refit, take one Gauss-Newton "
                                          "step from the all-rows fit instead)",
                                          fit.loo_one_step),
      fit.optimum_distance);
  md += "| parameter | value | rows |\n|---|---|---|\n";
  for (const std::string& name : fit.fitted_names) {
    const auto it = fit.params.values.find(name);
    if (it == fit.params.values.end()) continue;
    md += fmt::format("| {} | {:.4g} | {} |\n", name, it->second.value, it->second.rows.size());
  }
  md += "\n### Megatron-LM's tables\n\n";
  md += "Settings not in the tables are one rule for all rows (validation/validate_step.cpp): micro-batch 1; pipelines use\n"
        "the interleaved schedule with the most chunks (up to 8) dividing each stage's layers; 2024 runs overlap gradient\n"
        "reduction, parameter gathers and TP communication with sequence parallelism, the distributed optimizer and flash\n"
        "attention, and reduce gradients in bf16 (`plan.grad_reduce`; assumed from NVIDIA's performance recipes, which set\n"
        "DDP `grad_reduce_in_fp32 = False`); 2021 runs (fp16) use full recompute without those, reduce gradients in fp16\n"
        "(Megatron forces fp32 only for bf16), and unfused attention (its s x s scores written and read by separate softmax\n"
        "and dropout kernels, costed as memory-bound kernels). Figures are TFLOP/s per GPU with the source's own FLOP formula.\n\n";
  md += "| table | rows | leave-one-out MAPE | worst | fitted MAPE |\n|---|---|---|---|---|\n";
  for (const auto& t : summary.tables) {
    md += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% |\n", t.name, t.rows, 100 * t.mape, 100 * t.worst, 100 * t.fitted_mape);
  }
  md += "\n| source | run | plan | measured TFLOP/s/GPU | predicted (left out) | error | fitted | simulated step | MFU |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  for (const StepFitRow& row : rows) {
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {} | {:.1f} ({:+.1f}%) | {:.3f} s | {:.1f}% |\n", row.source, row.what, row.plan,
                      row.measured, row.loo, loo_error_cell(row), row.fitted, 100 * (row.fitted / row.measured - 1), row.step_s,
                      100 * row.mfu);
  }
  md += "\n";
  out << fmt::format("steps: {} rows in {} tables (leave-one-out):\n", rows.size(), summary.tables.size());
  for (const auto& t : summary.tables) {
    out << fmt::format("  {:<40} {:>3} rows, MAPE {:5.1f}% (worst {:.1f}%; fitted {:.1f}%)\n", t.name, t.rows, 100 * t.mape, 100 * t.worst,
                       100 * t.fitted_mape);
  }
  return summary;
}

}  // namespace orrery::validation
