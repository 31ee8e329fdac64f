#include "validation/step_fit.hpp"

#include "models/hardware/cost.hpp"
#include "policies/pipeline.hpp"
#include "runs/progress.hpp"
#include "sim/error.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <thread>

namespace orrery::validation {

namespace {

// The fit's settings, stated once:
//  - residuals are ln(simulated / measured), so a row 10% off weighs the same on any table;
//  - each parameter is fitted in ln, with a pull towards its prior (the isolated-kernel value of
//    models::step_parameter_prior) weighted as a Gaussian of its stated spread against rows
//    spread 10%: weight (0.1 / ln spread)^2, so a parameter the rows do not determine stays near
//    what is known of it without them; a tie (models::step_parameter_tie) pulls the ln ratio of
//    two parameters towards its value with the same weight for its spread;
//  - derivatives are forward differences of 5% in the parameter (the emulator rounds kernel
//    times to whole nanoseconds and takes maxima, so smaller steps see its steps, not its slope).
constexpr double kRowSpread = 0.1;
constexpr double kStep = 0.05;
constexpr int kMaxIterations = 40;
constexpr int kLooIterations = 10;    // a leave-one-out fit's trials (each simulates its block once)
// A re-linearised leave-one-out fit's (the refit's and --check-loo's): 12 left the worst row's
// (GPT-OSS 120B in MXFP8 on 64 GB200) 2.4 points short of where 30 ends.
constexpr int kExactIterations = 30;

std::string kind_of(const std::string& name) {
  const std::size_t a = name.find('.');
  return name.substr(name.find('.', a + 1) + 1);
}

struct Problem {
  Problem(std::vector<StepFitRow>& r, models::StepParameters file) : rows(r), base(std::move(file)) {}
  std::vector<StepFitRow>& rows;
  std::vector<std::size_t> config_of;          // row -> configuration
  std::vector<std::size_t> first_row;          // configuration -> a row
  std::vector<std::string> names;              // fitted parameters
  std::vector<std::vector<int>> uses;          // configuration -> parameter indices
  Eigen::VectorXd prior;                       // ln prior per parameter
  Eigen::VectorXd weight;                      // its pull
  // Ties: a pull on the ln ratio of two parameters towards `offset` (a GEMM efficiency at a low
  // precision against the same architecture and framework's bf16 one).
  struct Tie {
    int a, b;
    double offset, weight;
  };
  std::vector<Tie> ties;
  std::vector<bool> bounded;
  models::StepParameters base;                 // the file (values the fit does not set)
  runs::Progress* progress = nullptr;
  int simulations = 0;

