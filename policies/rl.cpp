#include "policies/rl.hpp"
#include "models/hardware/step_params.hpp"

#include "policies/pipeline.hpp"
#include "policies/sequence.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>

namespace orrery::policies {

namespace {

using models::Dispatch;
using models::GenerationInstance;
using models::GenerationRun;
using models::RolloutBatch;

std::size_t tail_prompts(std::size_t prompts, double alpha) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(alpha * static_cast<double>(prompts))));
}

// Prompts to `bins` instances, longest predicted work first, each to the least loaded (LPT).
// `initial`: work each bin already has (empty: none).
std::vector<std::vector<int>> lpt_bins(const std::vector<int>& items, const std::vector<double>& work, int bins,
                                       const std::vector<double>& initial = {}) {
  std::vector<int> order = items;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return work[static_cast<std::size_t>(a)] > work[static_cast<std::size_t>(b)]; });
  std::vector<std::vector<int>> out(static_cast<std::size_t>(bins));
  std::vector<double> load = initial.empty() ? std::vector<double>(static_cast<std::size_t>(bins), 0.0) : initial;
  for (const int i : order) {
    const auto b = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[b].push_back(i);
    load[b] += work[static_cast<std::size_t>(i)];
  }
  return out;
}

class RoundRobinDispatch final : public RlDispatcher {
 public:
  std::string_view name() const override { return "round-robin"; }
  Dispatch dispatch(const RolloutBatch& batch, const DispatchContext& ctx) override {
    Dispatch d;
    d.instances.resize(static_cast<std::size_t>(ctx.instances));
    for (std::size_t i = 0; i < batch.groups.size(); ++i) d.instances[i % d.instances.size()].push_back(static_cast<int>(i));
    return d;
  }
};

class RandomDispatch final : public RlDispatcher {
 public:
  std::string_view name() const override { return "random"; }
  Dispatch dispatch(const RolloutBatch& batch, const DispatchContext& ctx) override {
    std::vector<int> order(batch.groups.size());
    std::iota(order.begin(), order.end(), 0);
    // Fisher-Yates over mt19937_64's fixed sequence (std::shuffle's use of it is unspecified).
    constexpr std::uint64_t kMix = 0xD1B54A32D192ED03ULL;
    std::mt19937_64 rng(ctx.seed * kMix + static_cast<std::uint64_t>(ctx.iteration));
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    Dispatch d;
    d.instances.resize(static_cast<std::size_t>(ctx.instances));
    for (std::size_t i = 0; i < order.size(); ++i) d.instances[i % d.instances.size()].push_back(order[i]);
    return d;
  }
};

double quantile(std::vector<std::int64_t> v, double q) {
  const auto k = static_cast<std::size_t>(std::clamp(q * static_cast<double>(v.size() - 1), 0.0, static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]);
}

