#include "runs/runs.hpp"
#include "validation/step_fit.hpp"
#include "validation/common.hpp"
#include "validation/validation.hpp"
#include "runs/progress.hpp"
#include "runs/options.hpp"

#include "models/network/collectives.hpp"
#include "sim/error.hpp"
#include "sim/unit_parse.hpp"
#include "traces/atomic_file.hpp"
#include "traces/csv.hpp"

#include <fmt/format.h>

#include <functional>

#include <filesystem>
#include <map>
#include <ostream>

namespace orrery::validation {

using namespace runs;     // the runs each suite repeats

namespace {

using models::CollectiveAlgo;
using models::CollectiveOp;

struct Row {
  std::string source;     // file:line
  std::string system;
  std::string topology;
  CollectiveOp op;
  CollectiveAlgo algo;
  int ranks;
  double size;
  bool algbw;             // the figure is algbw, not busbw
  double measured;        // GB/s
  std::string role;       // calibration, prediction
  std::string note;
  double simulated = 0;
};

struct Skipped {
  std::string source;
  std::string what;
  std::string why;
};

void h200_16gib(const std::string& dir, std::vector<Row>& rows) {
  const auto t = traces::read_csv_file(dir + "/ml-engineering/nccl_collectives_8xH200_16GiB.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& c = t.at(r, "collective");
    const bool nvls = t.at(r, "algo") == "NVLS";
    const CollectiveOp op = c.starts_with("all-reduce") ? CollectiveOp::all_reduce
                            : c == "all-gather"        ? CollectiveOp::all_gather
                                                       : CollectiveOp::reduce_scatter;
    const bool calibration = op == CollectiveOp::all_reduce;
    rows.push_back({where(t, r), "8x H200 (NCCL 2.27.7)", "dgx-h200", op, nvls ? CollectiveAlgo::nvls : CollectiveAlgo::ring, 8,
                    16 * kGiB, false, t.number(r, "busbw"), calibration ? "calibration" : "prediction",
                    calibration ? (nvls ? "sets the NVSwitch gen 3 NVLS factor" : "sets the NVLink factor") : ""});
  }
}

void nvls_sweep(const std::string& dir, std::vector<Row>& rows) {
  const auto t = traces::read_csv_file(dir + "/ml-engineering/nccl_allreduce_nvls_sharp_8GiB.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const bool b200 = t.at(r, "node").find("B200") != std::string::npos;
    const int n = static_cast<int>(t.number(r, "GPUs"));
    const std::string system = fmt::format("{} GPUs of {}", n, b200 ? "8x B200 (p6-b200)" : "8x H200 HGX");
    const std::string topo = b200 ? "dgx-b200" : "dgx-h200";
    const bool picks_nvls = t.at(r, "algo NCCL picks") == "NVLS";
    const bool calibration = b200 && picks_nvls && n == 8;
    rows.push_back({where(t, r), system, topo, CollectiveOp::all_reduce, picks_nvls ? CollectiveAlgo::nvls : CollectiveAlgo::ring, n,
                    8 * kGiB, false, t.number(r, "busbw"), calibration ? "calibration" : "prediction",
                    calibration ? "sets the NVSwitch gen 4 NVLS factor" : (picks_nvls ? "NCCL's pick: NVLS" : "NCCL's pick: ring")});
    if (picks_nvls) {
      rows.push_back({where(t, r), system, topo, CollectiveOp::all_reduce, CollectiveAlgo::ring, n, 8 * kGiB, false,
                      t.number(r, "busbw, NVLS off"), "prediction", "NVLS off"});
    }
  }
}

void p6_b200(const std::string& dir, std::vector<Row>& rows) {
  const auto t = traces::read_csv_file(dir + "/ml-engineering/allreduce_busbw_p6-b200_1node_vs_4nodes.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const double size = sim::parse_bytes(t.at(r, "payload"), {t.source, where(t, r)}).value();
    // At 8 GiB one node jumps from 741 to 839 GB/s: NCCL switched from ring to NVLS there.
    const bool nvls = size >= 8 * kGiB;
    rows.push_back({where(t, r), "8x B200 p6-b200, 1 node", "dgx-b200", CollectiveOp::all_reduce,
                    nvls ? CollectiveAlgo::nvls : CollectiveAlgo::ring, 8, size, false, t.number(r, "1 node"), "prediction",
                    nvls ? "NCCL switched to NVLS (741 -> 839)" : ""});
    rows.push_back({where(t, r), "8x B200 p6-b200, 4 nodes, 8x 400G EFA", "dgx-b200:nodes=4", CollectiveOp::all_reduce,
                    CollectiveAlgo::ring, 32, size, false, t.number(r, "4 nodes"), "prediction", "rail-aligned rings"});
  }
}

void gtc(const std::string& dir, std::vector<Row>& rows, std::vector<Skipped>& skipped) {
  const auto t = traces::read_csv_file(dir + "/nccl-busbw/nccl_allreduce_busbw_nvidia_gtc.csv");
  struct Map {
    std::string_view interconnect;
    std::string_view topology;
    CollectiveAlgo algo;
    int ranks;
  };
  const std::vector<Map> maps = {
      {"NVLink3", "dgx-a100", CollectiveAlgo::ring, 8},
      {"NVLink4", "dgx-h100", CollectiveAlgo::ring, 8},
      {"NVLink4 SHARP (NVLS)", "dgx-h100", CollectiveAlgo::nvls, 8},
      {"NVLink5", "dgx-b200", CollectiveAlgo::ring, 8},
      {"NVLink5 SHARP (NVLS)", "dgx-b200", CollectiveAlgo::nvls, 8},
      {"NVL3 + 8x 200Gb RDMA", "dgx-a100:nodes=4,nic=200Gb/s", CollectiveAlgo::ring, 32},
      {"NVL4 + 8x 400Gb RDMA", "dgx-h100:nodes=4", CollectiveAlgo::ring, 32},
      {"200Gb RDMA (IB/RoCE)", "dgx-h100:nodes=2,gpus_per_node=1,nic=200Gb/s", CollectiveAlgo::ring, 2},
      {"400Gb RDMA (IB/RoCE)", "dgx-h100:nodes=2,gpus_per_node=1", CollectiveAlgo::ring, 2},
      {"NVLink", "nvl72", CollectiveAlgo::ring, 32},
      {"NVLink5 SHARP", "nvl72", CollectiveAlgo::nvls, 32},
  };
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& ic = t.at(r, "interconnect");
    const std::string system = fmt::format("{} {} ({}, {})", t.at(r, "gpu_or_system"), ic, t.at(r, "scope"), t.at(r, "slide"));
    const auto m = std::find_if(maps.begin(), maps.end(), [&](const Map& x) { return x.interconnect == ic; });
    if (m == maps.end()) {
      const std::string why = ic.starts_with("PCI")      ? "no PCIe-only topology builder yet"
                              : ic == "NVLink2"          ? "V100 (DGX-1 hybrid cube-mesh NVLink, no NVSwitch) has no builder"
                              : ic.find("TCP") != std::string::npos ? "TCP sockets: the RDMA efficiency does not apply"
                              : ic.starts_with("SHARP")  ? "InfiniBand SHARP (in-network reduction in IB switches) is not modelled"
                                                         : "2 NICs per 8 GPUs: the builders give one NIC per GPU";
      skipped.push_back({where(t, r), system, why});
      continue;
    }
    const int ranks = t.at(r, "num_gpus").empty() ? m->ranks : static_cast<int>(t.number(r, "num_gpus"));
    rows.push_back({where(t, r), system, std::string(m->topology), CollectiveOp::all_reduce, m->algo, ranks,
                    8 * kGiB, false, t.number(r, "allreduce_busbw_GBps"), "prediction", "slide peak; simulated at 8 GiB"});
  }
}

void maintainers(const std::string& dir, std::vector<Row>& rows, std::vector<Skipped>& skipped) {
  const auto t = traces::read_csv_file(dir + "/nccl-busbw/nccl_maintainer_reference_points.csv");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& system = t.at(r, "system");
    const std::string& collective = t.at(r, "collective");
    const std::string what = fmt::format("{}: {} ({})", system, collective, t.at(r, "condition"));
    if (system.find("PCIe") != std::string::npos) {
      skipped.push_back({where(t, r), what, "no builder for PCIe GPUs with NVLink bridges yet"});
      continue;
    }
    if (system.starts_with("IB NDR")) {
      rows.push_back({where(t, r), what, "dgx-h100:nodes=2,gpus_per_node=1", CollectiveOp::all_reduce, CollectiveAlgo::ring, 2, 8 * kGiB,
                      false, t.number(r, "value_GBps") + 1.0, "calibration", "46-48 GB/s per NIC: 47 sets the network factor"});
      continue;
    }
    const bool ring = collective.find("RING") != std::string::npos;
    rows.push_back({where(t, r), what, "dgx-h100", CollectiveOp::all_reduce, ring ? CollectiveAlgo::ring : CollectiveAlgo::nvls, 8,
                    8 * kGiB, t.at(r, "metric") == "algbw", t.number(r, "value_GBps"), "prediction",
                    ring ? "" : "NCCL's default at 8 GPUs: NVLS"});
  }
}

}  // namespace

