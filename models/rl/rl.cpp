#include "models/rl/rl.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <random>

namespace orrery::models {

namespace {

std::string pool_topology(const RlPool& pool, int gpus) {
  if (gpus <= pool.gpus_per_node) return fmt::format("{}:nodes=1,gpus_per_node={}", pool.fabric, gpus);
  return fmt::format("{}:nodes={},gpus_per_node={}", pool.fabric, gpus / pool.gpus_per_node, pool.gpus_per_node);
}

// Our own Box-Muller over mt19937_64's fixed sequence: the same draws on every platform.
double standard_normal(std::mt19937_64& rng) {
  const double u1 = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

double group_mean(const RolloutGroup& g) {
  if (g.outputs.empty()) return 1.0;
  return static_cast<double>(std::accumulate(g.outputs.begin(), g.outputs.end(), std::int64_t{0})) / static_cast<double>(g.outputs.size());
}

// Indices of the k largest values (ties by index).
std::vector<int> top_k(const std::vector<double>& v, std::size_t k) {
  std::vector<int> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(std::min(k, idx.size())), idx.end(), [&](int a, int b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    return v[ua] != v[ub] ? v[ua] > v[ub] : a < b;
  });
  idx.resize(std::min(k, idx.size()));
  return idx;
}

std::size_t tail_count(std::size_t prompts, double alpha) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(alpha * static_cast<double>(prompts))));
}

}  // namespace

double RolloutRanker::tail_recall(const RolloutBatch& batch, const std::vector<double>& scores, double alpha) {
  const std::size_t n = batch.groups.size();
  if (n == 0) return 1.0;
  std::vector<double> truth(n);
  for (std::size_t i = 0; i < n; ++i) truth[i] = group_mean(batch.groups[i]);
  const std::size_t k = tail_count(n, alpha);
  std::vector<int> a = top_k(truth, k), b = top_k(scores, k);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return static_cast<double>(both.size()) / static_cast<double>(k);
}