// StreamRL Algorithm 2 (arXiv 2504.15930 section 5; see ../shared/reference/policies.md 4b).
class SkewnessAwareDispatch final : public RlDispatcher {
 public:
  SkewnessAwareDispatch(double tail_quantile, double regular_quantile, bool simulate)
      : tail_q_(tail_quantile), regular_q_(regular_quantile), simulate_(simulate) {}
  std::string_view name() const override { return "skewness-aware"; }
  Dispatch dispatch(const RolloutBatch& batch, const DispatchContext& ctx) override {
    const std::size_t n = batch.groups.size();
    const int N = ctx.instances;
    std::vector<double> work(n);
    double group = 0, prompt = 0;
    for (std::size_t i = 0; i < n; ++i) {
      work[i] = std::exp(ctx.scores[i]) * static_cast<double>(batch.groups[i].outputs.size());
      group += static_cast<double>(batch.groups[i].outputs.size());
      prompt += static_cast<double>(batch.groups[i].prompt_tokens);
    }
    group /= static_cast<double>(std::max<std::size_t>(1, n));
    prompt /= static_cast<double>(std::max<std::size_t>(1, n));
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    Dispatch d;
    if (N < 2 || n < 2) {
      d.instances = lpt_bins(all, work, N);
      return order_inside(d, work);
    }
    // The ranker's top alpha are the long tail.
    std::vector<int> by_score = all;
    std::stable_sort(by_score.begin(), by_score.end(),
                     [&](int a, int b) { return ctx.scores[static_cast<std::size_t>(a)] > ctx.scores[static_cast<std::size_t>(b)]; });
    const std::size_t k = std::min(tail_prompts(n, ctx.alpha), n - 1);
    const std::vector<int> tail(by_score.begin(), by_score.begin() + static_cast<std::ptrdiff_t>(k));
    const std::vector<int> regular(by_score.begin() + static_cast<std::ptrdiff_t>(k), by_score.end());
    // Instances for the tail: argmin over N_l of the predicted latency of the slower side, each
    // side's Lat = PTL(BS) L ceil(M / BS) with M samples per instance and BS capped by the KV
    // cache; L_tail = P90, L_reg = P50 of the recent lengths. Without history (the first
    // iteration) the tail gets instances in proportion to its predicted share of the tokens.
    double tail_work = 0, all_work = 0;
    for (std::size_t i = 0; i < n; ++i) all_work += work[i];
    for (const int i : tail) tail_work += work[static_cast<std::size_t>(i)];
    int tail_instances = std::clamp(static_cast<int>(std::lround(tail_work / all_work * N)), 1, N - 1);
    if (simulate_) {
      // Orrery's variant: each candidate split's busiest instance on either side, run on the
      // instance model with every sample at its prompt's predicted length (LPT order).
      const auto busiest = [&](const std::vector<int>& prompts, int instances) {
        double worst = 0;
        for (const std::vector<int>& bin : lpt_bins(prompts, work, instances)) {
          std::vector<models::GenRequest> requests;
          std::vector<int> order = bin;
          std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return work[static_cast<std::size_t>(x)] > work[static_cast<std::size_t>(y)]; });
          const std::int64_t cap = ctx.instance.config().max_context;
          for (const int p : order) {
            const auto& g = batch.groups[static_cast<std::size_t>(p)];
            const auto predicted = std::clamp<std::int64_t>(std::llround(std::exp(ctx.scores[static_cast<std::size_t>(p)])), 1, cap - g.prompt_tokens);
            for (std::size_t j = 0; j < g.outputs.size(); ++j) requests.push_back({static_cast<int>(requests.size()), g.prompt_tokens, predicted, 0.0});
          }
          double end = 0;
          for (const models::GenFinish& f : ctx.instance.run(std::move(requests), 0.0, "<dispatch>")) end = std::max(end, f.time);
          worst = std::max(worst, end);
        }
        return worst;
      };
      double best = std::numeric_limits<double>::infinity();
      for (int nl = 1; nl < N; ++nl) {
        const double cost = std::max(busiest(tail, nl), busiest(regular, N - nl));
        if (cost < best) {
          best = cost;
          tail_instances = nl;
        }
      }
    } else if (!ctx.history.empty()) {
      const double l_tail = quantile(ctx.history, tail_q_), l_reg = quantile(ctx.history, regular_q_);
      const auto& cfg = ctx.instance.config();
      const auto latency = [&](double prompts, double length, int instances) {
        const double m = std::ceil(prompts * group / instances);
        const double bs = std::max(1.0, std::min({m, static_cast<double>(cfg.max_batch),
                                                  std::floor(static_cast<double>(ctx.instance.kv_capacity_tokens()) / (prompt + length))}));
        return ctx.instance.ptl(static_cast<int>(bs), prompt + length / 2) * length * std::ceil(m / bs);
      };
      double best = std::numeric_limits<double>::infinity();
      for (int nl = 1; nl < N; ++nl) {
        const double cost = std::max(latency(static_cast<double>(tail.size()), l_tail, nl), latency(static_cast<double>(regular.size()), l_reg, N - nl));
        if (cost < best) {
          best = cost;
          tail_instances = nl;
        }
      }
    }
    d.long_tail_instances = tail_instances;
    if (ctx.busy_for.empty()) {
      d.instances = lpt_bins(tail, work, tail_instances);
      for (std::vector<int>& b : lpt_bins(regular, work, N - tail_instances)) d.instances.push_back(std::move(b));
      return order_inside(d, work);
    }
    // A service: the tail goes to the instances free first, and each instance's head start of
    // busy time counts as work it already has (in predicted tokens: busy seconds times an
    // instance's decode rate at its share of the batch), so that LPT balances finishing times.
    // As a service the goal is balanced finishing times, not one batch's makespan: the tail gets
    // instances in proportion to its predicted share of the tokens.
    tail_instances = std::clamp(static_cast<int>(std::lround(tail_work / all_work * N)), 1, N - 1);
    d.long_tail_instances = tail_instances;
    const auto& cfg = ctx.instance.config();
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) mean += std::exp(ctx.scores[i]);
    mean /= static_cast<double>(n);
    const double b = std::max(1.0, std::min(static_cast<double>(cfg.max_batch), group * static_cast<double>(n) / N));
    const double rate = b / ctx.instance.ptl(static_cast<int>(b), prompt + mean / 2);  // tokens per second
    std::vector<int> slots(static_cast<std::size_t>(N));
    std::iota(slots.begin(), slots.end(), 0);
    std::stable_sort(slots.begin(), slots.end(), [&](int x, int y) { return ctx.busy_for[static_cast<std::size_t>(x)] < ctx.busy_for[static_cast<std::size_t>(y)]; });
    const auto place = [&](const std::vector<int>& prompts, std::size_t from, std::size_t count) {
      std::vector<double> initial;
      for (std::size_t j = from; j < from + count; ++j) initial.push_back(ctx.busy_for[static_cast<std::size_t>(slots[j])] * rate);
      std::vector<std::vector<int>> bins = lpt_bins(prompts, work, static_cast<int>(count), initial);
      for (std::size_t j = 0; j < count; ++j) d.instances[static_cast<std::size_t>(slots[from + j])] = std::move(bins[j]);
    };
    d.instances.assign(static_cast<std::size_t>(N), {});
    place(tail, 0, static_cast<std::size_t>(tail_instances));
    place(regular, static_cast<std::size_t>(tail_instances), static_cast<std::size_t>(N - tail_instances));
    d.placed = true;
    return order_inside(d, work);
  }

 private:
  double tail_q_, regular_q_;
  bool simulate_;
  // LPT inside an instance: admit by descending predicted length.
  static Dispatch order_inside(Dispatch d, const std::vector<double>& work) {
    for (std::vector<int>& b : d.instances) {
      std::stable_sort(b.begin(), b.end(), [&](int x, int y) { return work[static_cast<std::size_t>(x)] > work[static_cast<std::size_t>(y)]; });
    }
    return d;
  }
};