ValidationSummary validate_network(const std::string& data_dir, std::string& md, std::ostream& out) {
  if (!std::filesystem::is_directory(data_dir + "/ml-engineering") || !std::filesystem::is_directory(data_dir + "/nccl-busbw")) {
    throw sim::InputError(data_dir, "", "expected the shared data folder with ml-engineering/ and nccl-busbw/ (see ../shared/data)");
  }
  std::vector<Row> rows;
  std::vector<Skipped> skipped;
  h200_16gib(data_dir, rows);
  nvls_sweep(data_dir, rows);
  p6_b200(data_dir, rows);
  gtc(data_dir, rows, skipped);
  maintainers(data_dir, rows, skipped);

  std::map<std::string, models::Topology> topologies;
  int held = 0, within = 0;
  double worst = 0;
  for (Row& row : rows) {
    auto it = topologies.find(row.topology);
    if (it == topologies.end()) it = topologies.emplace(row.topology, models::build_topology(row.topology)).first;
    models::CollectiveSpec spec;
    spec.op = row.op;
    spec.algo = row.algo;
    spec.size = sim::Bytes(row.size);
    spec.ranks = row.ranks;
    const models::CollectiveResult r = models::run_collective(it->second, spec);
    row.simulated = (row.algbw ? r.algbw : r.busbw) / 1e9;
    if (row.size >= kGiB && row.role == "prediction") {
      ++held;
      const double err = std::fabs(row.simulated / row.measured - 1.0);
      worst = std::max(worst, err);
      within += err <= 0.10 ? 1 : 0;
    }
  }

  md += "## Network: simulated vs measured collective bandwidth\n\n";
  md += "Each row runs the collective on the named topology (`orrery collective --topology ... --op ... --algo ... --size ...`)\n"
        "with one efficiency factor per link type: NVLink 0.816, network (NIC) 0.94, PCIe 1.0, and one NVLS factor per\n"
        "NVSwitch generation (gen 3: 0.707, gen 4: 0.617). Each factor is set by the one row marked *calibration*;\n"
        "every other row is a prediction. Figures are busbw in GB/s (nccl-tests definitions) unless the row says algbw.\n"
        "Rows below 1 GiB are latency-bound: NCCL's per-step software latency is not in this model's link latencies\n"
        "(the calibration issue measures it), so they are shown but not held to the 10% target.\n\n";
  md += fmt::format("**Predictions at 1 GiB and above: {} of {} within 10%; worst error {:.1f}%.**\n\n", within, held, 100 * worst);
  md += "| source | system | topology | op | algo | GPUs | size | measured | simulated | error | role | note |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& row : rows) {
    md += fmt::format("| {} | {} | `{}` | {} | {} | {} | {} | {:.1f}{} | {:.1f} | {:+.1f}% | {} | {} |\n", row.source, row.system, row.topology,
                      models::to_string(row.op), models::to_string(row.algo), row.ranks, sim::to_string(sim::Bytes(row.size)), row.measured,
                      row.algbw ? " (algbw)" : "", row.simulated, 100 * (row.simulated / row.measured - 1.0),
                      row.size < kGiB ? "latency-bound" : row.role, row.note);
  }
  md += "\n### Not compared\n\n| source | measurement | why |\n|---|---|---|\n";
  for (const Skipped& s : skipped) md += fmt::format("| {} | {} | {} |\n", s.source, s.what, s.why);
  md += "\n";
  out << fmt::format("network: {} rows compared ({} skipped); predictions at >= 1 GiB: {} of {} within 10%, worst {:.1f}%\n", rows.size(),
                     skipped.size(), within, held, 100 * worst);
  ValidationSummary summary;
  for (const Row& row : rows) {
    if (row.size >= kGiB && row.role == "prediction" && std::fabs(row.simulated / row.measured - 1.0) > 0.10) {
      summary.misses.push_back(fmt::format("{} {}", row.source, row.system));
    }
  }
  summary.held = held;
  summary.within = within;
  return summary;
}

