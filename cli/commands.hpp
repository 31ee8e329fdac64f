// One function per subcommand. Each validates all of its input before it writes anything,
// and throws sim::InputError for bad input.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orrery::cli {

struct ReplayOptions {
  std::string graph_path;
  std::string trace_path;   // empty: no timeline
  std::string report_path;  // empty: no report
};

void replay(const ReplayOptions& options, std::ostream& out);

struct CollectiveOptions {
  std::string topology = "dgx-h100";
  std::string op = "all-reduce";
  std::string algo = "ring";
  std::string size = "1 GiB";
  int ranks = 0;
  int channels = 0;
  int chunks = 1;
  int root = 0;
  int peer = 1;
  std::string alltoallv_path;  // CSV of from,to,bytes rows: all-to-allv
  std::string quantum = "0";   // departures' re-solve grid (a duration; 0: exact)
  std::string trace_path;
  std::string report_path;
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
};

void collective(const CollectiveOptions& options, std::ostream& out);

}  // namespace orrery::cli

namespace orrery::cli {

struct TopologyOptions {
  std::string topology = "dgx-h100";
  std::string save_path;  // write the topology as JSON; empty: summary only
};

// Summarises a topology (a spec or a .json file) and optionally saves it as JSON.
void topology(const TopologyOptions& options, std::ostream& out);

struct ValidateOptions {
  std::string data_dir = "../shared/data";
  std::string out_path;  // markdown tables; empty: summary only
  std::string only;      // "network", "kernels", or empty for both
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

}  // namespace orrery::cli

namespace orrery::cli {

struct GpusOptions {
  std::string gpus_path;  // extra GPU catalog JSON; empty: built-ins only
};

// Lists the GPU catalog (built-ins plus --gpus) with its sources.
void gpus(const GpusOptions& options, std::ostream& out);

struct CostOptions {
  std::string gpu = "H100";
  std::vector<std::string> kernels;  // "kind:key=value,..." (models::parse_kernel)
  std::string calibration_path;       // curves JSON; empty: roofline
  std::string gpus_path;
  std::string report_path;
};

// Costs kernels on a GPU with the roofline or calibrated model; prints time and throughput.
void cost(const CostOptions& options, std::ostream& out);

struct CalibrateMeasureOptions {
  std::string device = "cpu";
  bool quick = false;
  int repetitions = 7;
  std::uint64_t seed = 1;
  std::string out_path;
};

// Runs the CPU harness and writes a profile (the CUDA harness is its own executable).
void calibrate_measure(const CalibrateMeasureOptions& options, std::ostream& out);

struct CalibrateFitOptions {
  std::string profile_path;
  std::string out_path;
};

// Fits cost curves to a profile, prints each curve's leave-one-out errors, writes the curves.
void calibrate_fit(const CalibrateFitOptions& options, std::ostream& out);

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

}  // namespace orrery::cli

namespace orrery::cli {

struct StepOptions {
  std::string scenario_path;  // empty: the built-in default scenario
  std::string report_path;
  std::string trace_path;
  std::string gpus_path;
  bool no_reuse = false;
  bool estimate = false;  // the closed form (models/training/estimate.hpp) instead of the emulator
  std::string html_path;  // self-contained HTML report with plots (cli/html_pages.hpp)
  std::string train_tokens;  // --train-tokens "15T": print and report the time to train on them
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
};

// Emulates one training step; prints step time, throughput, MFU, bubble, memory.
void step(const StepOptions& options, std::ostream& out);

// The built-in default scenario (what `make demo` runs): JSON text.
std::string default_step_scenario();

}  // namespace orrery::cli

namespace orrery::cli {

struct StepValidationSummary {
  struct Table {
    std::string name;
    int rows = 0;                   // predictions
    double mape = 0;                // over the predictions
    double worst_calibration = 0;   // the rows that set the GPU's training parameters
  };
  std::vector<Table> tables;
};

// Reproduces the Megatron-LM throughput tables (../shared/data/megatron-lm) with the step
// emulator; appends a markdown section.
StepValidationSummary validate_steps(const std::string& data_dir, std::string& markdown, std::ostream& out);

}  // namespace orrery::cli

namespace orrery::cli {

class Progress;

struct CompareOptions {
  std::string scenario_path;
  // Comma-separated; each may be name:key=value;key=value. Empty: packing,wlb-llm,libra for a
  // step scenario, fifo,tiresias,gavel,arena for a cluster scenario.
  std::string policies;
  int steps = 200;
  std::string report_path;
  std::string trace_path;
  int trace_step = 0;
  std::string gpus_path;
  std::string jobs_path;       // cluster scenarios: a trace replacing the scenario's
  bool skip_bad_rows = false;  // cluster scenarios
  int iterations = 50;         // RL scenarios
  std::string html_path;       // self-contained HTML report with plots (cli/html_pages.hpp)
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
  Progress* progress = nullptr;        // set by compare(): each kind of scenario reports on it
};

// Runs the same workload under several sequence policies; prints step time p50/p99, tokens/s,
// attention imbalance and the speedup over the first policy.
void compare(const CompareOptions& options, std::ostream& out);
// RL scenarios (a "rollouts" section): each RL policy over `iterations` iterations (cli/compare_rl.cpp).
void compare_rl(const CompareOptions& options, std::ostream& out);

struct DoclensOptions {
  std::string action;          // convert | generate
  std::string source;          // convert: a length source (traces::length_source_names())
  std::string data_dir = "../shared/data";
  std::string model = "lognormal_pareto";  // generate
  double median = 644, p99 = 71000;
  std::int64_t max = 1048576;
  std::uint64_t seed = 1;
  std::int64_t tokens = 0;     // per global batch
  int batches = 0;             // generate: how many; convert: at most (0: all the source holds)
  std::string out_path;
};

// The tokens/s of each policy over the first one's, for a scenario given as JSON text.
std::vector<std::pair<std::string, double>> policy_speedups(const std::string& scenario_json, const std::string& policies, int steps);

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

// Reproduces PipeWeaver's claims on the pipeline emulator (rankings, variance, the constant mix,
// 1F1B's closed form); appends a markdown section.
struct MultimodalValidationSummary {
  int checks = 0, held = 0;
};
MultimodalValidationSummary validate_multimodal(std::string& markdown, std::ostream& out);

// Reproduces StreamRL's claims on the RL simulator (policy ranking, skewness-aware dispatch,
// heterogeneous cost); appends a markdown section.
struct RlValidationSummary {
  int checks = 0, held = 0;
};
RlValidationSummary validate_rl(const std::string& data_dir, std::string& markdown, std::ostream& out);

// Writes a document-length trace (JSONL): from a real source, or from a seeded generator.
void doclens(const DoclensOptions& options, std::ostream& out);

}  // namespace orrery::cli

namespace orrery::cli {

struct ClusterOptions {
  std::string scenario_path;
  std::string policy = "fifo";  // name[:key=value;...]
  std::string jobs_path;        // overrides the scenario's trace path
  bool skip_bad_rows = false;
  std::string report_path;
  std::string csv_path;         // one record per job
  std::string timeline_path;    // nodes' allocations (Perfetto JSON), and the jobs CSV beside it
  std::string html_path;        // self-contained HTML report with plots (cli/html_pages.hpp)
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
};

// Replays a job trace on a cluster under a scheduler; prints JCT, queueing, makespan, utilisation.
void cluster(const ClusterOptions& options, std::ostream& out);

struct ClusterValidationSummary {
  int replay_jobs = 0;
  double replay_mean_run_s = 0;
  bool tiresias_beats_fifo = false;
  bool gavel_beats_fifo = false;
  bool arena_beats_gavel = false;
};
// The Philly replay against AcmeTrace's statistics, and the schedulers on Arena's cluster.
ClusterValidationSummary validate_cluster(const std::string& data_dir, std::string& markdown, std::ostream& out);

}  // namespace orrery::cli

namespace orrery::cli {

struct PlanOptions {
  std::string plan_path;  // plan-search JSON (traces/README.md)
  std::string report_path;
  std::string gpus_path;
  std::optional<int> top_k;  // --top; unset: the file's (default 5)
  std::string train_tokens;  // --train-tokens "15T": the time to train on them, per plan
  std::string cluster_sizes; // --cluster-sizes "64,128,256": search at each GPU count
  std::string* report_json = nullptr;
};

// Plan search: enumerates parallel plans, prunes by divisibility and memory, ranks by the
// closed-form estimate, confirms the top k with the step emulator; prints the best plans.
void plan(const PlanOptions& options, std::ostream& out);

struct EstimateValidationSummary {
  int cases = 0;
  double mean_abs_error = 0;   // estimate vs emulator, step time
  double worst_abs_error = 0;
  int plan_rows = 0;           // Megatron rows searched
};
// The closed-form estimate against the emulator on a set of scenarios, and plan search on the
// Megatron-Core H100 table's rows against the published plans.
EstimateValidationSummary validate_estimate(const std::string& data_dir, std::string& markdown, std::ostream& out);

}  // namespace orrery::cli