// A trainer with its own sequence policy and schedule.
struct TrainerBox {
  std::unique_ptr<models::SequencePolicy> sequence;
  std::unique_ptr<models::PipelineSchedule> schedule;
  std::unique_ptr<models::RlTrainer> trainer;
};

TrainerBox make_trainer(const RlSetup& s, const RlCosts& costs, int gpus) {
  TrainerBox b;
  b.sequence = sequence_policies().create(s.sequence_policy, {}, {s.source, "/training/sequence_policy"});
  b.schedule = pipeline_schedules().create(s.schedule, {}, {s.source, "/training/schedule"});
  b.trainer = std::make_unique<models::RlTrainer>(s.model, s.training_pool, gpus, s.train, costs.training, *b.schedule, *b.sequence, s.source, "/training");
  return b;
}

// What every policy shares: generation with the dispatcher and ranker, training passes over a
// stream, the accounting of busy, skewness-idle and pipeline-idle GPU time, the timeline.
class Engine {
 public:
  Engine(const RlSetup& s, int iterations, std::string policy, const std::string& dispatcher)
      : s_(s), iterations_(iterations), ranker_(s.alpha, s.recall, s.seed),
        dispatcher_(dispatcher.empty() ? rl_dispatchers().create(s.dispatcher, s.dispatcher_params, {s.source, "/generation/dispatcher"})
                                       : rl_dispatchers().create(dispatcher, {}, {"<policy>", "/dispatcher"})) {
    if (iterations < 1) throw sim::InputError("<command line>", "--iterations", fmt::format("found {}, expected at least 1", iterations));
    if (static_cast<int>(s.batches.size()) < iterations) {
      throw sim::InputError(s.source, "/rollouts",
                            fmt::format("found {} iterations of rollouts, {} asked for", s.batches.size(), iterations));
    }
    run_.policy = std::move(policy);
    run_.dispatcher = std::string(dispatcher_->name());
  }

  models::GenerationConfig generation_config(double reserved) const {
    models::GenerationConfig c = s_.generation;
    c.reserved_bytes = reserved;
    return c;
  }

