#include "cli/app.hpp"

#include "runs/runs.hpp"
#include "runs/options.hpp"
#include "runs/policy_list.hpp"
#include "runs/progress.hpp"
#include "studies/plan_search.hpp"
#include "studies/sweep.hpp"
#include "validation/validation.hpp"
#include "models/network/topology.hpp"
#include "sim/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <new>
#include <ostream>

namespace orrery::cli {

// The command line only parses options into the library entries' option structs and calls them.
using namespace runs;
using namespace studies;
using namespace validation;

namespace {

// The command the words of `args` select (`orrery calibrate fit ...` -> fit), and, when a word
// stands where a command is expected but names none, what to say about it ("did you mean").
struct Selected {
  CLI::App* app;
  std::string error;
};

Selected select_command(CLI::App& top, const std::vector<std::string>& args) {
  CLI::App* at = &top;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.empty() || word.front() == '-') break;  // an option: CLI11 checks it
    std::vector<std::string> names;
    CLI::App* next = nullptr;
    for (CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
      if (sub->get_name() == word) next = sub;
    }
    if (names.empty()) break;  // a positional argument of a command
    if (next == nullptr) {
      std::string listed;
      for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
      return {at, fmt::format("found {}, expected {}: {}{}", sim::quote(word),
                              at == &top ? std::string("a command") : fmt::format("a subcommand of `{}`", at->get_name()), listed,
                              sim::did_you_mean(word, names))};
    }
    at = next;
  }
  return {at, ""};
}