  models::StepParameters with(const Eigen::VectorXd& phi) const {
    models::StepParameters p = base;
    for (std::size_t j = 0; j < names.size(); ++j) {
      auto& v = p.values[names[j]];
      v.value = std::exp(phi[static_cast<Eigen::Index>(j)]);
    }
    return p;
  }
};

struct Outcome {
  double step_s = 0, mfu = 0;
  bool oom = false;
  models::MemoryEstimate memory;
};

Outcome simulate(const models::StepScenario& sc, const models::StepParameters& params) {
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {sc.source, "/plan/schedule"});
  const models::RooflineCostModel cost(sc.gpu, models::training_roofline_params(sc.gpu, models::step_context(sc.plan), params));
  const models::StepResult r = models::run_step(sc, cost, *schedule);
  return {r.step_time.to_seconds(), r.mfu, r.oom, r.memory};
}

// Runs `jobs` (index -> work) on every core, in a deterministic result order.
template <typename Fn>
void parallel(std::size_t jobs, Fn&& fn) {
  const std::size_t threads = std::max<std::size_t>(1, std::min<std::size_t>(jobs, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < jobs;) {
        try {
          fn(i);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// ln(step seconds) per configuration at phi, and (with `jacobian`) its derivative in each
// parameter the configuration uses.
struct Linearisation {
  Eigen::VectorXd ln_step;  // per configuration
  Eigen::MatrixXd d;        // configuration x parameter
};

// Only the configurations `active` marks (every one when it is empty) are simulated; the others'
// entries stay 0.
Linearisation linearise(Problem& pb, const Eigen::VectorXd& phi, bool jacobian, const std::vector<char>& active = {}) {
  const std::size_t configs = pb.first_row.size();
  Linearisation out{Eigen::VectorXd::Zero(static_cast<Eigen::Index>(configs)),
                    Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(configs), static_cast<Eigen::Index>(pb.names.size()))};
  // Jobs: (configuration, -1) at phi, (configuration, j) with parameter j moved.
  std::vector<std::pair<std::size_t, int>> jobs;
  for (std::size_t c = 0; c < configs; ++c) {
    if (!active.empty() && !active[c]) continue;
    jobs.emplace_back(c, -1);
    if (jacobian) {
      for (const int j : pb.uses[c]) jobs.emplace_back(c, j);
    }
  }
  std::vector<double> result(jobs.size());
  const models::StepParameters at = pb.with(phi);
  parallel(jobs.size(), [&](std::size_t i) {
    const auto [c, j] = jobs[i];
    const models::StepScenario& sc = pb.rows[pb.first_row[c]].sc;
    if (j < 0) {
      result[i] = std::log(simulate(sc, at).step_s);
    } else {
      Eigen::VectorXd moved = phi;
      moved[j] += kStep;
      result[i] = std::log(simulate(sc, pb.with(moved)).step_s);
    }
  });
  pb.simulations += static_cast<int>(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].second < 0) out.ln_step[static_cast<Eigen::Index>(jobs[i].first)] = result[i];
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto [c, j] = jobs[i];
    if (j >= 0) out.d(static_cast<Eigen::Index>(c), j) = (result[i] - out.ln_step[static_cast<Eigen::Index>(c)]) / kStep;
  }
  if (pb.progress != nullptr) pb.progress->advance();
  return out;
}

// Residuals per row: ln(simulated figure / measured) = ln(per_second / measured) - ln(step).
Eigen::VectorXd residuals(const Problem& pb, const Linearisation& lin) {
  Eigen::VectorXd r(static_cast<Eigen::Index>(pb.rows.size()));
  for (std::size_t i = 0; i < pb.rows.size(); ++i) {
    const StepFitRow& row = pb.rows[i];
    r[static_cast<Eigen::Index>(i)] = std::log(row.per_second / row.measured) - lin.ln_step[static_cast<Eigen::Index>(pb.config_of[i])];
  }
  return r;
}

// The prior's cost at phi: each parameter's pull and each tie's, those of parameters `moves`
// marks (every one when it is empty).
double prior_cost(const Problem& pb, const Eigen::VectorXd& phi, const std::vector<char>& moves = {}) {
  const auto moving = [&](int j) { return moves.empty() || moves[static_cast<std::size_t>(j)]; };
  double cost = 0;
  for (Eigen::Index j = 0; j < phi.size(); ++j) {
    if (moving(static_cast<int>(j))) cost += pb.weight[j] * (phi[j] - pb.prior[j]) * (phi[j] - pb.prior[j]);
  }
  for (const Problem::Tie& t : pb.ties) {
    if (!moving(t.a) && !moving(t.b)) continue;
    const double d = phi[t.a] - phi[t.b] - t.offset;
    cost += t.weight * d * d;
  }
  return cost;
}

double cost_of(const Problem& pb, const Eigen::VectorXd& r, const Eigen::VectorXd& phi) { return r.squaredNorm() + prior_cost(pb, phi); }

// The normal equations of rows `keep` (1 = in) at a linearisation: A = J'J + prior, b = J'r + prior pull.
void normal_equations(const Problem& pb, const Linearisation& lin, const Eigen::VectorXd& r, const Eigen::VectorXd& phi,
                      const std::vector<char>& keep, Eigen::MatrixXd& A, Eigen::VectorXd& b) {
  A = Eigen::MatrixXd(pb.weight.asDiagonal());
  b = (pb.weight.array() * (phi - pb.prior).array()).matrix();
  for (const Problem::Tie& t : pb.ties) {
    const double d = phi[t.a] - phi[t.b] - t.offset;
    A(t.a, t.a) += t.weight, A(t.b, t.b) += t.weight, A(t.a, t.b) -= t.weight, A(t.b, t.a) -= t.weight;
    b[t.a] += t.weight * d, b[t.b] -= t.weight * d;
  }
  for (std::size_t i = 0; i < pb.rows.size(); ++i) {
    if (!keep[i]) continue;
    // d residual / d phi = - d ln(step) / d phi
    const Eigen::RowVectorXd g = -lin.d.row(static_cast<Eigen::Index>(pb.config_of[i]));
    A.noalias() += g.transpose() * g;
    b.noalias() += g.transpose() * r[static_cast<Eigen::Index>(i)];
  }
}

Eigen::VectorXd clamp_bounds(const Problem& pb, Eigen::VectorXd phi) {
  for (std::size_t j = 0; j < pb.names.size(); ++j) {
    if (pb.bounded[j]) phi[static_cast<Eigen::Index>(j)] = std::min(phi[static_cast<Eigen::Index>(j)], 0.0);
  }
  return phi;
}

struct Fitted {
  Eigen::VectorXd x;
  double cost;
};

// Levenberg-Marquardt's loop, shared by the all-rows fit and a configuration's leave-one-out
// fit: at most `iterations` trials of x - (A + mu diag A)^-1 b, with (A, b) = normal(x, r);
// `trial_of(step)` turns the step into the trial point (bounds, parameters held), `evaluate`
// gives its residuals and cost; a trial of lower cost is taken (then `taken(x, r)` may
// re-linearise there and replace r) and mu falls, else mu rises. Stops once a taken trial moved
// no parameter by 1e-3 or more.
template <class Normal, class TrialOf, class Evaluate, class Taken>
Fitted lm_loop(Eigen::VectorXd x, Eigen::VectorXd r, double cost, int iterations, Normal&& normal, TrialOf&& trial_of, Evaluate&& evaluate,
               Taken&& taken) {
  double mu = 1e-3;
  for (int it = 0; it < iterations; ++it) {
    Eigen::MatrixXd A;
    Eigen::VectorXd b;
    normal(x, r, A, b);
    const Eigen::VectorXd trial = trial_of((A + mu * Eigen::MatrixXd(A.diagonal().asDiagonal())).ldlt().solve(b), x);
    auto [rt, ct] = evaluate(trial, it);
    if (ct < cost) {
      const bool converged = (trial - x).cwiseAbs().maxCoeff() < 1e-3;
      x = trial;
      r = std::move(rt);
      cost = ct;
      mu = std::max(mu / 4, 1e-6);
      taken(x, r);
      if (converged) break;
    } else {
      mu *= 8;
    }
  }
  return {x, cost};
}

// Levenberg-Marquardt on the rows `keep` from `x`, at most `iterations` steps, re-linearised at
// every point it takes. Only the configurations with a kept row are simulated; with `moves`
// (per parameter) only the parameters it marks move, the others stay at x.
Fitted levenberg_marquardt(Problem& pb, Eigen::VectorXd x, const std::vector<char>& keep, int iterations, const std::string& label,
                           const std::vector<char>& moves = {}) {
  const auto kept = [&](Eigen::VectorXd r) {
    for (Eigen::Index i = 0; i < r.size(); ++i) {
      if (!keep[static_cast<std::size_t>(i)]) r[i] = 0;
    }
    return r;
  };
  std::vector<char> active(pb.first_row.size(), 0);
  for (std::size_t i = 0; i < pb.rows.size(); ++i) active[pb.config_of[i]] |= keep[i];
  const auto kept_rows = static_cast<double>(std::max<std::ptrdiff_t>(1, std::count(keep.begin(), keep.end(), 1)));
  Linearisation lin = linearise(pb, x, true, active);
  Eigen::VectorXd r = kept(residuals(pb, lin));
  const double cost = cost_of(pb, r, x);
  return lm_loop(
      x, r, cost, iterations,
      [&](const Eigen::VectorXd& at, const Eigen::VectorXd& rx, Eigen::MatrixXd& A, Eigen::VectorXd& b) { normal_equations(pb, lin, rx, at, keep, A, b); },
      [&](Eigen::VectorXd step, const Eigen::VectorXd& from) {
        for (std::size_t j = 0; j < moves.size(); ++j) {
          if (!moves[j]) step[static_cast<Eigen::Index>(j)] = 0;
        }
        return clamp_bounds(pb, from - step);
      },
      [&](const Eigen::VectorXd& trial, int it) {
        Eigen::VectorXd rt = kept(residuals(pb, linearise(pb, trial, false, active)));
        const double ct = cost_of(pb, rt, trial);
        if (pb.progress != nullptr) {
          pb.progress->note(fmt::format("{}, iteration {}: rms ln error {:.4f}", label, it + 1, std::sqrt(rt.squaredNorm() / kept_rows)));
        }
        return std::pair{std::move(rt), ct};
      },
      [&](const Eigen::VectorXd& at, Eigen::VectorXd& rx) {
        lin = linearise(pb, at, true, active);
        rx = kept(residuals(pb, lin));
      });
}

// The configurations each configuration's leave-one-out fit must simulate: those connected to
// it through shared parameters (a parameter block: one architecture and framework), itself
// included.
std::vector<std::vector<std::size_t>> parameter_blocks(const Problem& pb) {
  const std::size_t configs = pb.first_row.size();
  std::vector<std::size_t> parent(configs);
  for (std::size_t c = 0; c < configs; ++c) parent[c] = c;
  const auto root = [&](std::size_t c) {
    while (parent[c] != c) c = parent[c] = parent[parent[c]];
    return c;
  };
  std::map<int, std::size_t> owner;  // parameter -> a configuration using it
  for (std::size_t c = 0; c < configs; ++c) {
    for (const int j : pb.uses[c]) {
      const auto [it, fresh] = owner.emplace(j, c);
      if (!fresh) parent[root(c)] = root(it->second);
    }
  }
  std::map<std::size_t, std::vector<std::size_t>> members;
  for (std::size_t c = 0; c < configs; ++c) members[root(c)].push_back(c);
  std::vector<std::vector<std::size_t>> out(configs);
  for (std::size_t c = 0; c < configs; ++c) out[c] = members[root(c)];
  return out;
}

// A block's fit: the rows of its configurations but `except`'s (kNone: all of them), and the
// parameters they use, the only ones that move (the others stay where they are: no row kept
// depends on them).
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
struct BlockFit {
  std::vector<char> keep;   // per row
  std::vector<char> moves;  // per parameter
};
BlockFit block_fit(const Problem& pb, const std::vector<std::size_t>& block, std::size_t except = kNone) {
  BlockFit f{std::vector<char>(pb.rows.size(), 0), std::vector<char>(pb.names.size(), 0)};
  std::vector<char> in_block(pb.first_row.size(), 0);
  for (const std::size_t k : block) {
    in_block[k] = 1;
    for (const int j : pb.uses[k]) f.moves[static_cast<std::size_t>(j)] = 1;
  }
  for (std::size_t i = 0; i < pb.rows.size(); ++i) f.keep[i] = in_block[pb.config_of[i]] && pb.config_of[i] != except;
  return f;
}

// Configuration `c`'s leave-one-out fit: Levenberg-Marquardt from phi on the rows of the other
// configurations of its block, with the all-rows Jacobian `lin` kept (a chord method: checked
// against a fully re-linearised fit by `orrery validate --only steps --check-loo`) and each
// trial's residuals simulated. Sequential: the caller runs configurations in parallel.
Eigen::VectorXd leave_one_out(const Problem& pb, const Linearisation& lin, const Eigen::VectorXd& r_phi, const Eigen::VectorXd& phi, std::size_t c,
                              const std::vector<std::size_t>& block) {
  const BlockFit f = block_fit(pb, block, c);
  const std::vector<char>& keep = f.keep;
  const std::vector<char>& moves = f.moves;
  const auto restricted_cost = [&](const Eigen::VectorXd& x, const Eigen::VectorXd& rx) {
    double cost = 0;
    for (std::size_t i = 0; i < pb.rows.size(); ++i) {
      if (keep[i]) cost += rx[static_cast<Eigen::Index>(i)] * rx[static_cast<Eigen::Index>(i)];
    }
    return cost + prior_cost(pb, x, moves);
  };
  const auto simulate_block = [&](const Eigen::VectorXd& x) {
    Linearisation at = lin;
    const models::StepParameters params = pb.with(x);
    for (const std::size_t k : block) {
      if (k != c) at.ln_step[static_cast<Eigen::Index>(k)] = std::log(simulate(pb.rows[pb.first_row[k]].sc, params).step_s);
    }
    return residuals(pb, at);
  };
  return lm_loop(
             phi, r_phi, restricted_cost(phi, r_phi), kLooIterations,
             [&](const Eigen::VectorXd& at, const Eigen::VectorXd& rx, Eigen::MatrixXd& A, Eigen::VectorXd& b) { normal_equations(pb, lin, rx, at, keep, A, b); },
             [&](Eigen::VectorXd step, const Eigen::VectorXd& from) {
               for (std::size_t j = 0; j < pb.names.size(); ++j) {
                 if (!moves[j]) step[static_cast<Eigen::Index>(j)] = 0;
               }
               return clamp_bounds(pb, from - step);
             },
             [&](const Eigen::VectorXd& trial, int) {
               Eigen::VectorXd rt = simulate_block(trial);
               const double ct = restricted_cost(trial, rt);
               return std::pair{std::move(rt), ct};
             },
             [](const Eigen::VectorXd&, Eigen::VectorXd&) {})
      .x;
}

// Configuration `c`'s leave-one-out fit re-linearised at every step: Levenberg-Marquardt from phi
// on every row but its own. The fit is that of its block's other rows in the block's parameters:
// no other row depends on them, and the other parameters' optimum (on rows that do not depend on
// the block's) stays phi, so only the block is simulated.
Eigen::VectorXd exact_leave_one_out(Problem& pb, const Eigen::VectorXd& phi, std::size_t c, const std::string& name, const std::vector<std::size_t>& block) {
  const BlockFit f = block_fit(pb, block, c);
  return levenberg_marquardt(pb, phi, f.keep, kExactIterations, "exact leave-one-out of " + name, f.moves).x;
}

}  // namespace

StepFit fit_steps(const std::string& data_dir, std::ostream& out, bool refit, const std::vector<std::string>& check_loo) {
  StepFit fit;
  megatron_fit_rows(data_dir, fit);
  bridge_fit_rows(data_dir, fit);
  torchtitan_fit_rows(data_dir, fit);
  fit.params = models::builtin_step_parameters();
  // A row whose step cannot run (a plan the emulator refuses) is listed with why, not fitted.
  std::vector<std::string> refused(fit.rows.size());
  parallel(fit.rows.size(), [&](std::size_t i) {
    try {
      models::validate_plan(fit.rows[i].sc.plan, fit.rows[i].sc.model, fit.rows[i].sc.plan.gpus(), fit.rows[i].source, "/plan");
      models::validate_precision(fit.rows[i].sc.plan, fit.rows[i].sc.gpu, fit.rows[i].source, "/plan");
      (void)policies::pipeline_schedules().create(fit.rows[i].sc.plan.schedule, {}, {fit.rows[i].source, "/plan/schedule"});
    } catch (const sim::InputError& e) {
      refused[i] = e.what();
    }
  });
  std::vector<StepFitRow> runnable;
  for (std::size_t i = 0; i < fit.rows.size(); ++i) {
    if (refused[i].empty()) {
      runnable.push_back(std::move(fit.rows[i]));
    } else {
      fit.missing.push_back(fmt::format("{} ({}): {}", fit.rows[i].source, fit.rows[i].what, refused[i]));
      fit.missing_tables.push_back(fit.rows[i].table);
    }
  }
  fit.rows = std::move(runnable);
  if (fit.rows.empty()) return fit;

  Problem pb(fit.rows, fit.params);
  // Configurations: rows of one scenario (a table printing the same run twice, for two
  // releases) are left out together.
  std::map<std::string, std::size_t> config_index;
  for (std::size_t i = 0; i < fit.rows.size(); ++i) {
    const auto [it, fresh] = config_index.emplace(fit.rows[i].key(), pb.first_row.size());
    if (fresh) pb.first_row.push_back(i);
    pb.config_of.push_back(it->second);
  }
  // A configuration --check-loo names must be one (before any simulation).
  for (const std::string& asked : check_loo) {
    if (std::none_of(pb.first_row.begin(), pb.first_row.end(), [&](std::size_t i) { return fit.rows[i].source == asked; })) {
      throw sim::InputError("--check-loo", "", fmt::format("found {}, expected the first row of a configuration as docs/validation.md names it (such as {})",
                                                           sim::quote(asked), fit.rows[pb.first_row[0]].source));
    }
  }
  std::map<std::string, int> name_index;
  std::vector<double> start;
  pb.uses.resize(pb.first_row.size());
  for (std::size_t c = 0; c < pb.first_row.size(); ++c) {
    StepFitRow& row = fit.rows[pb.first_row[c]];
    for (const models::StepParameterUse& u : models::step_parameter_uses(row.sc.gpu, models::step_context(row.sc.plan), fit.params)) {
      const auto [it, fresh] = name_index.emplace(u.name, static_cast<int>(pb.names.size()));
      if (fresh) {
        pb.names.push_back(u.name);
        start.push_back(u.value);
      }
      pb.uses[c].push_back(it->second);
    }
  }
  for (std::size_t i = 0; i < fit.rows.size(); ++i) {
    for (const int j : pb.uses[pb.config_of[i]]) fit.rows[i].params.push_back(pb.names[static_cast<std::size_t>(j)]);
  }
  const auto n = static_cast<Eigen::Index>(pb.names.size());
  pb.prior.resize(n);
  pb.weight.resize(n);
  Eigen::VectorXd phi(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const std::string kind = kind_of(pb.names[static_cast<std::size_t>(j)]);
    pb.prior[j] = std::log(models::step_parameter_prior(kind));
    pb.weight[j] = std::pow(kRowSpread / std::log(models::step_parameter_prior_spread(kind)), 2);
    pb.bounded.push_back(models::step_parameter_bounded(kind));
    phi[j] = refit ? pb.prior[j] : std::log(start[static_cast<std::size_t>(j)]);
  }
  // Ties between parameters (models::step_parameter_tie), where both are fitted.
  for (std::size_t j = 0; j < pb.names.size(); ++j) {
    const std::optional<models::StepParameterTie> tie = models::step_parameter_tie(pb.names[j]);
    if (!tie) continue;
    const auto to = std::find(pb.names.begin(), pb.names.end(), tie->to);
    if (to == pb.names.end()) continue;
    pb.ties.push_back({static_cast<int>(j), static_cast<int>(to - pb.names.begin()), std::log(tie->ratio), std::pow(kRowSpread / std::log(tie->spread), 2)});
  }
  fit.configurations = static_cast<int>(pb.first_row.size());
  std::vector<char> all(fit.rows.size(), 1);

  // A refit starts from what is known without the rows (every parameter at its prior), so its
  // values do not depend on an earlier file's; and once more with the host's issue time at the
  // top of its prior's range squared. That time counts only where it exceeds the GPU's work (a
  // maximum): where it binds on no row its derivative is zero and it stays where it started, so
  // a start where it binds nowhere cannot find a fit where it does. The start whose fit has the
  // lower cost (residuals and prior pulls) is kept.
  std::vector<Eigen::VectorXd> starts;
  if (refit) {
    starts.push_back(phi);
    Eigen::VectorXd high = phi;
    for (Eigen::Index j = 0; j < n; ++j) {
      const std::string kind = kind_of(pb.names[static_cast<std::size_t>(j)]);
      if (kind == "host") high[j] += 2 * std::log(models::step_parameter_prior_spread(kind));
    }
    starts.push_back(high);
  }
  // Parameter blocks: the configurations connected through shared parameters (one architecture
  // and framework each). No row depends on two blocks' parameters.
  const std::vector<std::vector<std::size_t>> blocks = parameter_blocks(pb);
  std::vector<std::size_t> block_heads;  // one configuration per block
  for (std::size_t c = 0; c < blocks.size(); ++c) {
    if (blocks[c].front() == c) block_heads.push_back(c);
  }
  runs::Progress progress("fit steps", static_cast<int>(block_heads.size() * starts.size()) * kMaxIterations + 3, "passes");
  pb.progress = &progress;

  // The refit: Levenberg-Marquardt from each start, block by block. The all-rows optimum is each
  // block's own on its rows, and fitted apart each block converges at its own pace: fitted
  // together, one trial's acceptance and damping waited on every block's (version 20's exact
  // leave-one-out fits, run so, stopped short of their optimum).
  for (const std::size_t head : block_heads) {
    if (pb.uses[head].empty()) continue;  // a block that fits nothing
    const BlockFit block = block_fit(pb, blocks[head]);
    const std::vector<char>& moves = block.moves;
    const std::string& named = pb.names[static_cast<std::size_t>(pb.uses[head].front())];
    const std::string block_name = named.substr(0, named.find('.', named.find('.') + 1));
    double best = std::numeric_limits<double>::infinity();
    Eigen::VectorXd best_x;
    for (std::size_t s = 0; s < starts.size(); ++s) {
      // The other blocks' parameters stay at the first start's, so the starts' costs compare.
      Eigen::VectorXd x = starts[0];
      for (std::size_t j = 0; j < moves.size(); ++j) {
        if (moves[j]) x[static_cast<Eigen::Index>(j)] = starts[s][static_cast<Eigen::Index>(j)];
      }
      const Fitted f = levenberg_marquardt(pb, x, block.keep, kMaxIterations, fmt::format("{}, start {}", block_name, s + 1), moves);
      if (f.cost < best) best = f.cost, best_x = f.x;
    }
    if (!starts.empty()) {
      for (std::size_t j = 0; j < moves.size(); ++j) {
        if (moves[j]) phi[static_cast<Eigen::Index>(j)] = best_x[static_cast<Eigen::Index>(j)];
      }
    }
  }
  Linearisation lin = linearise(pb, phi, true);
  Eigen::VectorXd r = residuals(pb, lin);
  if (refit) {
    fit.params = pb.with(phi);
    // The refit's file holds what the rows determine, nothing older.
    std::erase_if(fit.params.values, [&](const auto& kv) { return std::find(pb.names.begin(), pb.names.end(), kv.first) == pb.names.end(); });
    // Each parameter's fit rows: those whose step uses it.
    for (std::size_t j = 0; j < pb.names.size(); ++j) {
      auto& v = fit.params.values[pb.names[j]];
      v.rows.clear();
      for (const StepFitRow& row : fit.rows) {
        if (std::find(row.params.begin(), row.params.end(), pb.names[j]) != row.params.end()) v.rows.push_back(row.source);
      }
    }
    fit.params.fitted_by = "orrery validate --only steps --refit --params-out models/hardware/step_params.json";
    fit.params.version = fmt::format("{} rows, {} configurations", fit.rows.size(), fit.configurations);
    pb.base = fit.params;
  }

  // How far the values stand from the all-rows optimum of the linearised problem (one
  // Gauss-Newton step; the fit itself is the optimum of the simulated one).
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
  normal_equations(pb, lin, r, phi, all, A, b);
  fit.optimum_distance = (clamp_bounds(pb, phi - A.ldlt().solve(b)) - phi).cwiseAbs().maxCoeff();

  // Leave one configuration out. A refit fits each configuration's own: the refit's
  // Levenberg-Marquardt on every other row, from phi, with the all-rows Jacobian kept and the
  // residuals simulated afresh at each trial (only the configurations that share a parameter
  // with it, the rest cannot move its step), and stores the values its step uses in the file.
  // Without a refit the file's are read; a configuration the file has none for (rows added since)
  // takes one Gauss-Newton step from phi on the linearisation, and is counted.
  std::vector<Eigen::VectorXd> loo_phi(pb.first_row.size(), phi);
  const auto first_source = [&](std::size_t c) { return fit.rows[pb.first_row[c]].source; };
  if (refit) {
    progress.set_total(static_cast<std::int64_t>(starts.size()) * kMaxIterations + 3 + static_cast<std::int64_t>(pb.first_row.size()), "passes");
    progress.note("leave-one-out fits");
    parallel(pb.first_row.size(), [&](std::size_t c) {
      loo_phi[c] = leave_one_out(pb, lin, r, phi, c, blocks[c]);
      progress.advance();
    });
    // Where the chord method's prediction errs by more than kExactLooAbove on a row, the exact
    // fit replaces it.
    std::vector<double> loo_step(pb.first_row.size());
    parallel(pb.first_row.size(), [&](std::size_t c) { loo_step[c] = simulate(fit.rows[pb.first_row[c]].sc, pb.with(loo_phi[c])).step_s; });
    std::vector<char> far(pb.first_row.size(), 0);
    for (std::size_t i = 0; i < fit.rows.size(); ++i) {
      const std::size_t c = pb.config_of[i];
      if (std::abs(fit.rows[i].per_second / loo_step[c] / fit.rows[i].measured - 1) > kExactLooAbove) far[c] = 1;
    }
    const auto exact_count = static_cast<std::int64_t>(std::count(far.begin(), far.end(), 1));
    progress.set_total(static_cast<std::int64_t>(starts.size()) * kMaxIterations + 3 + static_cast<std::int64_t>(pb.first_row.size()) +
                           exact_count * (2 * kExactIterations + 1),
                       "passes");
    fit.params.leave_one_out_exact.clear();
    for (std::size_t c = 0; c < pb.first_row.size(); ++c) {
      if (!far[c]) continue;
      loo_phi[c] = exact_leave_one_out(pb, phi, c, first_source(c), blocks[c]);
      fit.params.leave_one_out_exact.push_back(first_source(c));
    }
    std::sort(fit.params.leave_one_out_exact.begin(), fit.params.leave_one_out_exact.end());
    fit.params.leave_one_out.clear();
    for (std::size_t c = 0; c < pb.first_row.size(); ++c) {
      auto& values = fit.params.leave_one_out[first_source(c)];
      for (const int j : pb.uses[c]) values[pb.names[static_cast<std::size_t>(j)]] = std::exp(loo_phi[c][j]);
    }
  } else {
    for (std::size_t c = 0; c < pb.first_row.size(); ++c) {
      // A stored fit counts only if it holds every parameter the step uses.
      const auto stored = fit.params.leave_one_out.find(first_source(c));
      const bool complete = stored != fit.params.leave_one_out.end() && std::all_of(pb.uses[c].begin(), pb.uses[c].end(), [&](int j) {
                              return stored->second.count(pb.names[static_cast<std::size_t>(j)]) == 1;
                            });
      if (complete) {
        for (const int j : pb.uses[c]) loo_phi[c][j] = std::log(stored->second.find(pb.names[static_cast<std::size_t>(j)])->second);
        continue;
      }
      std::vector<char> keep(fit.rows.size(), 1);
      for (std::size_t i = 0; i < fit.rows.size(); ++i) keep[i] = pb.config_of[i] != c;
      Eigen::MatrixXd Ac;
      Eigen::VectorXd bc;
      normal_equations(pb, lin, r, phi, keep, Ac, bc);
      loo_phi[c] = clamp_bounds(pb, phi - Ac.ldlt().solve(bc));
      ++fit.loo_one_step;
    }
  }
  // The check of that method: for the configurations asked, an exact leave-one-out as well
  // (Levenberg-Marquardt re-linearised at every step, on every row but the configuration's).
  for (std::size_t c = 0; c < pb.first_row.size(); ++c) {
    if (std::find(check_loo.begin(), check_loo.end(), first_source(c)) == check_loo.end()) continue;
    const Eigen::VectorXd exact = exact_leave_one_out(pb, phi, c, first_source(c), blocks[c]);
    const StepFitRow& row = fit.rows[pb.first_row[c]];
    const auto error = [&](const Eigen::VectorXd& x) { return 100 * (row.per_second / simulate(row.sc, pb.with(x)).step_s / row.measured - 1); };
    out << fmt::format("leave-one-out check {}: in-sample {:+.1f}%, leave-one-out {:+.1f}%, exact {:+.1f}%\n", row.source, error(phi), error(loo_phi[c]),
                       error(exact));
  }
  std::vector<Outcome> fitted(pb.first_row.size()), loo(pb.first_row.size());
  const models::StepParameters at = pb.with(phi);
  parallel(2 * pb.first_row.size(), [&](std::size_t i) {
    const std::size_t c = i / 2;
    const models::StepScenario& sc = fit.rows[pb.first_row[c]].sc;
    if (i % 2 == 0) fitted[c] = simulate(sc, at);
    else loo[c] = simulate(sc, pb.with(loo_phi[c]));
  });
  pb.simulations += static_cast<int>(2 * pb.first_row.size());
  progress.advance();
  for (std::size_t i = 0; i < fit.rows.size(); ++i) {
    StepFitRow& row = fit.rows[i];
    const Outcome& f = fitted[pb.config_of[i]];
    row.fitted = row.per_second / f.step_s;
    row.loo_exact = std::binary_search(fit.params.leave_one_out_exact.begin(), fit.params.leave_one_out_exact.end(), first_source(pb.config_of[i]));
    row.loo = row.per_second / loo[pb.config_of[i]].step_s;
    row.step_s = f.step_s;
    row.mfu = f.mfu;
    row.oom = f.oom;
    row.memory = f.memory;
  }
  fit.fitted_names = pb.names;
  fit.simulations = pb.simulations;
  out << fmt::format("fit steps: {} rows, {} configurations, {} parameters, {} simulations{}\n", fit.rows.size(), fit.configurations, pb.names.size(),
                     fit.simulations, refit ? " (refitted)" : "");
  return fit;
}

std::string loo_error_cell(const StepFitRow& row) { return fmt::format("{:+.1f}%{}", 100 * (row.loo / row.measured - 1), row.loo_exact ? " exact" : ""); }

std::vector<const StepFitRow*> StepFit::rows_of(std::string_view table) const {
  std::vector<const StepFitRow*> out;
  for (const StepFitRow& row : rows) {
    if (row.table == table) out.push_back(&row);
  }
  return out;
}

std::vector<std::string> StepFit::missing_of(std::string_view table) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (missing_tables[i] == table) out.push_back(missing[i]);
  }
  return out;
}

void write_step_parameters(const models::StepParameters& params, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw sim::InputError(path, "", "cannot write the step parameters here");
  f << models::step_parameters_json(params);
  if (!f) throw sim::InputError(path, "", "writing the step parameters failed");
}

std::vector<StepFitTable> step_fit_tables(const std::vector<StepFitRow>& rows, bool by_group) {
  std::vector<StepFitTable> out;
  for (const StepFitRow& row : rows) {
    const std::string group = by_group ? row.group : "";
    auto it = std::find_if(out.begin(), out.end(), [&](const StepFitTable& t) { return t.table == row.table && t.group == group; });
    if (it == out.end()) it = out.insert(out.end(), {row.table, group, 0, 0, 0, 0});
    const double loo = std::fabs(row.loo / row.measured - 1);
    ++it->rows;
    it->loo_mape += loo;
    it->fitted_mape += std::fabs(row.fitted / row.measured - 1);
    it->worst_loo = std::max(it->worst_loo, loo);
  }
  for (StepFitTable& t : out) t.loo_mape /= t.rows, t.fitted_mape /= t.rows;
  return out;
}

}  // namespace orrery::validation