  // Generation of batch k on `instances` copies of `inst` from `start`.
  // Generation of batch k on `instances` copies of `inst`: all from `start` (the pool waits for
  // its whole previous batch), or, as a service (`free`: when each instance finished its previous
  // work), each instance from max(start, its free time); the dispatch's heaviest predicted bins
  // then go to the instances free first.
  GenerationRun generate(const GenerationInstance& inst, int instances, int k, double start, bool account,
                         const std::vector<double>* free = nullptr) {
    const RolloutBatch& batch = s_.batches[static_cast<std::size_t>(k)];
    const std::vector<double> scores = ranker_.scores(batch, k);
    DispatchContext ctx{inst, instances, scores, history_, s_.alpha, k, s_.seed};
    if (free != nullptr) {
      for (const double f : *free) ctx.busy_for.push_back(std::max(0.0, f - start));
    }
    Dispatch d = dispatcher_->dispatch(batch, ctx);
    std::vector<double> starts(d.instances.size(), start);
    if (free != nullptr && d.placed) {
      for (std::size_t i = 0; i < starts.size(); ++i) starts[i] = std::max(start, (*free)[i]);
    } else if (free != nullptr) {
      std::vector<double> work(d.instances.size(), 0.0);
      for (std::size_t b = 0; b < d.instances.size(); ++b) {
        for (const int p : d.instances[b]) {
          const auto& grp = batch.groups[static_cast<std::size_t>(p)];
          work[b] += std::exp(scores[static_cast<std::size_t>(p)]) * static_cast<double>(grp.outputs.size());
        }
      }
      std::vector<std::size_t> bins(d.instances.size()), slots(d.instances.size());
      std::iota(bins.begin(), bins.end(), 0);
      std::iota(slots.begin(), slots.end(), 0);
      std::stable_sort(bins.begin(), bins.end(), [&](std::size_t a, std::size_t b) { return work[a] > work[b]; });
      std::stable_sort(slots.begin(), slots.end(), [&](std::size_t a, std::size_t b) { return (*free)[a] < (*free)[b]; });
      std::vector<std::vector<int>> placed(d.instances.size());
      for (std::size_t j = 0; j < bins.size(); ++j) {
        placed[slots[j]] = std::move(d.instances[bins[j]]);
        starts[slots[j]] = std::max(start, (*free)[slots[j]]);
      }
      d.instances = std::move(placed);
    }
    GenerationRun g = models::run_generation(inst, batch, d, starts, s_.source);
    if (!account) return g;
    history_.clear();
    for (const auto& grp : batch.groups) history_.insert(history_.end(), grp.outputs.begin(), grp.outputs.end());
    const double tp = s_.generation.tp;
    // Skewness idle: an instance out of work while others finish the batch's long tail. As a
    // service, an instance is idle only until it starts its next batch, so the previous batch's
    // idle is settled here, against this batch's starts.
    settle_skew(free != nullptr ? &starts : nullptr);
    for (std::size_t i = 0; i < g.instance_end.size(); ++i) {
      gen_busy_ += (g.instance_end[i] - starts[i]) * tp;
      if (k == iterations_ - 1) span(fmt::format("generation {}", i), fmt::format("iteration {}", k), starts[i], g.instance_end[i]);
    }
    last_ends_ = g.instance_end;
    last_end_ = g.end;
    run_.preemptions += g.preemptions;
    for (const auto& grp : batch.groups) run_.samples += static_cast<double>(grp.outputs.size());
    run_.tokens += g.tokens;
    run_.generation_s += g.end - *std::min_element(starts.begin(), starts.end());
    return g;
  }

  // The previous batch's skewness idle: from each instance's end to the batch's end, or to the
  // instance's next start when that comes first.
  void settle_skew(const std::vector<double>* next_starts) {
    const double tp = s_.generation.tp;
    for (std::size_t i = 0; i < last_ends_.size(); ++i) {
      const double until = next_starts != nullptr ? std::min(last_end_, (*next_starts)[i]) : last_end_;
      skew_ += std::max(0.0, until - last_ends_[i]) * tp;
    }
    last_ends_.clear();
  }

