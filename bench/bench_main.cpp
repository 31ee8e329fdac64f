// orrery_bench: runs every benchmark, prints a table, writes {"name": value} JSON.
//   orrery_bench --out build/bench/results.json [--quick]
#include "bench.hpp"
#include "sim/huge_pages.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace {

using Group = void (*)(orrery::bench::Figures&, bool);
struct GroupSpec {
  std::string name;
  Group run;         // null: an external program beside orrery_bench, named orrery_bench_<name>
  int budget_s;      // wall-clock limit of its child process
};
const std::vector<GroupSpec> kGroups = {
    {"engine", orrery::bench::bench_engine, 600},
    {"executor", orrery::bench::bench_executor, 600},
    {"network.all_to_all.spray", orrery::bench::bench_network_all_to_all_spray, 300},
    {"network.all_to_all.ecmp", orrery::bench::bench_network_all_to_all_ecmp, 400},
    {"network.hierarchical", orrery::bench::bench_network_hierarchical, 300},
    {"network.nccl", orrery::bench::bench_network_nccl, 300},
    {"step.gpt3", orrery::bench::bench_step_gpt3, 300},
    {"step.llama405b", orrery::bench::bench_step_llama405b, 300},
    {"step.data_parallel", orrery::bench::bench_step_data_parallel, 300},
    {"step.frontier", orrery::bench::bench_step_frontier, 600},
    {"balance", orrery::bench::bench_balance, 300},
    {"cluster", orrery::bench::bench_cluster, 300},
    {"multimodal", orrery::bench::bench_multimodal, 300},
    {"rl", orrery::bench::bench_rl, 300},
    {"estimate", orrery::bench::bench_estimate, 300},
    {"sweep", orrery::bench::bench_sweep, 600},
    {"calibration", orrery::bench::bench_calibration, 600},
    {"replay", orrery::bench::bench_replay, 600},
    {"simgrid", nullptr, 600},
};

// Figures written by a child run: lines of `  "name": value`.
orrery::bench::Figures read_figures(const std::string& path) {
  orrery::bench::Figures figures;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto q1 = line.find('"'), q2 = line.find('"', q1 + 1), colon = line.find(':', q2);
    if (q1 == std::string::npos || q2 == std::string::npos || colon == std::string::npos) continue;
    figures.push_back({line.substr(q1 + 1, q2 - q1 - 1), std::stod(line.substr(colon + 1)), ""});
  }
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  orrery::sim::use_huge_pages(argv);  // as the orrery command runs (its groups inherit it)
  CLI::App app("Orrery benchmarks");
  std::string out_path = "build/bench/results.json";
  bool quick = false;
  app.add_option("--out", out_path, "Where to write the figures as JSON");
  app.add_flag("--quick", quick, "Small sizes, one repeat (a smoke test, not a measurement)");
  std::string only;
  app.add_option("--only", only, "Run only the benchmark groups whose name starts with this (engine, executor, network)");
  std::string units_out;
  app.add_option("--units-out", units_out, "Also write 'name<TAB>unit' lines here (used between runs)")->group("");
  bool in_process = false;
  app.add_flag("--in-process", in_process, "Run every group in this process (by default each runs in a child, so that peak RSS is its own)");
  CLI11_PARSE(app, argc, argv);

  orrery::bench::Figures figures;
  std::map<std::string, std::string> units;
  for (const auto& [name, group, budget_s] : kGroups) {
    if (!only.empty() && !name.starts_with(only)) continue;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string program = fmt::format("\"{}\" --only {}", self, name);
    if (group == nullptr) {
      const auto external = std::filesystem::path(self).parent_path() / ("orrery_bench_" + name);
      if (!std::filesystem::exists(external)) {
        fmt::print(stderr, "orrery_bench: skipping {}: {} was not built (needs libsimgrid-dev; `make bench` installs it)\n", name,
                   external.string());
        continue;
      }
      program = fmt::format("\"{}\" --log=root.thres:critical", external.string());
    } else if (in_process || !only.empty()) {
      group(figures, quick);
      continue;
    }
    // A child process per group: its peak RSS is that group's alone.
    const std::string part = out_path + "." + name + ".part";
    const std::string command = fmt::format("timeout {} {} --out \"{}\" --units-out \"{}.units\"{} > \"{}.log\" 2>&1", budget_s, program,
                                            part, part, quick ? " --quick" : "", part);
    const int status = std::system(command.c_str());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 124) {
      // Over its budget: say so, as a figure, rather than hang or drop it.
      figures.push_back({name + ".wall", static_cast<double>(budget_s), "s: DID NOT FINISH within this budget"});
      std::remove((part + ".log").c_str());
      continue;
    }
    if (status != 0) {
      fmt::print(stderr, "orrery_bench: group {} failed (see {}.log)\n", name, part);
      return 1;
    }
    std::ifstream unit_lines(part + ".units");
    std::string line;
    while (std::getline(unit_lines, line)) {
      const auto tab = line.find('\t');
      if (tab != std::string::npos) units[line.substr(0, tab)] = line.substr(tab + 1);
    }
    for (auto& f : read_figures(part)) {
      f.unit = units[f.name];
      figures.push_back(f);
    }
    std::remove(part.c_str());
    std::remove((part + ".log").c_str());
    std::remove((part + ".units").c_str());
  }

  std::size_t width = 9;
  for (const auto& f : figures) width = std::max(width, f.name.size());
  fmt::print("{:<{}}  {:>14}  {}\n", "benchmark", width, "value", "unit");
  for (const auto& f : figures) {
    const double magnitude = std::fabs(f.value);
    const std::string value = magnitude >= 1e4 || (magnitude > 0 && magnitude < 1e-2) ? fmt::format("{:.4g}", f.value)
                                                                                        : fmt::format("{:.3f}", f.value);
    fmt::print("{:<{}}  {:>14}  {}\n", f.name, width, value, f.unit);
  }

  std::string json = "{\n";
  for (std::size_t i = 0; i < figures.size(); ++i) {
    json += fmt::format("  \"{}\": {}{}\n", figures[i].name, figures[i].value, i + 1 < figures.size() ? "," : "");
  }
  json += "}\n";
  std::ofstream file(out_path);
  if (!file || !(file << json)) {
    fmt::print(stderr, "orrery_bench: cannot write {}\n", out_path);
    return 1;
  }
  if (!units_out.empty()) {
    std::ofstream units_file(units_out);
    for (const auto& f : figures) units_file << f.name << '\t' << f.unit << '\n';
  }
  fmt::print("\nfigures written to {}\n", out_path);
  return 0;
}
