// The step parameters' fit (models/hardware/step_params.hpp) on the public training
// measurements, and leave-one-out predictions of every row: the Megatron-LM tables, Megatron-
// Bridge's runs and torchtitan's as step scenarios, each row's figure simulated as the table
// prints it.
//   StepFit fit = fit_steps("../shared/data", std::cout, /*refit=*/false);
//   fit.rows[0].loo  // predicted by parameters fitted without that row's configuration
#pragma once

#include "models/hardware/step_params.hpp"
#include "models/training/step.hpp"

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::validation {

struct StepFitRow {
  std::string source;  // "file.csv:12"
  std::string table;   // "Megatron-Bridge", "torchtitan", "Megatron-Core 2024, H100 weak scaling", ...
  std::string group;   // what the table's errors are printed per ("DGX-H100 FP8 pretrain")
  std::string what, plan;
  std::string plan_note;  // printed after the plan, not part of the configuration's key
  std::string model;  // the catalog's name
  models::StepScenario sc;
  double measured = 0;    // the table's figure (TFLOP/s or tokens/s per GPU)
  double per_second = 0;  // the figure is per_second / (simulated step seconds)
  double memory_gib = 0;  // torchtitan's printed peak memory (0: not printed)

  // Filled by fit_steps.
  double fitted = 0;  // simulated with the parameters fitted on every row
  double loo = 0;     // simulated with the parameters fitted on every row of other configurations
  bool loo_exact = false;  // that fit re-linearised at every step (StepParameters::leave_one_out_exact)
  double step_s = 0, mfu = 0, simulated_gib = 0;
  bool oom = false;
  models::MemoryEstimate memory;
  std::vector<std::string> params;  // the parameters its step uses (the names a fit sets)
  // Rows of one scenario share a key (the printed plan need not show every field).
  std::string key() const {
    return table + "|" + what + "|" + plan + "|" + std::to_string(sc.plan.seq_len) + "|" + std::to_string(sc.plan.global_batch) + "|" +
           std::to_string(sc.plan.micro_batch);
  }
};

struct StepFit {
  std::vector<StepFitRow> rows;
  std::vector<std::string> missing;   // rows not run: "source (what): why", per table
  std::vector<std::string> missing_tables;  // their tables, parallel to missing
  models::StepParameters params;      // the parameters predictions use (the file's, or the refit's)
  std::vector<std::string> fitted_names;    // the parameters the rows identify
  double optimum_distance = 0;        // largest |ln| step from params to the all-rows optimum
  int configurations = 0;             // distinct scenarios (left out together)
  int simulations = 0;
  int loo_one_step = 0;               // configurations the file has no leave-one-out fit for

  // The rows of one table, and its rows not run.
  std::vector<const StepFitRow*> rows_of(std::string_view table) const;
  std::vector<std::string> missing_of(std::string_view table) const;
};

// The refit fits a configuration's leave-one-out again re-linearised at every step (exact, about
// 45 s each on 2 cores, too slow for all of them) where the chord method's prediction errs by more
// than this on one of its rows: there its error would change what the tables report (under step
// parameters v18 it overstated GPT-OSS 120B on 64 GB200's, +35.0% against +25.0% exact).
inline constexpr double kExactLooAbove = 0.15;

// A row's leave-one-out error as the tables print it: "+12.3%", with " exact" where its
// configuration's fit was re-linearised at every step.
std::string loo_error_cell(const StepFitRow& row);

// Builds the rows of ../shared/data's training tables (each skipped, with a message on `out`,
// when its folder is absent).
void megatron_fit_rows(const std::string& data_dir, StepFit& fit);
void bridge_fit_rows(const std::string& data_dir, StepFit& fit);
void torchtitan_fit_rows(const std::string& data_dir, StepFit& fit);

// Every table's rows, fitted and predicted leave-one-configuration-out. With `refit`, the
// parameters are fitted afresh (Levenberg-Marquardt on ln(simulated / measured), from the
// priors, each parameter block apart), and so is each configuration's leave-one-out fit
// (Levenberg-Marquardt from the all-rows fit on every other row of its block, the all-rows
// Jacobian kept: a chord method; re-linearised at every step where that errs by more than
// kExactLooAbove), both written to `params`; otherwise the built-in file's values and
// leave-one-out fits stand. Each row's prediction is then its step simulated in full at its
// configuration's leave-one-out values. `check_loo` names configurations (by first row,
// "file.csv:12") to fit exactly without them as well (re-linearised at every step on the other
// rows of their block, about 20 to 60 s each here) and print both predictions on `out`.
StepFit fit_steps(const std::string& data_dir, std::ostream& out, bool refit, const std::vector<std::string>& check_loo = {});

// Writes `params` as step_params.json's format to `path` (the version from the date of its
// rows' fit is the caller's: params.version).
void write_step_parameters(const models::StepParameters& params, const std::string& path);

// The per-table, per-group mean absolute percentage errors of `rows`' leave-one-out predictions.
struct StepFitTable {
  std::string table, group;
  int rows = 0;
  double loo_mape = 0, fitted_mape = 0, worst_loo = 0;
};
std::vector<StepFitTable> step_fit_tables(const std::vector<StepFitRow>& rows, bool by_group);

}  // namespace orrery::validation