  // Training of batch k from its generation: one pass once all samples are in (streaming =
  // false), or passes over the stream, each starting once the samples that arrived and are not
  // trained saturate the pool (or the rest of the batch is in). Returns the end.
  double train(TrainerBox& t, int k, const GenerationRun& g, double available, bool streaming) {
    last_train_s_ = 0;
    const RolloutBatch& batch = s_.batches[static_cast<std::size_t>(k)];
    struct Arrival {
      double at;
      std::int64_t tokens;
    };
    std::vector<Arrival> arrivals;
    for (std::size_t i = 0; i < batch.groups.size(); ++i) {
      for (std::size_t j = 0; j < batch.groups[i].outputs.size(); ++j) {
        arrivals.push_back({g.finish[i][j], batch.groups[i].prompt_tokens + batch.groups[i].outputs[j]});
      }
    }
    std::stable_sort(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
    const double threshold = streaming ? t.trainer->saturating_tokens() : std::numeric_limits<double>::infinity();
    std::size_t next = 0;
    double now = available;
    int pass = 0;
    while (next < arrivals.size()) {
      // The first arrival at which enough untrained tokens are in (or the last one).
      std::size_t last = next;
      double gathered = static_cast<double>(arrivals[next].tokens);
      while (last + 1 < arrivals.size() && gathered < threshold) gathered += static_cast<double>(arrivals[++last].tokens);
      const double start = std::max(now, arrivals[last].at);
      while (last + 1 < arrivals.size() && arrivals[last + 1].at <= start) ++last;
      std::vector<std::int64_t> chunk;
      for (std::size_t i = next; i <= last; ++i) chunk.push_back(arrivals[i].tokens);
      const bool final_pass = last + 1 == arrivals.size();
      const double d = t.trainer->train(chunk, final_pass, static_cast<std::uint64_t>(k) * 4096 + static_cast<std::uint64_t>(pass));
      train_busy_ += d * t.trainer->gpus();
      last_train_s_ += d;
      run_.training_s += d;
      if (k == iterations_ - 1) span("trainer", fmt::format("pass {} ({} samples)", pass, chunk.size()), start, start + d);
      now = start + d;
      next = last + 1;
      ++pass;
      ++run_.training_passes;
    }
    return now;
  }

  void span(std::string lane, std::string name, double start, double end) {
    run_.timeline.push_back({std::move(lane), std::move(name), start, end});
  }

  // Closes the run: throughput, bubbles (as shares of every GPU held over the makespan), cost.
  RlRun finish(const std::vector<double>& train_ends, int gen_gpus, int train_gpus, int instances, bool colocated) {
    settle_skew(nullptr);
    run_.generation_gpus = gen_gpus;
    run_.training_gpus = train_gpus;
    run_.instances = instances;
    run_.makespan = train_ends.back();
    double prev = 0;
    for (const double e : train_ends) {
      run_.iteration_s.push_back(e - prev);
      prev = e;
    }
    run_.samples_per_s = run_.samples / run_.makespan;
    run_.tokens_per_s = run_.tokens / run_.makespan;
    const int held = colocated ? gen_gpus : gen_gpus + train_gpus;
    run_.gpu_seconds = held * run_.makespan;
    run_.skewness_bubble = skew_ / run_.gpu_seconds;
    run_.pipeline_bubble = std::max(0.0, run_.gpu_seconds - gen_busy_ - skew_ - train_busy_) / run_.gpu_seconds;
    const double rate = colocated || s_.shared
                            ? held * s_.generation_pool.dollars_per_gpu_hour
                            : gen_gpus * s_.generation_pool.dollars_per_gpu_hour + train_gpus * s_.training_pool.dollars_per_gpu_hour;
    run_.dollars = rate * run_.makespan / 3600;
    run_.samples_per_dollar = run_.dollars > 0 ? run_.samples / run_.dollars : 0;
    run_.staleness = staleness_sum_ / iterations_;
    run_.generation_s /= iterations_;
    run_.training_s /= iterations_;
    return run_;
  }

  void add_staleness(double v) { staleness_sum_ += v; }
  double last_train_s() const { return last_train_s_; }  // the trainer's busy seconds on the last batch
  void count_resize() { ++run_.resizes; }
  void set_sync(double s) { run_.weight_sync_s = s; }
  const RlSetup& setup() const { return s_; }

 private:
  const RlSetup& s_;
  int iterations_;
  models::RolloutRanker ranker_;
  std::unique_ptr<RlDispatcher> dispatcher_;
  std::vector<std::int64_t> history_;
  RlRun run_;
  double gen_busy_ = 0, skew_ = 0, train_busy_ = 0, staleness_sum_ = 0, last_train_s_ = 0;
  std::vector<double> last_ends_;  // the previous batch's instance ends, until its skew is settled
  double last_end_ = 0;
};

enum class Mode { disaggregated, stream_sync, stream_async };

// Two pools: the generation/training split (searched on a shared pool) and their parts.
struct Split {
  int gen_gpus = 0;
  TrainerBox trainer;
};

// A stage's time on a profile of one batch: the batch's span when the stages take turns, and the
// instances' mean busy time for the asynchronous service, whose instances overlap one batch's
// tail with the next (its steady rate is set by work, not by the longest sample).
double generation_profile(const GenerationRun& g, Mode mode) {
  if (mode != Mode::stream_async) return g.end - *std::min_element(g.instance_start.begin(), g.instance_start.end());
  double busy = 0;
  for (std::size_t i = 0; i < g.instance_end.size(); ++i) busy += g.instance_end[i] - g.instance_start[i];
  return busy / static_cast<double>(g.instance_end.size());
}

std::vector<std::int64_t> first_batch_samples(const RlSetup& s) {
  std::vector<std::int64_t> all;
  for (const auto& grp : s.batches.front().groups) {
    for (const std::int64_t o : grp.outputs) all.push_back(grp.prompt_tokens + o);
  }
  return all;
}

// Two pools (StreamRL Algorithm 1, cross-datacenter): profile both stages on the first batch with
// whole pools; when they overlap (the streaming policies), size the faster side down to the
// fewest GPUs that still match the slower one (the rest are not held, nor paid for). A policy
// whose stages take turns uses both pools whole, as does a scenario with size_to_match off.
Split size_to_match(const RlSetup& s, const RlCosts& costs, Mode mode, Engine& engine) {
  const int tp = s.generation.tp;
  const int gen_pool = s.generation_pool.gpus, train_pool = s.training_pool.gpus;
  Split whole{gen_pool, make_trainer(s, costs, train_pool)};
  if (mode == Mode::disaggregated || !s.size_to_match) return whole;
  const models::GenerationInstance inst(engine.generation_config(0), costs.generation, s.source);
  const std::vector<std::int64_t> samples = first_batch_samples(s);
  const double p_gen = generation_profile(engine.generate(inst, gen_pool / tp, 0, 0.0, false), mode);
  const double p_train = whole.trainer.trainer->train(samples, true, 0);
  if (p_train < p_gen) {
    // Training is faster: the fewest whole servers (or model-parallel groups) that keep up.
    const int mp = s.train.tp * s.train.pp * s.train.cp;
    const int step = std::lcm(mp, std::min(train_pool, s.training_pool.gpus_per_node));
    for (int y = step; y < train_pool; y += step) {
      TrainerBox t;
      try {
        t = make_trainer(s, costs, y);
      } catch (const sim::InputError&) {
        continue;  // too few GPUs to hold the training states: try more
      }
      if (t.trainer->train(samples, true, 0) <= p_gen) return {gen_pool, std::move(t)};
    }
    return whole;
  }
  const int step = std::lcm(tp, std::min(gen_pool, s.generation_pool.gpus_per_node));
  for (int x = step; x < gen_pool; x += step) {
    if (generation_profile(engine.generate(inst, x / tp, 0, 0.0, false), mode) <= p_train) return {x, std::move(whole.trainer)};
  }
  return whole;
}

Split choose_split(const RlSetup& s, const RlCosts& costs, Mode mode, Engine& engine) {
  const int tp = s.generation.tp;
  if (s.shared && s.generation_gpus > 0) return {s.generation_gpus, make_trainer(s, costs, s.generation_pool.gpus - s.generation_gpus)};
  if (!s.shared) return size_to_match(s, costs, mode, engine);
  // StreamRL Algorithm 1 on a profile of the first batch: over splits x + y = n, minimise
  // max(P_gen(x), P_train(y)) when the stages overlap (streaming), P_gen + P_train when they
  // take turns.
  const int n = s.generation_pool.gpus;
  const int unit = std::lcm(tp, std::min(n, s.generation_pool.gpus_per_node));
  const models::GenerationInstance inst(engine.generation_config(0), costs.generation, s.source);
  Split best;
  double best_cost = std::numeric_limits<double>::infinity();
  std::string why;
  for (int x = unit; x < n; x += unit) {
    TrainerBox t;
    try {
      t = make_trainer(s, costs, n - x);
    } catch (const sim::InputError& e) {
      why = e.what();  // this split's training side does not fit: try the next
      continue;
    }
    const GenerationRun g = engine.generate(inst, x / tp, 0, 0.0, false);
    const double train = t.trainer->train(first_batch_samples(s), true, 0);
    const double gen = generation_profile(g, mode);
    const double c = mode == Mode::disaggregated ? gen + train : std::max(gen, train);
    if (c < best_cost) {
      best_cost = c;
      best = {x, std::move(t)};
    }
  }
  if (best.gen_gpus == 0) {
    throw sim::InputError(s.source, "/pool", fmt::format("no split of the pool's {} GPUs into generation (multiples of {}) and training fits: {}", n, unit, why));
  }
  return best;
}

class ColocatedPolicy final : public RlPolicy {
 public:
  explicit ColocatedPolicy(std::string dispatcher) : dispatcher_(std::move(dispatcher)) {}
  std::string_view name() const override { return "colocated"; }
  void check(const RlSetup& s) const override {
    if (!s.shared) {
      throw sim::InputError(s.source, "/generation_pool",
                            "colocated multiplexes one GPU pool, found separate generation and training pools; give one \"pool\"");
    }
  }
  RlRun run(const RlSetup& s, const RlCosts& costs, int iterations) override {
    check(s);
    Engine e(s, iterations, "colocated", dispatcher_);
    const int n = s.generation_pool.gpus;
    TrainerBox t = make_trainer(s, costs, n);
    // Generation runs beside the training states each GPU keeps (weights, gradients, optimizer).
    const models::GenerationInstance inst(e.generation_config(t.trainer->resident_bytes()), costs.generation, s.source);
    const int instances = n / s.generation.tp;
    const int shards = s.train.tp * s.train.pp * (s.train.zero >= 3 ? t.trainer->dp() : 1);
    const double reshard = models::reshard_seconds(s.model, s.generation_pool, shards, s.generation.tp);
    e.set_sync(reshard);
    std::vector<double> ends;
    double now = 0;
    for (int k = 0; k < iterations; ++k) {
      if (k == iterations - 1 && reshard > 0) e.span("weight sync", "reshard for generation", now, now + reshard);
      const GenerationRun g = e.generate(inst, instances, k, now + reshard, true);
      now = e.train(t, k, g, g.end, false);
      ends.push_back(now);
    }
    return e.finish(ends, n, n, instances, true);
  }