// "; did you mean \"--report\"?" for the first option of `args` that `command` does not take.
std::string option_suggestion(const CLI::App& command, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (const CLI::Option* o : command.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  }
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string word = args[i].substr(0, args[i].find('='));
    if (word.size() < 3 || word.rfind("--", 0) != 0 || std::find(names.begin(), names.end(), word) != names.end()) continue;
    return sim::did_you_mean(word, names);
  }
  return "";
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app("Orrery: a discrete-event simulator of large-model training clusters", "orrery");
  app.set_version_flag("--version", fmt::format("orrery {}", ORRERY_VERSION));
  app.require_subcommand(1);
  app.footer("Run `orrery <command> --help` for a command's options, `orrery policies` for every policy and its parameters.");

  ReplayOptions replay_options;
  CLI::App* replay_cmd = app.add_subcommand(
      "replay", "Run a task-graph JSON file (format: traces/README.md) or a Chakra workload (--chakra) on a fabric; print the makespan and each "
                "stream's busy time");
  replay_cmd->add_option("graph", replay_options.graph_path, "Task-graph JSON file");
  replay_cmd->add_option("--chakra", replay_options.chakra,
                         "A Chakra execution-trace workload: the prefix of its per-rank files <prefix>.<rank>.et (ASTRA-sim's format)");
  replay_cmd->add_option("--kineto", replay_options.kineto,
                         "A PyTorch profiler (Kineto) trace of one GPU: its streams' kernels replayed in order, NCCL kernels re-costed on --topology");
  replay_cmd->add_option("--ranks", replay_options.ranks, "--kineto with --topology: the collectives' group size there (default: as recorded)");
  replay_cmd->add_option("--comm-groups", replay_options.comm_groups, "--chakra: its communicator groups JSON (default <prefix>.comm_groups.json)");
  replay_cmd->add_option("--topology", replay_options.topology, "--chakra: the fabric (a builder spec with one GPU per rank)");
  replay_cmd->add_option("--gpu", replay_options.gpu, "--chakra: the GPU (`orrery gpus`)")->capture_default_str();
  replay_cmd->add_option("--gpus", replay_options.gpus_path, "--chakra: a GPU catalog JSON file adding or overriding GPUs");
  replay_cmd->add_flag("--recost", replay_options.recost,
                       "--chakra: cost compute nodes from their FLOPs (num_ops) and bytes (tensor_size) with the GPU's fitted roofline instead of "
                       "their recorded durations");
  replay_cmd->add_option("--comm", replay_options.comm, "--chakra: communication model, nccl or line-rate")->capture_default_str();
  replay_cmd->add_option("--trace", replay_options.trace_path,
                         "Write the timeline as Chrome trace-event JSON (opens in ui.perfetto.dev)");
  replay_cmd->add_option("--report", replay_options.report_path, "Write every metric of the run as JSON");
  replay_cmd->add_option("--html", replay_options.html_path, "--chakra, --kineto: write a self-contained HTML page (key figures, busy time, timeline)");

  CollectiveOptions coll;
  CLI::App* coll_cmd = app.add_subcommand("collective", "Simulate one collective on a topology; print time, algbw and busbw");
  coll_cmd->add_option("--topology", coll.topology,
                       "A spec \"kind:key=value,...\" or a topology .json file. Kinds:\n" + models::topology_help())
      ->capture_default_str();
  coll_cmd->add_option("--op", coll.op, "all-reduce, reduce-scatter, all-gather, broadcast, reduce, all-to-all, send-recv")
      ->capture_default_str();
  coll_cmd->add_option("--algo", coll.algo,
                       "auto (what NCCL picks), ring, tree, nvls, nvls-tree, pat (NCCL's algorithms), hierarchical or direct (flow plans only)")
      ->capture_default_str();
  coll_cmd->add_option("--proto", coll.proto, "the NCCL model's protocol: auto (NCCL's choice), ll, ll128 or simple")->capture_default_str();
  coll_cmd->add_option("--nvls", coll.nvls, "let NCCL use NVLS where the NVSwitch has it (NCCL_NVLS_ENABLE)")->capture_default_str();
  coll_cmd->add_option("--size", coll.size, "nccl-tests size, e.g. 1GiB")->capture_default_str();
  coll_cmd->add_option("--ranks", coll.ranks, "use the first N GPUs (0: all)")->capture_default_str();
  coll_cmd->add_option("--channels", coll.channels,
                       "parallel rings/trees, 1 to 64, as NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS (default: NCCL's graph; the flows: one per NIC of a server)");
  coll_cmd->add_option("--chunks", coll.chunks, "pipeline chunks per step (1: the algorithm's default)")->capture_default_str();
  coll_cmd->add_option("--root", coll.root, "root rank of broadcast and reduce")->capture_default_str();
  coll_cmd->add_option("--peer", coll.peer, "send-recv: rank 0 sends to this rank")->capture_default_str();
  coll_cmd->add_option("--alltoallv", coll.alltoallv_path,
                       "CSV with columns from,to,bytes (ranks; a size such as 64MiB): per-pair sizes for --op all-to-all");
  coll_cmd->add_option("--quantum", coll.quantum,
                       "re-solve bandwidth after departures only on this time grid, e.g. 20us (0: at once, exact); "
                       "trades accuracy for speed on very many flows")
      ->capture_default_str();
  coll_cmd->add_option("--trace", coll.trace_path, "Write link-utilisation counters as Chrome trace-event JSON");
  coll_cmd->add_option("--report", coll.report_path, "Write time_s, algbw_GBps, busbw_GBps and more as JSON");

  TopologyOptions topo;
  CLI::App* topo_cmd = app.add_subcommand("topology", "Summarise a topology (spec or .json); --save writes it as JSON to edit");
  topo_cmd->add_option("--topology", topo.topology, "A spec \"kind:key=value,...\" or a topology .json file")->capture_default_str();
  topo_cmd->add_option("--save", topo.save_path, "Write the topology as JSON (format: traces/README.md)");

  StepOptions step_options;
  CLI::App* step_cmd = app.add_subcommand("step", "Emulate one training step of a scenario (model, cluster, parallel plan); no file: the default");
  step_cmd->add_option("scenario", step_options.scenario_path, "Step scenario JSON (traces/README.md); omitted: the built-in default");
  step_cmd->add_option("--report", step_options.report_path, "Write step_time_s, tokens_per_s, tflops_per_gpu, mfu, bubble_fraction, "
                                                               "peak_memory_bytes, oom and more as JSON");
  step_cmd->add_option("--trace", step_options.trace_path, "Write the timeline (every simulated GPU's streams) as Chrome trace-event JSON");
  step_cmd->add_option("--html", step_options.html_path, "Write a self-contained HTML report: key figures, breakdown per stage, memory, timeline");
  step_cmd->add_option("--gpus", step_options.gpus_path, "A GPU catalog JSON file adding or overriding GPUs");
  step_cmd->add_flag("--no-reuse", step_options.no_reuse, "Simulate every rank and cost every op afresh (slow; for checking reuse)");
  step_cmd->add_option("--train-tokens", step_options.train_tokens, "Tokens to train on (15T, 400B, 1.5e13): print and report the days it takes");
  step_cmd->add_option("--comm", step_options.comm, "Communication model: nccl (NCCL's algorithm, protocol and latency by size, models/network/nccl.hpp) "
                                                    "or line-rate (rings at NCCL's peak efficiency, the model before it)")->capture_default_str();
  step_cmd->add_option("--chakra-out", step_options.chakra_out,
                       "Write the step as per-rank Chakra execution traces <prefix>.<rank>.et and <prefix>.comm_groups.json (ASTRA-sim's "
                       "workload format); simulates every rank");
  step_cmd->add_flag("--estimate", step_options.estimate, "Closed-form estimate (models/training/estimate.hpp) instead of emulating: milliseconds, within ~10%");

  PlanOptions plan_options;
  CLI::App* plan_cmd = app.add_subcommand(
      "plan", "Search parallel plans (tp/pp/vp/dp/cp/ep, micro-batch, recompute, ZeRO, schedule): prune by memory, rank by the "
              "closed-form estimate, confirm the best with the emulator");
  plan_cmd->add_option("search", plan_options.plan_path, "Plan-search JSON: model, cluster, global_batch, seq_len, memory_limit, constraints "
                                                         "(traces/README.md)")->required();
  plan_cmd->add_option("--report", plan_options.report_path, "Write the search counts and the top plans (estimated and emulated) as JSON");
  plan_cmd->add_option("--gpus", plan_options.gpus_path, "A GPU catalog JSON file adding or overriding GPUs");
  plan_cmd->add_option_function<int>("--top", [&plan_options](const int& k) { plan_options.top_k = k; },
                                     "Plans to confirm with the emulator, 0 to 100 (default: the file's, else 5)");
  plan_cmd->add_option("--train-tokens", plan_options.train_tokens, "Tokens to train on (15T, 400B, 1.5e13): the days each plan takes");
  plan_cmd->add_option("--cluster-sizes", plan_options.cluster_sizes, "GPU counts to search, e.g. 64,128,256 (default: the file's cluster_sizes, "
                                                                       "else its cluster)");

  CompareOptions compare_options;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "Run one workload under several policies side by side: sequence policies on a step scenario, schedulers on a cluster scenario");
  compare_cmd->add_option("scenario", compare_options.scenario_path,
                          "Step scenario JSON (with a \"workload\": sequence policies; without: pipeline schedules and MoE communication), a multimodal, "
                          "cluster, RL or GPU multiplexing (\"colocation\", \"peft\") scenario (traces/README.md)")
      ->required();
  compare_cmd->add_option("--policies", compare_options.policies,
                          fmt::format("Comma-separated; parameters as name:key=value;key=value. Step scenarios: {} (default packing,wlb-llm,libra); "
                                      "without a workload: {}, or {}, or {} (default 1f1b,interleaved-1f1b,zb-h1,zb-h2,zb-v,stp,dualpipe); "
                                      "multimodal: {} (default all three), or video attention: {} (default dense,dsv when the scenario has an \"attention\"); "
                                      "cluster: {} (default fifo,tiresias,gavel,arena); RL: {} (default all "
                                      "four); GPU colocation: {} (default both); multi-task PEFT: {} (default all three). Every policy and its "
                                      "parameters are listed below",
                                      policy_names(PolicyFamily::sequence), policy_names(PolicyFamily::pipeline), policy_names(PolicyFamily::ep_comm), policy_names(PolicyFamily::moe_routing),
                                      policy_names(PolicyFamily::multimodal), policy_names(PolicyFamily::video_attention),
                                      policy_names(PolicyFamily::cluster), policy_names(PolicyFamily::rl), policy_names(PolicyFamily::colocation),
                                      policy_names(PolicyFamily::peft)));
  compare_cmd->footer("\n" + policy_listing({PolicyFamily::sequence, PolicyFamily::pipeline, PolicyFamily::ep_comm, PolicyFamily::moe_routing, PolicyFamily::multimodal, PolicyFamily::video_attention, PolicyFamily::cluster,
                                              PolicyFamily::rl,
                                              PolicyFamily::rl_dispatcher, PolicyFamily::colocation, PolicyFamily::peft}));
  compare_cmd->add_option("--jobs", compare_options.jobs_path, "Cluster scenarios: a job trace replacing the scenario's");
  compare_cmd->add_flag("--skip-bad-rows", compare_options.skip_bad_rows, "Cluster scenarios: skip malformed trace rows instead of failing");
  compare_cmd->add_option("--steps", compare_options.steps, "Steps per policy")->capture_default_str();
  compare_cmd->add_option("--iterations", compare_options.iterations, "RL scenarios: iterations per policy")->capture_default_str();
  compare_cmd->add_option("--report", compare_options.report_path, "Write the per-policy figures as JSON (key \"policies\")");
  compare_cmd->add_option("--trace", compare_options.trace_path, "Write the slowest rank's pipeline of one step (the first policy) as Chrome JSON");
  compare_cmd->add_option("--html", compare_options.html_path, "Write a self-contained HTML report with the policies' plots (bars, CDFs, timelines)");
  compare_cmd->add_option("--trace-step", compare_options.trace_step, "Which step --trace shows")->capture_default_str();
  compare_cmd->add_option("--gpus", compare_options.gpus_path, "A GPU catalog JSON file adding or overriding GPUs");

  ClusterOptions cluster_options;
  CLI::App* cluster_cmd = app.add_subcommand("cluster", "Replay a job trace on a cluster under a scheduler; print JCT, queueing, makespan, utilisation");
  cluster_cmd->add_option("scenario", cluster_options.scenario_path, "Cluster scenario JSON (traces/README.md)")->required();
  cluster_cmd->add_option("--policy", cluster_options.policy,
                          fmt::format("{}; parameters as name:key=value;key=value (listed below)", policy_names(PolicyFamily::cluster)))
      ->capture_default_str();
  cluster_cmd->footer("\n" + policy_listing({PolicyFamily::cluster}));
  cluster_cmd->add_option("--jobs", cluster_options.jobs_path, "A job trace replacing the scenario's");
  cluster_cmd->add_flag("--skip-bad-rows", cluster_options.skip_bad_rows, "Skip malformed trace rows (counted in the report) instead of failing");
  cluster_cmd->add_option("--report", cluster_options.report_path, "Write jobs_completed, avg_jct_s, p50_jct_s, p99_jct_s, avg_queue_s, makespan_s, gpu_utilization");
  cluster_cmd->add_option("--jobs-csv", cluster_options.csv_path, "Write one record per job as CSV");
  cluster_cmd->add_option("--html", cluster_options.html_path, "Write a self-contained HTML report: JCT and queueing CDFs, GPU utilisation over time");
  cluster_cmd->add_option("--timeline", cluster_options.timeline_path,
                          "Write each node's allocations over time as Perfetto JSON, and one record per job as CSV beside it (same name, .csv)");

  DoclensOptions doclens_options;
  CLI::App* doclens_cmd = app.add_subcommand("doclens", "Write a document-length trace (JSONL): convert a real source, or generate one");
  doclens_cmd->add_option("action", doclens_options.action, "convert or generate")->required();
  doclens_cmd->add_option("--source", doclens_options.source, "convert: distca-prolong, distca-wlbllm, mooncake, azure-code, azure-conv");
  doclens_cmd->add_option("--data", doclens_options.data_dir, "The shared data folder")->capture_default_str();
  doclens_cmd->add_option("--model", doclens_options.model, "generate: lognormal or lognormal_pareto")->capture_default_str();
  doclens_cmd->add_option("--median", doclens_options.median, "generate: median document length")->capture_default_str();
  doclens_cmd->add_option("--p99", doclens_options.p99, "generate: 99th percentile")->capture_default_str();
  doclens_cmd->add_option("--max", doclens_options.max, "generate: longest document")->capture_default_str();
  doclens_cmd->add_option("--seed", doclens_options.seed, "generate: seed")->capture_default_str();
  doclens_cmd->add_option("--tokens", doclens_options.tokens, "Tokens per global batch (1 to 2^30)")->required();
  doclens_cmd->add_option("--batches", doclens_options.batches,
                          "generate: how many batches (1 to 1000000; tokens x batches at most 2^36, about 80 MB); convert: at most (0: all)");
  doclens_cmd->add_option("-o,--out", doclens_options.out_path, "JSONL file to write")->required();

  ValidateOptions validate_options;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate", "Compare simulated collectives and kernel costs with published measurements (writes docs/validation.md)");
  validate_cmd->add_option("--data", validate_options.data_dir, "The shared data folder")->capture_default_str();
  validate_cmd->add_option("--out", validate_options.out_path, "Write the comparison tables as markdown");
  validate_cmd->add_option("--only", validate_options.only, "network, nccl, kernels, steps, balance, cluster, multimodal, compound, rl, estimate, schedules or multiplexing (default: all)");
  validate_cmd->add_flag("--print-fit", validate_options.print_fit, "nccl: print the fitted NCCL model parameters in full (for CommParams::fitted())");
  validate_cmd->add_flag("--refit", validate_options.refit,
                         "steps: fit the step parameters afresh on every training row (else the built-in models/hardware/step_params.json's)");
  validate_cmd->add_option("--params-out", validate_options.params_out, "steps: write the step parameters used (step_params.json's format) to this file");
  validate_cmd->add_option("--check-loo", validate_options.check_loo,
                           "steps: configurations, by first row (megatron_core_h100_weak_scaling_2024.csv:5), also fitted exactly without their rows "
                           "(re-linearised at every step, on the other rows of their parameter block, about 20 to 60 s each); prints the leave-one-out prediction beside the exact one")
      ->delimiter(',');

  CLI::App* policies_cmd = app.add_subcommand("policies", "List every policy family (sequence, pipeline, cluster, multimodal, RL) with its parameters");

  GpusOptions gpus_options;
  CLI::App* gpus_cmd = app.add_subcommand("gpus", "List the GPU catalog: peak FLOP/s per dtype, HBM, SMs, NVLink, sources");
  gpus_cmd->add_option("--gpus", gpus_options.gpus_path, "A GPU catalog JSON file adding or overriding GPUs (traces/README.md)");

  CostOptions cost_options;
  CLI::App* cost_cmd = app.add_subcommand("cost", "Cost kernels on a GPU with the roofline or a calibrated model");
  cost_cmd->add_option("--gpu", cost_options.gpu, "GPU name from `orrery gpus`")->capture_default_str();
  cost_cmd->add_option("--kernel", cost_options.kernels,
                       "kind:key=value,... (repeatable), e.g. gemm:m=8192,n=8192,k=8192,dtype=bf16;\n"
                       "attention_fwd:seqlen=4096,batch=2,heads=32,kv_heads=8,head_dim=128,causal=1;\n"
                       "attention_bwd:docs=4096/512/100,...; norm:bytes=64MB; optimizer:params=1e9")
      ->required();
  cost_cmd->add_option("--calibration", cost_options.calibration_path, "Cost curves from `orrery calibrate fit`");
  cost_cmd->add_option("--gpus", cost_options.gpus_path, "A GPU catalog JSON file adding or overriding GPUs");
  cost_cmd->add_option("--report", cost_options.report_path, "Write each kernel's time, FLOPs, bytes and the counters as JSON");

  CLI::App* calibrate_cmd = app.add_subcommand("calibrate", "Measure kernels (CPU harness) and fit cost curves");
  calibrate_cmd->require_subcommand(1);
  CalibrateMeasureOptions measure_options;
  CLI::App* measure_cmd = calibrate_cmd->add_subcommand("measure", "Run the CPU harness and write a profile");
  measure_cmd->add_option("--device", measure_options.device, "cpu (the CUDA harness is build/bin/orrery-calibrate-cuda)")
      ->capture_default_str();
  measure_cmd->add_flag("--quick", measure_options.quick, "A small grid (seconds)");
  measure_cmd->add_option("--repetitions", measure_options.repetitions, "Timed runs per point")->capture_default_str();
  measure_cmd->add_option("--seed", measure_options.seed, "Seed of the random inputs")->capture_default_str();
  measure_cmd->add_option("-o,--out", measure_options.out_path, "Profile JSON to write")->required();
  CalibrateFitOptions fit_options;
  CLI::App* fit_cmd = calibrate_cmd->add_subcommand("fit", "Fit cost curves to a profile; print leave-one-out errors per kind");
  fit_cmd->add_option("profile", fit_options.profile_path, "Profile JSON (calibration/README.md)")->required();
  fit_cmd->add_option("-o,--out", fit_options.out_path, "Curves JSON to write (scenarios load it as \"calibration\")");
  CalibrateImportOptions import_options;
  CLI::App* import_cmd = calibrate_cmd->add_subcommand(
      "import", "Turn a PyTorch profiler (Kineto) trace of a real step into a profile: its GPU kernels matched to Orrery's kinds by name and shape");
  import_cmd->add_option("trace", import_options.trace_path, "Chrome trace JSON from torch.profiler (record_shapes=True)")->required();
  import_cmd->add_option("-o,--out", import_options.out_path, "Profile JSON to write (then `orrery calibrate fit`)")->required();

  SweepOptions sweep_options;
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", fmt::format("Run a scenario over many variations (a grid, random or Latin-hypercube design over scenario fields and command "
                           "options) on every core, or over MPI ranks under mpirun (MPI {} in this build); write one row per point as JSON and CSV",
                           sweep_mpi_built() ? "on" : "off: libopenmpi-dev was missing when it was configured"));
  sweep_cmd->add_option("plan", sweep_options.plan_path, "Sweep plan JSON (traces/README.md, \"Sweep plans\")")->required();
  sweep_cmd->add_option("-o,--out", sweep_options.out_path, "Results JSON (default: the plan's name with .results.json); the CSV goes beside it");
  sweep_cmd->add_option("--csv", sweep_options.csv_path, "Where the results CSV goes instead");
  sweep_cmd->add_option("--html", sweep_options.html_path, "Write a self-contained HTML report: the best points, a heatmap, scaling curves");
  sweep_cmd->add_option("-j,--jobs", sweep_options.jobs, "Threads per process (0: every core; under mpirun: 1 per rank)")->capture_default_str();
  sweep_cmd->add_flag("--resume", sweep_options.resume, "Continue an interrupted sweep from its journal (<out>.journal), skipping finished points");
  sweep_cmd->add_option("--max-points", sweep_options.max_points, "Stop after this many new points, keeping the journal for --resume (0: all)")
      ->capture_default_str();
  sweep_cmd->add_flag("-q,--quiet", sweep_options.quiet, "No progress report on stderr (shown after 2 s: a bar on a terminal, a line every 10 s elsewhere)");

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& a : args) argv.push_back(a.c_str());
  const Selected selected = select_command(app, args);
  if (!selected.error.empty()) {
    err << fmt::format("orrery: error: <command line>: {}; see `orrery --help`\n", selected.error);
    return kExitBadInput;
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << app.version() << "\n";
    return kExitOk;
  } catch (const CLI::ExtrasError& e) {
    std::string path;
    for (const CLI::App* a = selected.app; a != nullptr && a != &app; a = a->get_parent()) path = a->get_name() + " " + path;
    err << fmt::format("orrery: error: <command line>: {}{}; see `orrery {}--help`\n", e.what(), option_suggestion(*selected.app, args), path);
    return kExitBadInput;
  } catch (const CLI::ParseError& e) {
    err << fmt::format("orrery: error: <command line>: {}; see `orrery --help`\n", e.what());
    return kExitBadInput;
  }

  // Long runs report progress on the process's stderr; a caller with its own streams (a test)
  // gets none.
  const bool to_stderr = &err == &std::cerr;
  const ProgressTarget progress(to_stderr ? &err : nullptr, to_stderr && ::isatty(STDERR_FILENO) != 0);
  return run_guarded([&] {
    if (*replay_cmd) replay(replay_options, out);
    if (*coll_cmd) collective(coll, out);
    if (*step_cmd) step(step_options, out);
    if (*plan_cmd) plan(plan_options, out);
    if (*compare_cmd) compare(compare_options, out);
    if (*cluster_cmd) cluster(cluster_options, out);
    if (*doclens_cmd) doclens(doclens_options, out);
    if (*validate_cmd) validate(validate_options, out);
    if (*gpus_cmd) gpus(gpus_options, out);
    if (*policies_cmd) {
      out << policy_listing({PolicyFamily::sequence, PolicyFamily::pipeline, PolicyFamily::ep_comm, PolicyFamily::moe_routing, PolicyFamily::cluster, PolicyFamily::multimodal,
                             PolicyFamily::video_attention, PolicyFamily::rl,
                             PolicyFamily::rl_dispatcher, PolicyFamily::colocation, PolicyFamily::peft});
    }
    if (*cost_cmd) cost(cost_options, out);
    if (*measure_cmd) calibrate_measure(measure_options, out);
    if (*fit_cmd) calibrate_fit(fit_options, out);
    if (*import_cmd) calibrate_import(import_options, out);
    if (*topo_cmd) topology(topo, out);
    if (*sweep_cmd) sweep(sweep_options, out);
  }, err);
}

int run_guarded(const std::function<void()>& command, std::ostream& err) {
  try {
    command();
    return kExitOk;
  } catch (const sim::InputError& e) {
    err << fmt::format("orrery: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const sim::InternalError& e) {
    err << fmt::format("orrery: {} (please report this bug)\n", e.what());
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    err << "orrery: internal error: out of memory\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    err << fmt::format("orrery: internal error: {} (please report this bug)\n", e.what());
    return kExitInternal;
  }
}

}  // namespace orrery::cli
