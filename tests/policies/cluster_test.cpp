#include "models/cluster/cluster.hpp"
#include "models/cluster/cluster_step.hpp"
#include "policies/cluster.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"
#include "traces/cluster_json.hpp"

#include "shared_data.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace orrery;
using models::Job;

namespace {
models::ClusterOptions restart(double overhead_s) {
  models::ClusterOptions o;
  o.restart_overhead_s = overhead_s;
  return o;
}
models::ClusterResult replay(const std::vector<Job>& jobs, const char* policy, sim::GivenParams params = {}, double overhead = 0) {
  const models::ClusterSpec c{{{"a100", 1, 8}}};
  const models::TraceDurationModel t(1.0);
  auto s = policies::cluster_schedulers().create(policy, params, {"test", "/policy"});
  models::ClusterSim sim(c, jobs, t, *s, restart(overhead));
  return sim.run();
}
Job job(const char* id, double at, int gpus, double seconds) {
  Job j;
  j.id = id;
  j.arrival_s = at;
  j.gpus = gpus;
  j.service_s = seconds;
  return j;
}
}  // namespace

TEST_CASE("FIFO, backfill and SJF on a small cluster") {
  // A holds all 8 GPUs for 100 s; B (8 GPUs) and C (2 GPUs) arrive while it runs.
  const std::vector<Job> jobs = {job("A", 0, 6, 100), job("B", 10, 8, 50), job("C", 20, 2, 10)};
  const auto fifo = replay(jobs, "fifo");
  CHECK(fifo.completed == 3);
  CHECK(fifo.jobs[1].start_s == 100);  // B waits for A
  CHECK(fifo.jobs[2].start_s == 150);  // C waits behind B (head-of-line blocking)
  const auto backfill = replay(jobs, "fifo", {{"backfill", true}});
  CHECK(backfill.jobs[2].start_s == 20);  // C fits beside A
  CHECK(backfill.jobs[2].end_s == 30);
  CHECK(backfill.avg_jct_s < fifo.avg_jct_s);
  const auto sjf = replay({job("A", 0, 8, 100), job("B", 10, 8, 50), job("C", 20, 8, 10)}, "sjf");
  CHECK(sjf.jobs[2].start_s == 100);  // the shorter C before B
  CHECK(sjf.jobs[1].start_s == 110);
  // Utilisation: GPU-seconds held over GPUs x makespan.
  CHECK(fifo.gpu_utilization == orrery::testing::Approx((6 * 100 + 8 * 50 + 2 * 10) / (8.0 * 160)));
}

TEST_CASE("Tiresias preempts jobs with much attained service, pays the restart overhead, and promotes the starving") {
  // A (8 GPUs, 1000 s) passes the first queue's limit of 800 GPU-s at 100 s; B arrives at 150 s
  // and, in the top queue, takes the GPUs at the next round (every 100 s): A is preempted and
  // resumes after B, paying 30 s of restart.
  const std::vector<Job> jobs = {job("A", 0, 8, 1000), job("B", 150, 8, 100)};
  const auto t = replay(jobs, "tiresias", {{"threshold", 800.0}, {"queues", std::int64_t{2}}, {"interval", 100.0}}, 30);
  REQUIRE(t.completed == 2);
  CHECK(t.jobs[1].start_s == 150);
  CHECK(t.jobs[1].end_s == 250);
  CHECK(t.jobs[0].restarts == 1);
  CHECK(t.jobs[0].end_s == orrery::testing::Approx(1000 + 100 + 30));
  const auto f = replay(jobs, "fifo");
  CHECK(t.jobs[1].end_s < f.jobs[1].end_s);
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("tiresias", {{"queues", std::int64_t{0}}}, {"s.json", "/policy"}),
                       doctest::Contains("found 0, expected 1 to 16 queues"), sim::InputError);
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("fifa", {}, {"s.json", "/policy"}), doctest::Contains("did you mean \"fifo\"?"),
                       sim::InputError);
}