 private:
  std::string dispatcher_;
};

class DisaggregatedPolicy final : public RlPolicy {
 public:
  DisaggregatedPolicy(std::string name, Mode mode, std::string dispatcher, bool elastic)
      : name_(std::move(name)), mode_(mode), dispatcher_(std::move(dispatcher)), elastic_(elastic) {}
  std::string_view name() const override { return name_; }
  void check(const RlSetup& s) const override {
    if (elastic_ && !s.shared) {
      throw sim::InputError("<policy>", name_ + "/elastic", "found elastic with two pools, expected one pool whose GPUs can move between the stages");
    }
  }
  RlRun run(const RlSetup& s, const RlCosts& costs, int iterations) override {
    check(s);
    Engine e(s, iterations, name_, dispatcher_);
    Split split = choose_split(s, costs, mode_, e);
    const models::GenerationInstance inst(e.generation_config(0), costs.generation, s.source);
    const int tp = s.generation.tp;
    int instances = split.gen_gpus / tp;
    const auto sync_for = [&](int gen_gpus) {
      return models::weight_sync_seconds(s.model, s.training_pool, s.train.tp, s.train.pp, s.generation_pool, gen_gpus, tp,
                                         s.cross_dc ? &*s.cross_dc : nullptr);
    };
    double sync = sync_for(split.gen_gpus);
    e.set_sync(sync);
    // StreamRL's elastic stage balancing (Algorithm 1): after a batch, while generation is the
    // slower stage, move a unit of GPUs (whole servers of training's model-parallel groups) from
    // the trainer to the generators at the trainer's step boundary, if the profile of the batch
    // just done says the slower stage gets faster: max(T_gen, T_train) must fall. T_gen is the
    // batch's span when the stages take turns, and the instances' mean busy time for the
    // asynchronous service (whose instances overlap one batch's tail with the next).
    const int unit = std::lcm(std::lcm(tp, s.train.tp * s.train.pp * s.train.cp), std::min(s.generation_pool.gpus, s.generation_pool.gpus_per_node));
    const auto gen_time = [&](const GenerationRun& g) { return generation_profile(g, mode_); };
    const auto rebalance = [&](int k, const GenerationRun& g) {
      if (!elastic_) return false;
      const double t_gen = gen_time(g), t_train = e.last_train_s();
      if (t_gen <= t_train || split.trainer.trainer->gpus() - unit < unit) return false;
      TrainerBox smaller;
      try {
        smaller = make_trainer(s, costs, split.trainer.trainer->gpus() - unit);
      } catch (const sim::InputError&) {
        return false;  // the training states no longer fit: stay
      }
      const int add = unit / tp;
      const double gen_after = gen_time(e.generate(inst, instances + add, k, 0.0, false));
      std::vector<std::int64_t> samples;
      for (const auto& grp : s.batches[static_cast<std::size_t>(k)].groups) {
        for (const std::int64_t o : grp.outputs) samples.push_back(grp.prompt_tokens + o);
      }
      const double train_after = smaller.trainer->train(samples, true, static_cast<std::uint64_t>(k));
      if (std::max(gen_after, train_after) >= 0.99 * std::max(t_gen, t_train)) return false;
      split.trainer = std::move(smaller);
      split.gen_gpus += unit;
      instances += add;
      sync = sync_for(split.gen_gpus);
      e.count_resize();
      return true;
    };
    std::vector<double> ends;
    if (mode_ != Mode::stream_async) {
      double now = 0;
      for (int k = 0; k < iterations; ++k) {
        const GenerationRun g = e.generate(inst, instances, k, now, true);
        const double end = e.train(split.trainer, k, g, mode_ == Mode::disaggregated ? g.end : now, mode_ == Mode::stream_sync);
        if (k == iterations - 1) e.span("weight sync", "trainer -> generators", end, end + sync);
        now = end + sync;  // the iteration ends when the generators hold the new weights
        ends.push_back(now);
        rebalance(k, g);
      }
    } else {
      // One-step asynchrony: the generators are a service; an instance starts batch k as soon as
      // it is done with its part of batch k-1 and holds weights at most one version old (trained
      // on batch k-2, then synced), so its samples are at most one step stale.
      std::vector<double> free(static_cast<std::size_t>(instances), 0.0);
      double train_free = 0;
      for (int k = 0; k < iterations; ++k) {
        const double ready = k >= 2 ? ends[static_cast<std::size_t>(k - 2)] + sync : 0.0;
        const GenerationRun g = e.generate(inst, instances, k, ready, true, &free);
        free = g.instance_end;
        // Staleness per sample: 0 where batch k-1's weights had arrived when its instance started.
        if (k >= 1) {
          double stale = 0, n = 0;
          const double fresh = ends[static_cast<std::size_t>(k - 1)] + sync;
          for (std::size_t i = 0; i < g.instance_start.size(); ++i) {
            const double w = g.instance_samples[i];
            stale += (fresh <= g.instance_start[i] ? 0.0 : 1.0) * w;
            n += w;
          }
          e.add_staleness(n > 0 ? stale / n : 0.0);
        }
        const double end = e.train(split.trainer, k, g, train_free, true);
        if (k == iterations - 1) e.span("weight sync", "trainer -> generators (off the critical path)", end, end + sync);
        train_free = end;
        ends.push_back(end);
        // New instances join when the trainer lets their GPUs go, at the end of this step.
        if (rebalance(k, g)) free.resize(static_cast<std::size_t>(instances), end);
      }
    }
    return e.finish(ends, split.gen_gpus, split.trainer.trainer->gpus(), instances, false);
  }

