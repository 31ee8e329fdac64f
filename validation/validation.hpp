// `orrery validate`: Orrery's predictions against published measurements (../shared/data), one
// suite per subject, each appending a markdown section of docs/validation.md and returning the
// figures its tests check.
//   std::string md;  const auto net = validation::validate_network("../shared/data", md, std::cout);
#pragma once

#include "models/multimodal/multimodal.hpp"
#include "models/network/nccl.hpp"
#include "models/training/parallel.hpp"

#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace orrery::validation {

struct ValidateOptions {
  std::string data_dir = "../shared/data";
  std::string out_path;  // markdown tables; empty: summary only
  std::string only;      // "network", "kernels", or empty for both
  bool print_fit = false; // nccl: print the fitted parameters in full
  bool refit = false;      // steps: fit the step parameters afresh (else the built-in file's)
  std::string params_out;  // steps: write the parameters used to this file (step_params.json's format)
  std::vector<std::string> check_loo;  // steps: configurations (first rows) to also leave out exactly
};

struct ValidationSummary {
  int held = 0;    // predictions at >= 1 GiB
  int within = 0;  // ... of them within 10%
  std::vector<std::string> misses;  // "file:line system" of the others
};

// Compares simulated collective bandwidth with the published measurements in data_dir;
// appends a markdown section.
ValidationSummary validate_network(const std::string& data_dir, std::string& markdown, std::ostream& out);

// Runs the network and kernel validations and writes docs/validation.md (--out).
void validate(const ValidateOptions& options, std::ostream& out);

struct KernelValidationSummary {
  struct Table {
    std::string name;     // "FlashAttention-2 fwd+bwd, A100 80GB SXM4"
    int predictions = 0;  // rows not used for calibration
    double mape = 0;      // over the predictions
  };
  std::vector<Table> tables;
  double worst_calibration_error = 0;  // rows that set a parameter must be reproduced
};

// Compares the roofline cost model with published kernel measurements (FlashAttention
// TFLOP/s vs sequence length; best-shape matmul TFLOP/s); appends a markdown section.
KernelValidationSummary validate_kernels(const std::string& data_dir, std::string& markdown, std::ostream& out);

struct StepValidationSummary {
  struct Table {
    std::string name;
    int rows = 0;
    double mape = 0;         // leave-one-out predictions
    double worst = 0;        // ... their worst row
    double fitted_mape = 0;  // the all-rows fit's (in-sample)
  };
  std::vector<Table> tables;
};
struct StepFit;  // step_fit.hpp

// Megatron-Bridge's published runs (../shared/data/megatron-bridge): every row Orrery can
// express runs as a scenario, the others are listed with what is missing; errors are of
// leave-one-out predictions. Appends a markdown section (after validate_steps', in the same run).
struct BridgeValidationSummary {
  int rows = 0;        // in the table
  int run = 0;         // run as scenarios
  double mape = 0;     // tokens/s per GPU over the rows run
  double worst = 0;
  struct Model {
    int rows = 0;
    double mape = 0;
  };
  std::map<std::string, Model> by_model;  // catalog model -> its rows run and their MAPE
  double fitted_mape = 0;  // the all-rows fit's (in-sample)
  struct Group {
    int rows = 0;
    double mape = 0, worst = 0;
  };
  std::map<std::string, Group> groups;  // "H100", "FP8", "lora", ...: leave-one-out
  // The least error one value per configuration reaches (plans printed for several releases
  // differ): the mean and the worst row.
  double release_floor = 0, release_floor_worst = 0;
};
BridgeValidationSummary validate_bridge(const StepFit& fit, std::string& markdown, std::ostream& out);

// torchtitan's runs (../shared/data/torchtitan): tokens/s per GPU and peak memory per GPU.
struct TorchtitanValidationSummary {
  int rows = 0;
  int run = 0;
  double mape = 0;         // tokens/s per GPU
  double worst = 0;
  int memory_rows = 0;     // rows that print their peak memory
  double memory_mape = 0;  // against the memory model plus the allocator's share (reserved_bytes)
  double fitted_mape = 0;  // tokens/s, the all-rows fit's (in-sample)
};
TorchtitanValidationSummary validate_torchtitan(const StepFit& fit, std::string& markdown, std::ostream& out);
// PyTorch's reserved memory as the torchtitan validation models it: the memory model's peak plus
// kMemoryReserveFraction of HBM (the caching allocator's fragmentation).
double reserved_bytes(const models::MemoryEstimate& memory, const models::GpuSpec& gpu);

