// `orrery sweep plan.json`: one scenario, many variations. A plan names a base scenario, the
// command that runs it, and axes that vary its fields by JSON pointer; a design (full grid,
// random, Latin hypercube) picks the points; each point runs in-process, on a thread pool or
// over MPI ranks, and becomes one row of the results (CSV and JSON) whatever the order in which
// points finish. The format is in traces/README.md ("Sweep plans").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace orrery::studies {

// One varied quantity. It sets one or several scenario fields (pointers; with several, each
// value is an array with one entry per pointer), one command option, or a variable: every
// `${name}` in the base's strings ("dgx-h100:nodes=${nodes},nic=${nic}").
struct SweepAxis {
  std::string name;                   // the results column
  std::vector<std::string> pointers;  // RFC 6901, into the base scenario
  std::string option;                 // or: a command option ("policies", "steps", ...)
  std::string variable;               // or: a ${name} in the base scenario's (and options') strings
  std::vector<nlohmann::json> values;  // discrete values; empty for a range
  std::vector<std::string> labels;     // optional, one per value: what the results show instead
  // A numeric range: a grid takes `steps` values from min to max (evenly, or evenly in log
  // space); random and Latin-hypercube designs draw from it.
  bool is_range = false;
  double min = 0, max = 0;
  int steps = 0;
  bool log = false, integer = false;
};

struct SweepPlan {
  std::string source;     // the plan file
  std::string command;    // step | estimate | compare | cluster | collective
  nlohmann::json base;    // the base scenario (collective: its options)
  std::string base_path;  // where the base came from; relative paths in it resolve beside it
  nlohmann::json options = nlohmann::json::object();  // command options
  std::string design = "grid";  // grid | random | lhs
  int samples = 0;              // random and lhs: how many points
  std::uint64_t seed = 1;
  std::vector<SweepAxis> axes;
  std::string objective;        // optional: a metric to rank the points by
  bool maximize = true;
  std::vector<std::string> show;  // metrics printed beside it for the best points
  std::size_t top = 5;            // how many best points to print
};

// Reads and checks a plan. Errors name the plan file and the JSON pointer: an unknown command,
// design or option; an empty axis; a pointer the base scenario lacks; a value whose type differs
// from the base field's.
SweepPlan read_sweep_plan(std::string_view text, const std::string& source);
SweepPlan load_sweep_plan(const std::string& path);

// The points of the design, in order: each is one value per axis.
std::vector<std::vector<nlohmann::json>> sweep_points(const SweepPlan& plan);

// One row of the results.
struct SweepRow {
  int point = 0;
  std::string status;  // ok | oom | invalid | error
  std::string reason;  // why not ok
  std::vector<nlohmann::json> values;  // per axis
  nlohmann::json metrics = nlohmann::json::object();  // flattened report: "memory.params_bytes" -> value
};

// Runs one point in-process: the base with the point's values set, under the plan's command.
// Bad input for that point (a plan that does not fit, ...) is a row marked invalid, not a throw.
SweepRow run_sweep_point(const SweepPlan& plan, int index, const std::vector<nlohmann::json>& values);

nlohmann::json sweep_row_to_json(const SweepRow& row);
SweepRow sweep_row_from_json(const nlohmann::json& j);

// A report's JSON flattened to "a.b.c" -> scalar; arrays of named objects are keyed by name.
nlohmann::json flatten_report(const nlohmann::json& report);

struct SweepOptions {
  std::string plan_path;
  std::string out_path;   // results JSON; the CSV goes beside it (same name, .csv)
  std::string csv_path;   // overrides the CSV's place
  std::string html_path;  // optional report with plots
  int jobs = 0;           // threads per process; 0: every core (1 per rank under MPI)
  bool resume = false;    // continue an interrupted sweep from its journal
  int max_points = 0;     // > 0: stop after this many new points, leaving the journal (installments)
  bool quiet = false;     // no progress bar even on a terminal
  nlohmann::json* results = nullptr;  // the results (as written to out_path) land here too
};

// Runs a sweep and writes its results; prints a summary. Under mpirun, rank 0 hands points to
// the other ranks and writes the same files a single process would.
void sweep(const SweepOptions& options, std::ostream& out);

// Whether this build can run over MPI ranks, and whether this process was started by mpirun.
bool sweep_mpi_built();
bool sweep_mpi_launched();

// Runs `pending` point indices: `evaluate(i)` gives a row's JSON text, `record(i, text)` takes it
// (calls are serialised). Local: `threads` workers pull the next index as they free up.
using SweepEvaluate = std::function<std::string(int)>;
using SweepRecord = std::function<void(int, const std::string&)>;
void sweep_run_local(const std::vector<int>& pending, int threads, const SweepEvaluate& evaluate, const SweepRecord& record);
// Over MPI (master/worker, since points differ in cost): rank 0 calls `prepare` for the indices
// to run, hands them out one at a time to the other ranks as they ask and runs `threads` local
// workers on the same queue, and records every row. Returns true on rank 0 only, which gets
// how many points each rank ran in `per_rank`.
bool sweep_run_mpi(const std::function<std::vector<int>()>& prepare, int threads, const SweepEvaluate& evaluate, const SweepRecord& record,
                   std::vector<int>& per_rank);

}  // namespace orrery::studies
