// One library entry per kind of run: what `orrery step`, `compare`, `cluster`, `collective`,
// `replay`, `topology`, `gpus`, `cost`, `calibrate` and `doclens` do, callable from any front end
// (the command line, the Python module, a sweep). Each validates all of its input before it
// writes anything, throws sim::InputError for bad input, prints its summary on `out`, and hands
// its report's JSON to `report_json` when given one.
//   runs::StepOptions o;  o.scenario_path = "examples/scenarios/llama3-70b-h100-64.json";
//   std::string report;  o.report_json = &report;  runs::step(o, std::cout);
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orrery::runs {

struct ReplayOptions {
  std::string graph_path;   // a task-graph JSON file, or
  std::string chakra;       // a Chakra workload's prefix (<prefix>.<rank>.et), or
  std::string kineto;       // a PyTorch profiler (Kineto) trace of one GPU
  int ranks = 0;            // --kineto with --topology: the collectives' group size there
  std::string comm_groups;  // its communicator groups (default <prefix>.comm_groups.json)
  std::string topology;     // the fabric a Chakra workload replays on (one GPU per rank)
  std::string gpu = "H100";
  std::string gpus_path;    // a GPU catalog JSON file adding or overriding GPUs
  bool recost = false;      // compute nodes from their FLOPs and bytes, not their durations
  std::string comm = "nccl";
  std::string trace_path;   // empty: no timeline
  std::string report_path;  // empty: no report
  std::string html_path;    // --chakra, --kineto: a self-contained HTML page
  std::string* report_json = nullptr;  // the Python module: the report's JSON lands here too
};

void replay(const ReplayOptions& options, std::ostream& out);

struct CollectiveOptions {
  std::string topology = "dgx-h100";
  std::string op = "all-reduce";
  std::string algo = "auto";   // auto: NCCL's choice (models/network/nccl.hpp)
  std::string proto = "auto";  // the NCCL model's protocol: auto, ll, ll128, simple
  bool nvls = true;            // NCCL_NVLS_ENABLE
  std::string size = "1 GiB";
  int ranks = 0;
  int channels = -1;           // -1: not given (the flows: one per NIC of a server; NCCL: its graph's)
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

}  // namespace orrery::runs

namespace orrery::runs {

struct TopologyOptions {
  std::string topology = "dgx-h100";
  std::string save_path;  // write the topology as JSON; empty: summary only
};

// Summarises a topology (a spec or a .json file) and optionally saves it as JSON.
void topology(const TopologyOptions& options, std::ostream& out);


}  // namespace orrery::runs

namespace orrery::runs {

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
  std::string* report_json = nullptr;  // the Python module: the report's JSON lands here too
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

struct CalibrateImportOptions {
  std::string trace_path;  // a PyTorch profiler (Kineto) trace
  std::string out_path;    // the profile to write
};

// A profile from a real run's PyTorch profiler trace: its kernels matched to Orrery's kinds.
void calibrate_import(const CalibrateImportOptions& options, std::ostream& out);


}  // namespace orrery::runs

namespace orrery::runs {

struct StepOptions {
  std::string scenario_path;  // empty: the built-in default scenario
  std::string report_path;
  std::string trace_path;
  std::string gpus_path;
  bool no_reuse = false;
  bool estimate = false;  // the closed form (models/training/estimate.hpp) instead of the emulator
  std::string comm = "nccl";  // --comm: nccl (the default) or line-rate (models::CommModel)
  std::string html_path;  // self-contained HTML report with plots (reports/html_pages.hpp)
  std::string train_tokens;  // --train-tokens "15T": print and report the time to train on them
  std::string chakra_out;    // write the step as per-rank Chakra traces with this prefix (every rank simulated)
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
};

// Emulates one training step; prints step time, throughput, MFU, bubble, memory.
void step(const StepOptions& options, std::ostream& out);

// The built-in default scenario (what `make demo` runs): JSON text.
std::string default_step_scenario();

}  // namespace orrery::runs

namespace orrery::runs {

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
  std::string html_path;       // self-contained HTML report with plots (reports/html_pages.hpp)
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
  Progress* progress = nullptr;        // set by compare(): each kind of scenario reports on it
};

// Runs the same workload under several sequence policies; prints step time p50/p99, tokens/s,
// attention imbalance and the speedup over the first policy.
void compare(const CompareOptions& options, std::ostream& out);
// RL scenarios (a "rollouts" section): each RL policy over `iterations` iterations (runs/compare_rl.cpp).
void compare_rl(const CompareOptions& options, std::ostream& out);
// GPU multiplexing scenarios (a "colocation" or "peft" section; runs/compare_multiplex.cpp):
// false, having done nothing, for any other scenario.
bool compare_multiplex(const CompareOptions& options, std::ostream& out);

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




// Writes a document-length trace (JSONL): from a real source, or from a seeded generator.
void doclens(const DoclensOptions& options, std::ostream& out);

}  // namespace orrery::runs

namespace orrery::runs {

struct ClusterOptions {
  std::string scenario_path;
  std::string policy = "fifo";  // name[:key=value;...]
  std::string jobs_path;        // overrides the scenario's trace path
  bool skip_bad_rows = false;
  std::string report_path;
  std::string csv_path;         // one record per job
  std::string timeline_path;    // nodes' allocations (Perfetto JSON), and the jobs CSV beside it
  std::string html_path;        // self-contained HTML report with plots (reports/html_pages.hpp)
  std::string* report_json = nullptr;  // sweeps: the report's JSON lands here too
};

// Replays a job trace on a cluster under a scheduler; prints JCT, queueing, makespan, utilisation.
void cluster(const ClusterOptions& options, std::ostream& out);


}  // namespace orrery::runs