TEST_CASE("Gavel: heterogeneity-aware time sharing from its LP") {
  // Two GPU types, one GPU each; job A prefers (and is 2.5x faster on) the A100, job B the V100;
  // a third job C arrives and the three share the two GPUs round by round.
  const models::ClusterSpec c{{{"a100", 1, 1}, {"v100", 1, 1}}};
  const models::TraceDurationModel t(1.0);
  Job a = job("A", 0, 1, 1000), b = job("B", 0, 1, 1000), cj = job("C", 100, 1, 500);
  a.gpu_type = "a100";
  b.gpu_type = "v100";
  cj.gpu_type = "a100";
  auto gavel = policies::cluster_schedulers().create("gavel", {{"interval", 100.0}}, {"test", ""});
  models::ClusterSim sim(c, {a, b, cj}, t, *gavel, restart(0));
  const auto r = sim.run();
  REQUIRE(r.completed == 3);
  CHECK(r.jobs[0].gpu_type == "a100");  // A finishes where it is fast
  CHECK(r.jobs[1].end_s > 0);
  CHECK(r.jobs[2].start_s >= 100);
  // Time sharing: C does not wait for A to finish (as FIFO would make it).
  auto fifo = policies::cluster_schedulers().create("fifo", {}, {"test", ""});
  models::ClusterSim fifo_sim(c, {a, b, cj}, t, *fifo, restart(0));
  CHECK(r.jobs[2].start_s < fifo_sim.run().jobs[2].start_s);
}

TEST_CASE("Arena: a job that does not fit its grid gets another, or shrinks a running one") {
  const models::ClusterSpec c{{{"a100", 1, 4}, {"v100", 1, 4}}};
  const models::TraceDurationModel t(1.0);
  Job a = job("A", 0, 4, 1000), b = job("B", 10, 4, 1000);
  a.gpu_type = b.gpu_type = "a100";
  auto arena = policies::cluster_schedulers().create("arena", {}, {"test", ""});
  models::ClusterSim sim(c, {a, b}, t, *arena, restart(0));
  const auto r = sim.run();
  REQUIRE(r.completed == 2);
  CHECK(r.jobs[1].start_s == 10);  // on another grid at once, where FIFO makes it wait
  auto fifo = policies::cluster_schedulers().create("fifo", {}, {"test", ""});
  models::ClusterSim f(c, {a, b}, t, *fifo, restart(0));
  const auto fr = f.run();
  CHECK(fr.jobs[1].start_s == 1000);
  CHECK(r.avg_jct_s < fr.avg_jct_s);
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("arena", {{"depth", std::int64_t{9}}}, {"s.json", "/policy"}),
                       doctest::Contains("found 9, expected 0 to 3 edits"), sim::InputError);
}

TEST_CASE("Arena resizes within a job's elastic range") {
  const models::ClusterSpec c{{{"a100", 1, 8}}};
  const models::TraceDurationModel t(1.0);
  Job a = job("A", 0, 4, 1000);
  a.gpu_type = "a100";
  auto arena = policies::cluster_schedulers().create("arena", {}, {"test", ""});
  // No range and not resizable (a trace without elasticity): it keeps its 4 GPUs.
  models::ClusterSim fixed_sim(c, {a}, t, *arena, restart(0));
  const auto fixed = fixed_sim.run();
  CHECK(fixed.jobs[0].end_s == orrery::testing::Approx(1000));
  CHECK(fixed.jobs[0].end_gpus == 4);
  // Resizable with no range (a scenario's "elastic": true): the upgrade trial doubles it onto
  // the idle GPUs (linear scaling: twice as fast).
  a.resizable = true;
  auto arena1 = policies::cluster_schedulers().create("arena", {}, {"test", ""});
  models::ClusterSim free_sim(c, {a}, t, *arena1, restart(0));
  const auto grown = free_sim.run();
  CHECK(grown.jobs[0].end_s == orrery::testing::Approx(500));
  CHECK(grown.jobs[0].end_gpus == 8);
  // Elastic 2..4: it stays at 4.
  a.min_gpus = 2;
  a.max_gpus = 4;
  auto arena2 = policies::cluster_schedulers().create("arena", {}, {"test", ""});
  models::ClusterSim capped(c, {a}, t, *arena2, restart(0));
  const auto r = capped.run();
  CHECK(r.jobs[0].end_s == orrery::testing::Approx(1000));
  CHECK(r.jobs[0].end_gpus == 4);
}

TEST_CASE("issue 17: a non-elastic job keeps its GPU count under every policy") {
  // Once: Arena shrank a fixed 512-GPU job that did not fit to 16 GPUs (1 day became 22.6).
  // A (512 GPUs, 1 day) cannot start while B holds one GPU of the 512; it waits for B.
  const models::ClusterSpec c{{{"a100", 64, 8}}};
  const models::TraceDurationModel t(0.9);
  const Job a = job("A", 0, 512, 86400), b = job("B", 0, 1, 3600);
  for (const char* policy : {"fifo", "sjf", "tiresias", "gavel", "arena"}) {
    CAPTURE(policy);
    auto s = policies::cluster_schedulers().create(policy, {}, {"test", ""});
    models::ClusterSim sim(c, {b, a}, t, *s, restart(30));
    const auto r = sim.run();
    REQUIRE(r.completed == 2);
    for (const auto& rec : r.jobs) CHECK(rec.end_gpus == rec.gpus);
    const auto& big = r.jobs[0].id == "A" ? r.jobs[0] : r.jobs[1];
    CHECK(big.end_s - big.start_s >= 86400);  // never slower than its own duration at its size
  }
}

