// orrery_bench: runs every benchmark, prints a table, writes {"name": value} JSON.
//   orrery_bench --out build/bench/results.json [--quick]
#include "bench.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  CLI::App app("Orrery benchmarks");
  std::string out_path = "build/bench/results.json";
  bool quick = false;
  app.add_option("--out", out_path, "Where to write the figures as JSON");
  app.add_flag("--quick", quick, "Small sizes, one repeat (a smoke test, not a measurement)");
  std::string only;
  app.add_option("--only", only, "Run only the benchmarks whose name starts with this (engine, executor, flow)");
  CLI11_PARSE(app, argc, argv);

  orrery::bench::Figures figures;
  const auto wanted = [&](std::string_view name) { return only.empty() || name.starts_with(only); };
  if (wanted("engine")) orrery::bench::bench_engine(figures, quick);
  if (wanted("executor")) orrery::bench::bench_executor(figures, quick);
  if (wanted("flow")) orrery::bench::bench_flow_all_to_all(figures, quick);

  std::size_t width = 9;
  for (const auto& f : figures) width = std::max(width, f.name.size());
  fmt::print("{:<{}}  {:>14}  {}\n", "benchmark", width, "value", "unit");
  for (const auto& f : figures) {
    const std::string value = f.value >= 1e4 ? fmt::format("{:.4g}", f.value) : fmt::format("{:.3f}", f.value);
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
  fmt::print("\nfigures written to {}\n", out_path);
  return 0;
}
