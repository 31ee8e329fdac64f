#include "policies/moe.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <numeric>
#include <random>
#include <string>

namespace orrery::policies {

namespace {

class EpComm final : public StepPlanPolicy {
 public:
  EpComm(std::string name, std::string mode, int pack = 1) : name_(std::move(name)), mode_(std::move(mode)), pack_(pack) {}
  std::string_view name() const override { return name_; }
  void apply(models::ParallelPlan& plan) const override {
    plan.ep_comm = mode_;
    if (mode_ != "inline") plan.overlap_ep_comm = false;  // the flows stand for the all-to-alls
    // Lina's expert packing: `pack` experts' worth on each GPU of an all-to-all among ep / pack
    // GPUs, so that more of the routed tokens stay on their GPU (and in their server).
    if (pack_ > 1) {
      if (plan.ep % pack_ != 0) {
        throw sim::InputError("<policy>", "lina/pack", fmt::format("found {}, expected a divisor of the plan's ep={}", pack_, plan.ep));
      }
      plan.ep /= pack_;
    }
  }

 private:
  std::string name_, mode_;
  int pack_;
};

class TopK final : public MoeRouting {
 public:
  std::string_view name() const override { return "top-k"; }
  std::vector<RoutingStep> steps(const models::ModelSpec& m, const models::ParallelPlan&, int steps, std::string_view) const override {
    return std::vector<RoutingStep>(static_cast<std::size_t>(steps), RoutingStep{static_cast<double>(m.moe.top_k), 1.0});
  }
};

// The routing distribution (stated assumptions; a user sets them from the router's logs): a
// token's lead of the top-1 gate probability over the top-2's is logit-normal, its logit with
// median logit(gap_median) moved per sequence by sequence_spread x N(0, 1) (some texts are
// easier to route than others) and per token by token_spread x N(0, 1). A sequence's share of
// tokens that go to one expert is then Phi((mu_seq - logit(threshold)) / token_spread) in closed
// form; a rank's, the mean over its sequences.
class AdaptiveGating final : public MoeRouting {
 public:
  explicit AdaptiveGating(const sim::Params& p)
      : threshold_(p.get_number("threshold")),
        gap_median_(p.get_number("gap_median")),
        token_spread_(p.get_number("token_spread")),
        sequence_spread_(p.get_number("sequence_spread")),
        curriculum_(p.get_bool("curriculum")),
        seed_(static_cast<std::uint64_t>(p.get_int("seed"))) {
    const auto in_open_unit = [](double x) { return x > 0 && x < 1; };
    if (!in_open_unit(threshold_)) throw sim::InputError("<policy>", "adaptive-gating/threshold", fmt::format("found {}, expected a gap in (0, 1)", threshold_));
    if (!in_open_unit(gap_median_)) throw sim::InputError("<policy>", "adaptive-gating/gap_median", fmt::format("found {}, expected a gap in (0, 1)", gap_median_));
    if (!(token_spread_ > 0 && token_spread_ <= 10)) {
      throw sim::InputError("<policy>", "adaptive-gating/token_spread", fmt::format("found {}, expected a logit spread in (0, 10]", token_spread_));
    }
    if (!(sequence_spread_ >= 0 && sequence_spread_ <= 10)) {
      throw sim::InputError("<policy>", "adaptive-gating/sequence_spread", fmt::format("found {}, expected a logit spread in [0, 10]", sequence_spread_));
    }
  }
  std::string_view name() const override { return "adaptive-gating"; }

  std::vector<RoutingStep> steps(const models::ModelSpec& m, const models::ParallelPlan& p, int steps, std::string_view source) const override {
    if (!m.moe.enabled() || m.moe.top_k < 2) {
      throw sim::InputError(std::string(source), "/model",
                            fmt::format("adaptive gating sends a token to 1 to top-k experts; {} has {}, expected an MoE with top-k of at least 2", m.name,
                                        m.moe.enabled() ? fmt::format("top-k {}", m.moe.top_k) : std::string("no experts")));
    }
    const int ranks = p.dp * p.cp, per_rank = p.global_batch / std::max(1, p.dp);
    const auto logit = [](double x) { return std::log(x / (1 - x)); };
    const double mu = logit(gap_median_), cut = logit(threshold_);
    // Every sequence of the run: its share of single-expert tokens.
    std::mt19937_64 rng(seed_);
    const auto normal = [&rng] {
      const auto uniform = [&rng] { return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0); };
      const double u = uniform(), v = uniform();
      return std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * v);
    };
    const auto phi = [](double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); };
    std::vector<double> single(static_cast<std::size_t>(steps) * static_cast<std::size_t>(ranks) * static_cast<std::size_t>(per_rank));
    for (double& f : single) f = phi((mu + sequence_spread_ * normal() - cut) / token_spread_);
    // The curriculum orders the run by the experts its sequences need (fewest first).
    if (curriculum_) std::sort(single.begin(), single.end(), std::greater<>());
    const double k = m.moe.top_k;
    std::vector<RoutingStep> out;
    std::size_t next = 0;
    for (int s = 0; s < steps; ++s) {
      double sum = 0, most = 0;
      for (int r = 0; r < ranks; ++r) {
        double f = 0;
        for (int j = 0; j < per_rank; ++j) f += single[next++];
        const double experts = k - (k - 1) * f / per_rank;  // single-expert tokens use 1 of k
        sum += experts;
        most = std::max(most, experts);
      }
      const double mean = sum / ranks;
      out.push_back({mean, most / mean});
    }
    return out;
  }

 private:
  double threshold_, gap_median_, token_spread_, sequence_spread_;
  bool curriculum_;
  std::uint64_t seed_;
};

}  // namespace