namespace {
// `rate` units of work per second on any placement; every job has 1 unit of work.
class FastModel final : public models::ThroughputModel {
 public:
  explicit FastModel(double rate) : rate_(rate) {}
  double rate(const Job&, std::string_view, int, int) const override { return rate_; }
  double work(const Job&) const override { return 1; }

 private:
  double rate_;
};
}  // namespace

TEST_CASE("issue 17: a completion too close to a late clock still happens (no hang)") {
  // At 1e9 s a double advances in steps of 1.2e-7 s; a job needing 1e-8 s used to be stuck
  // with `now + remaining / rate` rounding back to `now` and its work never shrinking.
  const models::ClusterSpec c{{{"a100", 1, 8}}};
  const FastModel fast(1e8);
  for (const char* policy : {"fifo", "tiresias"}) {
    CAPTURE(policy);
    auto s = policies::cluster_schedulers().create(policy, {}, {"test", ""});
    models::ClusterSim sim(c, {job("A", 1e9, 1, 0), job("B", 1e9, 8, 0)}, fast, *s, restart(0));
    const auto r = sim.run();
    CHECK(r.completed == 2);
    CHECK(r.jobs[1].end_s >= 1e9);
  }
}

TEST_CASE("issue 17: round lengths and Tiresias parameters have a range") {
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("tiresias", {{"interval", 1e-300}}, {"s.json", "/policy"}),
                       "<policy>:tiresias/interval: found 1e-300, expected 1 to 1e7 seconds per round", sim::InputError);
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("gavel", {{"interval", 1e300}}, {"s.json", "/policy"}),
                       "<policy>:gavel/interval: found 1e+300, expected 1 to 1e7 seconds per round", sim::InputError);
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("arena", {{"interval", 0.5}}, {"s.json", "/policy"}),
                       "<policy>:arena/interval: found 0.5, expected 0 (no rounds) or 1 to 1e7 seconds per round", sim::InputError);
  CHECK_THROWS_WITH_AS(policies::cluster_schedulers().create("tiresias", {{"promote_after", -1.0}}, {"s.json", "/policy"}),
                       "<policy>:tiresias/promote_after: found -1, expected 0 to 1e6 times the run time", sim::InputError);
  CHECK_NOTHROW(policies::cluster_schedulers().create("arena", {{"interval", 0.0}}, {"s.json", "/policy"}));
}

TEST_CASE("trace readers: Philly and Arena fixtures, bad rows with line and column") {
  {
    std::ofstream f("philly-fixture.csv");
    f << "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 06:13:03,2951.0,2,5902.0,b\n";
  }
  const traces::JobTrace p = traces::read_philly_trace("philly-fixture.csv", false);
  REQUIRE(p.jobs.size() == 2);
  CHECK(p.jobs[1].arrival_s == 0);  // the earliest
  CHECK(p.jobs[0].arrival_s == 48 * 60 + 52);
  CHECK(p.jobs[1].gpus == 2);
  {
    std::ofstream f("philly-bad.csv");
    f << "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 06:13:03,-5,2,5902.0,b\n";
  }
  CHECK_THROWS_WITH_AS(traces::read_philly_trace("philly-bad.csv", false),
                       doctest::Contains("philly-bad.csv:line 3:column duration: found \"-5\", expected a number of at least 0"), sim::InputError);
  CHECK(traces::read_philly_trace("philly-bad.csv", true).skipped == 1);
  {
    std::ofstream f("arena-fixture.csv");
    f << "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type\nj1,100,500,bert__1.3B,900,128,4,A100\n";
  }
  const traces::JobTrace a = traces::read_arena_trace("arena-fixture.csv", false);
  CHECK(a.jobs[0].gpu_type == "a100");
  CHECK(a.jobs[0].iterations == 500);
  {
    std::ofstream f("tiresias-fixture.csv");
    f << "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,606,vgg19,164,30\n1,8,30,133,vgg11,147,23\n";
  }
  const traces::JobTrace ti = traces::read_tiresias_trace("tiresias-fixture.csv", false);
  REQUIRE(ti.jobs.size() == 2);
  CHECK(ti.jobs[1].gpus == 8);
  CHECK(ti.jobs[1].service_s == 147);
  {
    std::ofstream f("generic.csv");
    f << "name,submit,n,secs,type\nx,5,2,100,A100\ny,7,1,oops,V100\n";
  }
  const traces::ColumnMap map{"submit", "n", "secs", "name", "type", "", ""};
  CHECK_THROWS_WITH_AS(traces::read_generic_trace("generic.csv", map, false),
                       doctest::Contains("generic.csv:line 3:column secs: found \"oops\""), sim::InputError);
  const traces::JobTrace g = traces::read_generic_trace("generic.csv", map, true);
  REQUIRE(g.jobs.size() == 1);
  CHECK(g.skipped == 1);
  CHECK(g.jobs[0].gpu_type == "a100");
  CHECK(g.jobs[0].id == "x");
  if (const auto data = orrery::testing::shared_data("tiresias/60_job.csv")) CHECK(traces::read_tiresias_trace(*data, false).jobs.size() == 60);
}