std::vector<double> RolloutRanker::scores(const RolloutBatch& batch, int iteration) const {
  const std::size_t n = batch.groups.size();
  std::vector<double> truth(n), z(n), s(n);
  constexpr std::uint64_t kMix = 0x9E3779B97F4A7C15ULL;
  std::mt19937_64 rng(seed_ * kMix + static_cast<std::uint64_t>(iteration) + 1);
  for (std::size_t i = 0; i < n; ++i) {
    truth[i] = std::log(group_mean(batch.groups[i]));
    z[i] = standard_normal(rng);
  }
  const auto with = [&](double sigma) {
    for (std::size_t i = 0; i < n; ++i) s[i] = truth[i] + sigma * z[i];
    return s;
  };
  if (recall_ >= 1.0 || n < 2) return with(0.0);
  // Recall falls (not strictly) as the noise grows: the largest sigma that still reaches the
  // target, by bisection.
  double lo = 0, hi = 20;
  for (int it = 0; it < 48; ++it) {
    const double mid = (lo + hi) / 2;
    if (tail_recall(batch, with(mid), alpha_) >= recall_) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return with(lo);
}

GenerationRun run_generation(const GenerationInstance& instance, const RolloutBatch& batch, const Dispatch& dispatch, double start,
                             std::string_view source) {
  return run_generation(instance, batch, dispatch, std::vector<double>(dispatch.instances.size(), start), source);
}

GenerationRun run_generation(const GenerationInstance& instance, const RolloutBatch& batch, const Dispatch& dispatch,
                             const std::vector<double>& starts, std::string_view source) {
  ORRERY_CHECK(starts.size() == dispatch.instances.size(), "{} start times for {} instances", starts.size(), dispatch.instances.size());
  GenerationRun out;
  const double first = starts.empty() ? 0.0 : *std::min_element(starts.begin(), starts.end());
  out.finish.resize(batch.groups.size());
  for (std::size_t g = 0; g < batch.groups.size(); ++g) out.finish[g].assign(batch.groups[g].outputs.size(), first);
  out.end = first;
  out.instance_start = starts;
  std::vector<std::pair<int, int>> of_id;  // request id -> (group, sample)
  for (std::size_t i = 0; i < dispatch.instances.size(); ++i) {
    const std::vector<int>& prompts = dispatch.instances[i];
    const double start = starts[i];
    std::vector<GenRequest> requests;
    of_id.clear();
    for (const int p : prompts) {
      const RolloutGroup& g = batch.groups[static_cast<std::size_t>(p)];
      for (std::size_t j = 0; j < g.outputs.size(); ++j) {
        requests.push_back({static_cast<int>(of_id.size()), g.prompt_tokens, g.outputs[j], start});
        of_id.emplace_back(p, static_cast<int>(j));
        out.tokens += static_cast<double>(g.outputs[j]);
      }
    }
    double end = start;
    for (const GenFinish& f : instance.run(std::move(requests), start, source)) {
      const auto [g, j] = of_id[static_cast<std::size_t>(f.id)];
      out.finish[static_cast<std::size_t>(g)][static_cast<std::size_t>(j)] = f.time;
      end = std::max(end, f.time);
      out.preemptions += f.preemptions;
    }
    out.instance_end.push_back(end);
    out.instance_samples.push_back(static_cast<int>(of_id.size()));
    out.end = std::max(out.end, end);
  }
  return out;
}

RlTrainer::RlTrainer(const ModelSpec& model, const RlPool& pool, int gpus, RlTrainPlan plan, const CostModel& cost, const PipelineSchedule& schedule,
                     SequencePolicy& policy, std::string_view source, std::string_view where)
    : model_(model), pool_(pool), gpus_(gpus), dp_(0), plan_(plan), cost_(cost), schedule_(schedule), policy_(policy) {
  const auto fail = [&](const std::string& what) { throw sim::InputError(std::string(source), std::string(where), what); };
  const int mp = plan_.tp * plan_.pp * plan_.cp;
  if (mp < 1 || gpus < mp || gpus % mp != 0) {
    fail(fmt::format("found {} training GPUs, expected a multiple of tp x pp x cp = {} x {} x {} = {}", gpus, plan_.tp, plan_.pp, plan_.cp, mp));
  }
  if (gpus > pool_.gpus_per_node && gpus % pool_.gpus_per_node != 0) {
    fail(fmt::format("found {} training GPUs, expected whole servers of {} GPUs (or fewer than one server)", gpus, pool_.gpus_per_node));
  }
  if (model_.heads % plan_.tp != 0) fail(fmt::format("found tp {}, which does not divide {}'s {} heads", plan_.tp, model_.name, model_.heads));
  if (plan_.micro_batch_tokens < 1) fail("found a micro-batch of no tokens, expected micro_batch_tokens >= 1");
  dp_ = gpus / mp;
  const StepBalancer& b = balancer(plan_.pp);
  const MemoryEstimate& m = b.memory();
  if (b.oom()) {
    fail(fmt::format("the training plan (tp {}, pp {}, cp {}, dp {}, micro-batches of {} tokens) needs {:.1f} GB per GPU, more than a {}'s {:.0f} GB",
                     plan_.tp, plan_.pp, plan_.cp, dp_, plan_.micro_batch_tokens, m.total() / 1e9, pool_.gpu.name, pool_.gpu.hbm_bytes / 1e9));
  }
  resident_ = m.params_bytes + m.grads_bytes + m.optimizer_bytes;
}

StepBalancer& RlTrainer::balancer(int micro_batches) {
  auto it = balancers_.find(micro_batches);
  if (it != balancers_.end()) return *it->second;
  StepScenario sc;
  sc.model = model_;
  sc.gpu = pool_.gpu;
  sc.topology = pool_topology(pool_, gpus_);
  ParallelPlan& p = sc.plan;
  p.tp = plan_.tp;
  p.pp = plan_.pp;
  p.cp = plan_.cp;
  p.dp = dp_;
  p.zero = plan_.zero;
  p.recompute = plan_.recompute;
  p.micro_batch = 1;
  p.seq_len = plan_.micro_batch_tokens;
  p.global_batch = dp_ * micro_batches;
  auto b = std::make_unique<StepBalancer>(sc, cost_, schedule_);
  return *balancers_.emplace(micro_batches, std::move(b)).first->second;
}

double RlTrainer::saturating_tokens() const {
  return static_cast<double>(dp_) * plan_.pp * static_cast<double>(plan_.micro_batch_tokens);
}

double RlTrainer::train(const std::vector<std::int64_t>& samples, bool final_pass, std::uint64_t step) {
  if (samples.empty()) return 0;
  const double tokens = static_cast<double>(std::accumulate(samples.begin(), samples.end(), std::int64_t{0}));
  // Micro-batches per rank: enough packed sequences for the tokens, a multiple of the stages,
  // rounded up on a grid (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, ...: at most 1/8 more) so that the
  // emulator's per-shape setup is shared by the many sizes a stream produces.
  const auto need = static_cast<int>(std::ceil(tokens / (static_cast<double>(dp_) * static_cast<double>(plan_.micro_batch_tokens))));
  int per_stage = std::max(1, (need + plan_.pp - 1) / plan_.pp);
  if (per_stage > 8) {
    const int quantum = 1 << (static_cast<int>(std::floor(std::log2(per_stage))) - 3);
    per_stage = (per_stage + quantum - 1) / quantum * quantum;
  }
  StepBalancer& b = balancer(per_stage * plan_.pp);
  const BalanceStep r = b.run(policy_.place(samples, b.shape()), step);
  return final_pass ? r.step_s : r.step_s - b.tail_s();
}

std::string server_fabric(const GpuSpec& gpu) {
  std::string lower;
  for (const char c : gpu.name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.rfind("a100", 0) == 0) return "dgx-a100";
  for (const char* k : {"h100", "h200", "h800", "h20", "b200"}) {
    if (lower == k) return std::string("dgx-") + k;
  }
  return "";
}

RlPool rl_pool(const GpuSpec& gpu, int gpus, double dollars_per_gpu_hour, std::string datacenter) {
  RlPool p;
  p.gpu = gpu;
  p.fabric = server_fabric(gpu);
  ORRERY_CHECK(!p.fabric.empty(), "no server fabric for {}", gpu.name);
  p.gpus = gpus;
  p.dollars_per_gpu_hour = dollars_per_gpu_hour;
  p.datacenter = std::move(datacenter);
  return p;
}

RlSetup grpo_setup(const ModelSpec& model, const RlPool& pool, const RolloutLengthModel& lengths, int iterations, int prompts, int group_size,
                   std::uint64_t seed) {
  RlSetup s;
  s.source = "<setup>";
  s.model = model;
  s.generation_pool = s.training_pool = pool;
  s.seed = seed;
  s.generation.model = model;
  s.generation.gpu = pool.gpu;
  s.generation.nvlink = pool.gpu.nvlink_bandwidth;
  s.generation.max_batch = 256;
  s.generation.max_context = lengths.prompt.max_length + lengths.output.max_length;
  s.train.zero = 3;
  s.train.recompute = Recompute::full;
  s.train.micro_batch_tokens = (s.generation.max_context + 127) / 128 * 128;
  s.batches = RolloutGenerator(lengths, seed).batches(iterations, prompts, group_size);
  return s;
}

double weight_sync_seconds(const ModelSpec& model, const RlPool& train, int train_tp, int train_pp, const RlPool& gen, int gen_gpus, int gen_tp,
                           const CrossDcLink* cross_dc) {
  const double bytes = 2.0 * static_cast<double>(model.params());
  const LinkRates tr = link_rates(pool_topology(train, std::min(train.gpus, train.gpus_per_node)));
  const LinkRates gr = link_rates(pool_topology(gen, std::min(gen_gpus, gen.gpus_per_node)));
  // DP rank 0's shards to the root instance, each of whose GPUs takes its own shard.
  double rate = std::min(train_tp * train_pp * tr.nic, gen_tp * gr.nic);
  double t = 0;
  if (cross_dc != nullptr) {
    rate = std::min(rate, cross_dc->bandwidth);
    t += cross_dc->latency;
  }
  t += bytes / rate;
  // The fan-out: one broadcast of a shard per tensor-parallel rank, across the instances.
  const int instances = gen_gpus / gen_tp;
  if (instances > 1) t += collective_seconds(pool_topology(gen, gen_gpus), CollectiveOp::broadcast, bytes / gen_tp, instances, gen_tp);
  return t;
}

double reshard_seconds(const ModelSpec& model, const RlPool& pool, int train_shards, int gen_tp) {
  if (train_shards <= gen_tp) return 0;  // every GPU already holds (more than) its generation shard
  const double bytes = 2.0 * static_cast<double>(model.params()) / gen_tp;
  const int n = train_shards / gen_tp;
  return collective_seconds(pool_topology(pool, pool.gpus), CollectiveOp::all_gather, bytes, n, 1);
}

}  // namespace orrery::models