 private:
  std::string name_;
  Mode mode_;
  std::string dispatcher_;
  bool elastic_;
};

}  // namespace

const sim::Registry<RlDispatcher>& rl_dispatchers() {
  static const sim::Registry<RlDispatcher> r = [] {
    sim::Registry<RlDispatcher> reg("RL dispatcher");
    reg.add({"round-robin", "prompts to instances in turn, in batch order", {}, [](const sim::Params&) { return std::make_unique<RoundRobinDispatch>(); }});
    reg.add({"random", "prompts shuffled (seeded per iteration), then dealt in turn", {}, [](const sim::Params&) { return std::make_unique<RandomDispatch>(); }});
    reg.add({"skewness-aware",
             "StreamRL Algorithm 2: the ranker's top alpha on the few instances that minimise the predicted latency, LPT inside each",
             {{"tail_quantile", sim::ParamType::number, 0.9, "the recent length quantile standing for a long-tail sample (L_tail; the paper's P90)"},
              {"regular_quantile", sim::ParamType::number, 0.5, "the quantile standing for a regular sample (L_reg; the paper's P50)"},
              {"latency", sim::ParamType::string, std::string("formula"),
               "how a split's latency is predicted: formula (the paper's PTL(BS) L ceil(M/BS)) or simulate (each side's busiest instance run "
               "on the instance model at the predicted lengths)"}},
             [](const sim::Params& p) {
               const double t = p.get_number("tail_quantile"), q = p.get_number("regular_quantile");
               if (!(t > 0 && t <= 1)) throw sim::InputError("<policy>", "skewness-aware/tail_quantile", fmt::format("found {}, expected (0, 1]", t));
               if (!(q > 0 && q <= 1)) throw sim::InputError("<policy>", "skewness-aware/regular_quantile", fmt::format("found {}, expected (0, 1]", q));
               const std::string& latency = p.get_string("latency");
               if (latency != "formula" && latency != "simulate") {
                 throw sim::InputError("<policy>", "skewness-aware/latency", fmt::format("found {}, expected formula or simulate", sim::quote(latency)));
               }
               return std::make_unique<SkewnessAwareDispatch>(t, q, latency == "simulate");
             }});
    return reg;
  }();
  return r;
}