namespace {
// FIFO that also asks for every running job to be consolidated (exercises the simulator's
// defragmenting migration without a particular policy's choices).
class ConsolidatingFifo final : public models::ClusterScheduler {
 public:
  std::string_view name() const override { return "consolidating fifo"; }
  std::map<int, models::Placement> schedule(const models::ClusterView& view) override {
    std::map<int, models::Placement> out;
    auto free = view.free_gpus;
    for (const models::JobState* s : view.active) {
      if (s->running) {
        out[s->index] = {s->placement.gpu_type, s->placement.gpus, true};
      } else if (free["a100"] >= s->job->gpus) {
        free["a100"] -= s->job->gpus;
        out[s->index] = {"a100", s->job->gpus, false};
      }
    }
    return out;
  }
};
}  // namespace

TEST_CASE("Node locality: best fit, spreading when fragmented, defragmenting migration") {
  const models::ClusterSpec c{{{"a100", 2, 4}}};
  CHECK(c.min_nodes("a100", 4) == 1);
  CHECK(c.min_nodes("a100", 5) == 2);
  const models::TraceDurationModel half(1.0, 0.5, c);  // a spread job runs at half speed
  {
    // Best fit: B joins A on node 0 (the fullest node that holds it), leaving node 1 whole for C.
    auto fifo = policies::cluster_schedulers().create("fifo", {}, {"test", "/policy"});
    models::ClusterOptions o = restart(0);
    o.record_allocations = true;
    models::ClusterSim sim(c, {job("A", 0, 2, 100), job("B", 0, 2, 100), job("C", 1, 4, 10)}, half, *fifo, o);
    const auto r = sim.run();
    CHECK(r.spread_starts == 0);
    CHECK(r.jobs[2].end_s == orrery::testing::Approx(11));
    REQUIRE(r.allocations.size() == 3);
    CHECK(r.allocations[0].node == 0);
    CHECK(r.allocations[1].node == 0);
    CHECK(r.allocations[2].node == 1);
    CHECK(r.node_names == std::vector<std::string>{"a100-0", "a100-1"});
  }
  {
    // A and B take 3 GPUs of each node; C's 2 GPUs must span both nodes and run at half speed.
    auto fifo = policies::cluster_schedulers().create("fifo", {}, {"test", "/policy"});
    models::ClusterSim sim(c, {job("A", 0, 3, 1000), job("B", 0, 3, 1000), job("C", 1, 2, 10)}, half, *fifo, restart(0));
    const auto r = sim.run();
    CHECK(r.spread_starts == 1);
    CHECK(r.jobs[2].nodes == 2);
    CHECK(r.jobs[2].end_s == orrery::testing::Approx(21));
  }
  // A holds 3 GPUs of node 0, B 3 of node 1 until 10 s; C (2 GPUs, arriving at 1 s) spans both.
  const auto consolidating = [&](double c_seconds) {
    ConsolidatingFifo s;
    models::ClusterSim sim(c, {job("A", 0, 3, 5000), job("B", 0, 3, 10), job("C", 1, 2, c_seconds)}, half, s, restart(10));
    return sim.run();
  };
  // When B leaves at 10 s, C moves onto node 1 alone: a 10 s restart, then full speed. Work
  // left at 10 s: 1000 - 9 x 0.5 = 995.5 s, so C ends at 10 + 10 + 995.5.
  const auto moved = consolidating(1000);
  CHECK(moved.migrations == 1);
  CHECK(moved.jobs[2].restarts == 1);
  CHECK(moved.jobs[2].nodes == 1);
  CHECK(moved.jobs[2].end_s == orrery::testing::Approx(1015.5));
  // No migration when it would not pay: C has almost no work left.
  const auto stayed = consolidating(5);
  CHECK(stayed.migrations == 0);
  CHECK(stayed.jobs[2].end_s == orrery::testing::Approx(11));
}