void validate(const ValidateOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}});
  if (!o.only.empty() && o.only != "network" && o.only != "kernels" && o.only != "steps" && o.only != "balance" && o.only != "cluster" &&
      o.only != "multimodal" && o.only != "compound" && o.only != "rl" && o.only != "estimate" && o.only != "nccl" && o.only != "schedules" &&
      o.only != "multiplexing") {
    throw sim::InputError("<command line>", "--only",
                          fmt::format("found {}, expected network, nccl, kernels, steps, balance, cluster, multimodal, compound, rl, estimate, schedules or "
                                      "multiplexing",
                                      sim::quote(o.only)));
  }
  std::string md = "# Validation: simulated vs published measurements\n\n";
  md += fmt::format("Produced by `build/bin/orrery validate --data ../shared/data --out docs/validation.md{}`; do not edit by hand.\n\n",
                    o.only.empty() ? "" : " --only " + o.only);
  // Each section prints its summary line as it ends: beneath the progress line, not onto it.
  Progress progress("validate", 0, "sections");
  ProgressStream lines(out, progress);
  struct Section {
    const char* name;
    std::function<void()> run;
  };
  const std::vector<Section> all = {
      {"network", [&] { validate_network(o.data_dir, md, lines); }},
      {"nccl", [&] { validate_nccl(o.data_dir, md, lines, o.print_fit); }},
      {"kernels", [&] { validate_kernels(o.data_dir, md, lines); }},
      {"steps", [&] {
         const StepFit fit = fit_steps(o.data_dir, lines, o.refit, o.check_loo);
         if (!o.params_out.empty()) write_step_parameters(fit.params, o.params_out);
         validate_steps(fit, md, lines);
         validate_bridge(fit, md, lines);
         validate_torchtitan(fit, md, lines);
       }},
      {"balance", [&] { validate_balance(md, lines); }},
      {"cluster", [&] { validate_cluster(o.data_dir, md, lines); }},
      {"multimodal", [&] { validate_multimodal(md, lines); }},
      {"compound", [&] { validate_compound(md, lines); }},
      {"rl", [&] { validate_rl(o.data_dir, md, lines); }},
      {"estimate", [&] { validate_estimate(o.data_dir, md, lines); }},
      {"schedules", [&] { validate_schedules(md, lines); }},
      {"multiplexing", [&] { validate_multiplexing(md, lines); }},
  };
  std::vector<const Section*> chosen;
  for (const Section& section : all) {
    if (o.only.empty() || o.only == section.name) chosen.push_back(&section);
  }
  progress.set_total(static_cast<std::int64_t>(chosen.size()));
  for (const Section* section : chosen) {
    progress.note(section->name);
    section->run();
    progress.advance();
  }
  progress.finish();
  if (!o.out_path.empty()) {
    traces::write_file_atomically(o.out_path, md);
    out << fmt::format("tables written to {}\n", o.out_path);
  }
}

std::string where(const traces::CsvTable& t, std::size_t row) {
  return fmt::format("{}:{}", std::filesystem::path(t.source).filename().string(), t.lines[row]);
}

int virtual_stages(int layers, int pp) {
  if (pp == 1) return 1;
  for (int v = 8; v > 1; --v) {
    if (layers % (pp * v) == 0) return v;
  }
  return 1;
}

}  // namespace orrery::validation