const sim::Registry<RlPolicy>& rl_policies() {
  static const sim::Registry<RlPolicy> r = [] {
    sim::Registry<RlPolicy> reg("RL policy");
    const std::vector<sim::ParamSpec> params = {
        {"dispatcher", sim::ParamType::string, std::string(), "round-robin, random or skewness-aware (default: the scenario's)"}};
    std::vector<sim::ParamSpec> two_pool = params;
    two_pool.push_back({"elastic", sim::ParamType::boolean, false,
                        "one pool: move GPUs from training to generation between steps while generation is the slower stage (StreamRL Algorithm 1)"});
    reg.add({"colocated", "verl-style: one pool alternates generation and training (resharding between modes)", params,
             [](const sim::Params& p) { return std::make_unique<ColocatedPolicy>(p.get_string("dispatcher")); }});
    reg.add({"disaggregated-sync", "two pools; each stage waits for the whole of the other, then the weight sync", two_pool, [](const sim::Params& p) {
               return std::make_unique<DisaggregatedPolicy>("disaggregated-sync", Mode::disaggregated, p.get_string("dispatcher"), p.get_bool("elastic"));
             }});
    reg.add({"streamrl-sync", "StreamRL: samples stream to the trainer, which trains in dynamically sized passes", two_pool, [](const sim::Params& p) {
               return std::make_unique<DisaggregatedPolicy>("streamrl-sync", Mode::stream_sync, p.get_string("dispatcher"), p.get_bool("elastic"));
             }});
    reg.add({"streamrl-async", "StreamRL one-step asynchrony: generation of t beside training of t-1; sync off the critical path", two_pool,
             [](const sim::Params& p) {
               return std::make_unique<DisaggregatedPolicy>("streamrl-async", Mode::stream_async, p.get_string("dispatcher"), p.get_bool("elastic"));
             }});
    return reg;
  }();
  return r;
}

RlRun run_rl_policy(const RlSetup& setup, std::string_view policy, const sim::GivenParams& params, int iterations, sim::InputLocation at) {
  const std::unique_ptr<RlPolicy> p = rl_policies().create(policy, params, at);
  const models::RooflineCostModel generation(setup.generation_pool.gpu);
  const models::RooflineCostModel training(setup.training_pool.gpu, models::training_roofline_params(setup.training_pool.gpu));
  return p->run(setup, {generation, training}, iterations);
}

}  // namespace orrery::policies