TEST_CASE("Shared fabric: rings share NICs and oversubscribed leaf uplinks max-min fairly") {
  models::SharedFabric f;
  f.nodes_per_leaf = 2;
  f.nic_bytes_per_s = 100;
  f.oversubscription = 2;  // leaf uplinks: 2 x 100 / 2 = 100 per direction
  using Grant = std::vector<std::pair<int, int>>;
  // X on nodes 0 and 2, Y on 1 and 3: both rings cross leaf 0's uplink and leaf 1's: 50 each.
  auto s = models::fabric_shares(f, 4, {Grant{{0, 1}, {2, 1}}, Grant{{1, 1}, {3, 1}}});
  CHECK(s[0] == orrery::testing::Approx(0.5));
  CHECK(s[1] == orrery::testing::Approx(0.5));
  // Without oversubscription the uplinks hold both: full rate.
  f.oversubscription = 1;
  s = models::fabric_shares(f, 4, {Grant{{0, 1}, {2, 1}}, Grant{{1, 1}, {3, 1}}});
  CHECK(s[0] == orrery::testing::Approx(1));
  CHECK(s[1] == orrery::testing::Approx(1));
  // Two rings through node 0's NIC (Z inside leaf 0): half each; a one-node job is untouched.
  s = models::fabric_shares(f, 4, {Grant{{0, 1}, {2, 1}}, Grant{{0, 1}, {1, 1}}, Grant{{3, 2}}});
  CHECK(s[0] == orrery::testing::Approx(0.5));
  CHECK(s[1] == orrery::testing::Approx(0.5));
  CHECK(s[2] == 1);

  // In the simulator: every node its own leaf, uplinks at half a NIC, half of the time in
  // communication: a two-node job runs at 1 / (0.5 + 0.5 / 0.5) = 2/3 of its rate alone.
  const models::ClusterSpec c{{{"a100", 2, 4}}};
  const models::TraceDurationModel t(1.0);
  auto fifo = policies::cluster_schedulers().create("fifo", {}, {"test", ""});
  models::ClusterOptions o = restart(0);
  o.fabric = {1, 100, 2, 0.5};
  models::ClusterSim sim(c, {job("A", 0, 8, 100), job("B", 200, 4, 100)}, t, *fifo, o);
  const auto r = sim.run();
  CHECK(r.jobs[0].end_s == orrery::testing::Approx(150));
  CHECK(r.jobs[1].end_s == orrery::testing::Approx(300));  // one node: no fabric
  CHECK(r.min_fabric_share == orrery::testing::Approx(0.5));
}

TEST_CASE("Step-emulator throughput: the best plan per shape sets job speed") {
  const auto schedule = policies::pipeline_schedules().create("1f1b", {}, {"test", ""});
  models::StepThroughputOptions o;
  o.default_model = "llama3-8b";
  o.global_batch = 64;
  o.seq_len = 2048;
  o.reference_gpu = "a100";
  o.cluster = models::ClusterSpec{{{"h100", 2, 8}, {"a100", 2, 8}, {"v100", 1, 8}}};
  const models::StepThroughput t(*schedule, o);
  Job j = job("j", 0, 8, 3600);
  const double h100 = t.rate(j, "h100", 8, 1), a100 = t.rate(j, "a100", 8, 1), v100 = t.rate(j, "v100", 8, 1);
  CHECK(h100 > a100);
  CHECK(a100 > v100);
  CHECK(v100 > 0);  // fp16 on V100: bf16 kernels at the fp16 rate
  const double a100_16 = t.rate(j, "a100", 16, 2);
  CHECK(a100_16 > a100);
  CHECK(a100_16 < 2.05 * a100);
  CHECK(t.rate(j, "a100", 8, 2) < a100);  // the same GPUs over two servers: slower
  CHECK(!t.best("llama3-8b", 64, "a100", 8, 1).plan.empty());
  Job big = j;
  big.model = "llama3-70b";
  CHECK(t.rate(big, "a100", 1, 1) == 0);  // no plan fits one GPU
  // Durations become steps at the requested shape: replayed there, the job takes its duration.
  j.gpu_type = "a100";
  CHECK(t.work(j) == orrery::testing::Approx(3600 * a100));
  auto fifo = policies::cluster_schedulers().create("fifo", {}, {"test", ""});
  models::ClusterSim sim(o.cluster, {j}, t, *fifo, restart(0));
  CHECK(sim.run().jobs[0].end_s == orrery::testing::Approx(3600));
}