// The NCCL cost model against the published nccl-tests sweeps (../shared/data/
// nccl-tests-sweeps): fits its physical parameters and predicts each sweep leave-one-out;
// appends a markdown section.
struct NcclValidationSummary {
  struct Sweep {
    std::string file;
    int rows = 0;
    double loo_mape = 0;
  };
  std::vector<Sweep> sweeps;
  double loo_mape[4] = {0, 0, 0, 0};        // < 64 KiB, 64 KiB - 16 MiB, >= 16 MiB, all
  double in_sample_mape[4] = {0, 0, 0, 0};
  int stated = 0;                           // sweeps whose source states the fabric
  int meet_targets = 0;                     // of those, within every target that applies
  models::CommParams params;                // the fit on every sweep
};
// `print_fit`: also print the fitted parameters in full (to update CommParams::fitted()).
NcclValidationSummary validate_nccl(const std::string& data_dir, std::string& markdown, std::ostream& out, bool print_fit = false);
// The fit alone (what CommParams::fitted() must hold).
models::CommParams fit_comm_params(const std::string& data_dir);
// The least mean |f_i / m_i - 1| over times f that never fall as the size grows, for measured
// times m in size order (weighted L1 isotonic regression): what no cost model that grows with the
// size, as NCCL's does, gets under on those rows.
double monotone_floor(const std::vector<double>& measured);

// Reproduces the Megatron-LM throughput tables (../shared/data/megatron-lm) with the step
// emulator; appends a markdown section.
// `fit`: validation::fit_steps's rows (step_fit.hpp).
StepValidationSummary validate_steps(const StepFit& fit, std::string& markdown, std::ostream& out);

// Reproduces the sequence-balancing claims (Libra's pool-sizing law, the papers' rankings);
// appends a markdown section.
struct BalanceValidationSummary {
  bool rankings_hold = false;
  int checks = 0, held = 0;
};
BalanceValidationSummary validate_balance(std::string& markdown, std::ostream& out);
// The balancing scenario validation and tests use: Qwen3-8B, `dp` ranks of Ulysses CP `cp`,
// a long-tail workload up to the context (NIC rate `nic`, empty: the builder's).
std::string balance_scenario_json(int dp, std::int64_t seq_len, const std::string& nic, int cp);

// The multimodal sections' mixes of rising variance, each about one 672x672 image's worth of
// patches per sample: every sample one image; half of them two (the rest text); a quarter four
// of 448 or 896 pixels.
std::array<models::MultimodalMix, 3> image_variance_mixes();

// Reproduces PipeWeaver's claims on the pipeline emulator (rankings, variance, the constant mix,
// 1F1B's closed form); appends a markdown section.
struct MultimodalValidationSummary {
  int checks = 0, held = 0;
};
MultimodalValidationSummary validate_multimodal(std::string& markdown, std::ostream& out);
// Reproduces MegaScale-Omni's ranking over the coupled pipelines (and its trend with the mix) and
// Maestro's GPU-hours against one configuration for all sections; appends a markdown section.
struct CompoundValidationSummary {
  int checks = 0, held = 0;
};
CompoundValidationSummary validate_compound(std::string& markdown, std::ostream& out);
// Reproduces Mosaic/Apollo's and MuxTune's claims (colocated modules against one per GPU; a shared
// LoRA backbone against per-task instances, with the trend in tasks); appends a markdown section.
struct MultiplexValidationSummary {
  int checks = 0, held = 0;
};
MultiplexValidationSummary validate_multiplexing(std::string& markdown, std::ostream& out);
// Pipeline schedules: closed forms with uniform costs and the papers' rankings on emulated steps.
void validate_schedules(std::string& markdown, std::ostream& out);

// Reproduces StreamRL's claims on the RL simulator (policy ranking, skewness-aware dispatch,
// heterogeneous cost); appends a markdown section.
struct RlValidationSummary {
  int checks = 0, held = 0;
};
RlValidationSummary validate_rl(const std::string& data_dir, std::string& markdown, std::ostream& out);

struct ClusterValidationSummary {
  int replay_jobs = 0;              // of the trace's jobs, completed in the replay
  int trace_jobs = 0;
  double replay_mean_run_s = 0;
  double replay_avg_jct_s = 0;      // equals the mean service time: no queueing on 2,000 GPUs
  double trace_mean_service_s = 0;
  int arena_gpus = 0, arena_jobs = 0;
  int arena_completed_min = 0;      // the fewest jobs any policy completed on Arena's cluster
  bool tiresias_beats_fifo = false;
  bool gavel_beats_fifo = false;
  bool arena_beats_gavel = false;
};
// The Philly replay against AcmeTrace's statistics, and the schedulers on Arena's cluster.
ClusterValidationSummary validate_cluster(const std::string& data_dir, std::string& markdown, std::ostream& out);

struct EstimateValidationSummary {
  int cases = 0;
  double mean_abs_error = 0;   // estimate vs emulator, step time
  double worst_abs_error = 0;
  int plan_rows = 0;           // Megatron rows searched
};
// The closed-form estimate against the emulator on a set of scenarios, and plan search on the
// Megatron-Core H100 table's rows against the published plans.
EstimateValidationSummary validate_estimate(const std::string& data_dir, std::string& markdown, std::ostream& out);

}  // namespace orrery::validation