double mean_routed_step_s(const models::StepScenario& sc, const models::CostModel& cost, const models::PipelineSchedule& schedule,
                          const std::vector<RoutingStep>& steps) {
  ORRERY_CHECK(!steps.empty(), "a routing of no steps");
  std::map<std::pair<long, long>, double> seen;
  double sum = 0;
  for (const RoutingStep& rs : steps) {
    const std::pair<long, long> key{std::lround(rs.experts_per_token * 100), std::lround(rs.rank_skew * 200)};
    auto it = seen.find(key);
    if (it == seen.end()) {
      models::StepScenario at = sc;
      at.plan.experts_per_token = static_cast<double>(key.first) / 100;
      at.plan.expert_imbalance = sc.plan.expert_imbalance * static_cast<double>(key.second) / 200;
      it = seen.emplace(key, models::run_step(at, cost, schedule, {}).step_time.to_seconds()).first;
    }
    sum += it->second;
  }
  return sum / static_cast<double>(steps.size());
}

const sim::Registry<MoeRouting>& moe_routings() {
  static const sim::Registry<MoeRouting> registry = [] {
    sim::Registry<MoeRouting> r("MoE routing");
    r.add({"top-k", "every token to the model's top-k experts", {}, [](const sim::Params&) { return std::make_unique<TopK>(); }});
    r.add({"adaptive-gating",
           "a token goes to its top expert only when the top-1 gate probability leads the top-2's by more than a threshold (arXiv 2405.02834)",
           {{"threshold", sim::ParamType::number, 0.1, "the lead in gate probability above which a token takes one expert"},
            {"gap_median", sim::ParamType::number, 0.1, "the median lead of the top-1 over the top-2 gate probability (assumed: half the tokens at the default threshold)"},
            {"token_spread", sim::ParamType::number, 1.0, "the lead's logit spread between tokens of a sequence (assumed)"},
            {"sequence_spread", sim::ParamType::number, 0.75, "the lead's logit spread between sequences (assumed)"},
            {"curriculum", sim::ParamType::boolean, false, "order the run's sequences by the experts they need, so a step's ranks carry alike sequences"},
            {"seed", sim::ParamType::integer, std::int64_t{1}, "the routing draws' seed"}},
           [](const sim::Params& p) { return std::make_unique<AdaptiveGating>(p); }});
    return r;
  }();
  return registry;
}

const sim::Registry<StepPlanPolicy>& ep_comm_policies() {
  static const sim::Registry<StepPlanPolicy> registry = [] {
    sim::Registry<StepPlanPolicy> r("MoE communication policy");
    r.add({"ep-inline", "expert all-to-alls inside each op, alone on the fabric (the default)", {},
           [](const sim::Params&) { return std::make_unique<EpComm>("ep-inline", "inline"); }});
    r.add({"ep-fair", "expert all-to-alls as flows on the GPU's links, sharing fairly with the data-parallel buckets", {},
           [](const sim::Params&) { return std::make_unique<EpComm>("ep-fair", "fair"); }});
    r.add({"lina", "Lina: the all-reduce partitioned so that every expert all-to-all goes first on the GPU's links (ATC'23)",
           {{"pack", sim::ParamType::integer, std::int64_t{1}, "expert packing: experts' worth per GPU, the all-to-all among ep / pack GPUs"}},
           [](const sim::Params& p) {
             const std::int64_t pack = p.get_int("pack");
             if (pack < 1 || pack > 64) throw sim::InputError("<policy>", "lina/pack", fmt::format("found {}, expected 1 to 64", pack));
             return std::make_unique<EpComm>("lina", "lina", static_cast<int>(pack));
           }});
    return r;
  }();
  return registry;
}

}  // namespace orrery::policies
