// Symmetry classes (models/network/symmetry.hpp): one unit simulated under the others' load
// against every flow simulated, on symmetric fabrics up to 4,096 GPUs, and the fallback where
// the fabric is not symmetric.
#include "models/network/collectives.hpp"
#include "models/network/nccl.hpp"
#include "models/network/symmetry.hpp"
#include "approx.hpp"
#include "bytes.hpp"
#include "collective_spec.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

using namespace orrery;
using namespace orrery::models;

namespace {

struct Case {
  const char* what;
  const char* topology;
  CollectiveOp op;
  CollectiveAlgo algo;
  double bytes;
  int ranks = 0, groups = 1, stride = 1;
  bool symmetric = true;  // whether classes must be found (false: the fabric or the plan is not symmetric)
};

// `groups` groups of `ranks` GPUs `stride` apart, each running the collective.
CollectiveSpec grouped(CollectiveOp op, CollectiveAlgo algo, double bytes, int ranks, int groups, int stride) {
  CollectiveSpec s = orrery::testing::collective_spec(op, algo, bytes);
  s.ranks = ranks;
  s.groups = groups;
  s.stride = stride;
  return s;
}

// Runs the case with and without classes; returns the class run (whose units say whether it
// found any) after checking both end within 0.1%.
CollectiveResult compare(const Case& c) {
  const Topology t = build_topology(c.topology);
  CollectiveSpec s = grouped(c.op, c.algo, c.bytes, c.ranks, c.groups, c.stride);
  const CollectiveResult classes = run_collective(t, s);
  s.symmetry = false;
  const CollectiveResult full = run_collective(t, s);
  INFO(std::string(c.what), " on ", c.topology, ": ", classes.units, " units, ", classes.flows, " flows against ", full.flows, "; ",
       sim::to_string(classes.time), " against ", sim::to_string(full.time));
  CHECK(full.units == 0);
  CHECK((classes.units > 0) == c.symmetric);
  CHECK(classes.time.to_seconds() == orrery::testing::Approx(full.time.to_seconds()).epsilon(1e-3));
  return classes;
}

}  // namespace

TEST_CASE("symmetry classes: one unit equals the full simulation within 0.1% on symmetric fabrics") {
  using orrery::testing::kGiB;
  const std::vector<Case> cases = {
      {"ring all-reduce, 512 GPUs behind one switch", "dgx-h100:nodes=1,gpus_per_node=512", CollectiveOp::all_reduce, CollectiveAlgo::ring, kGiB},
      {"ring all-reduce, 8 x 64 GPUs on rails", "dgx-h100:nodes=64", CollectiveOp::all_reduce, CollectiveAlgo::ring, kGiB},
      {"ring all-gather, 32 servers, 2:1 sprayed fat-tree", "dgx-h100:nodes=32,fabric=fat-tree,routing=spray,oversubscription=2",
       CollectiveOp::all_gather, CollectiveAlgo::ring, 256e6},
      {"all-to-all, 16 servers, 2:1 sprayed fat-tree", "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2,routing=spray",
       CollectiveOp::all_to_all, CollectiveAlgo::direct, 256e6},
      {"data-parallel rings of TP 8, 2:1 spine", "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=8,oversubscription=2,routing=spray",
       CollectiveOp::all_reduce, CollectiveAlgo::ring, 256e6, 16, 8, 8},
      {"data-parallel rings of TP 8, 4:1 spine, 4,096 GPUs", "dgx-h100:nodes=512,fabric=fat-tree,leaf_ports=32,oversubscription=4,routing=spray",
       CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 512e6, 512, 8, 8},
      {"data-parallel rings of TP 8 on rails, 4,096 GPUs", "dgx-h100:nodes=512", CollectiveOp::all_gather, CollectiveAlgo::ring, 512e6, 512, 8, 8},
      {"hierarchical all-reduce, 64 servers, sprayed", "dgx-h100:nodes=64,routing=spray", CollectiveOp::all_reduce, CollectiveAlgo::hierarchical, 256e6},
      {"expert all-to-alls of 16, interleaved groups, 2:1", "dgx-h100:nodes=16,fabric=fat-tree,oversubscription=2,routing=spray",
       CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 8, 2},
      {"NVLS all-reduce in NVL72 domains", "nvl72:domains=4,gpus_per_domain=64", CollectiveOp::all_reduce, CollectiveAlgo::nvls, 256e6, 64, 4, 1},
      {"NVLS-tree all-reduce across NVL72 domains, sprayed", "nvl72:domains=4,gpus_per_domain=64,routing=spray", CollectiveOp::all_reduce,
       CollectiveAlgo::nvls_tree, 256e6, 256},
      // Not symmetric: the full simulation runs.
      {"tree all-reduce (ranks play different roles)", "dgx-h100:nodes=16", CollectiveOp::all_reduce, CollectiveAlgo::tree, 64e6, 0, 1, 1, false},
      {"hierarchical all-reduce, hashed ECMP over 2:1 spines", "dgx-h100:nodes=64,oversubscription=2", CollectiveOp::all_reduce,
       CollectiveAlgo::hierarchical, 64e6, 0, 1, 1, false},
      {"ring, uneven oversubscription (the last leaf half full)", "dgx-h100:nodes=12,fabric=fat-tree,leaf_ports=64,oversubscription=2,routing=spray",
       CollectiveOp::all_reduce, CollectiveAlgo::ring, 64e6, 0, 1, 1, false},
  };
  for (const Case& c : cases) {
    const CollectiveResult r = compare(c);
    MESSAGE(std::string(c.what), ": ", r.units, " units, ", r.flows, " flows");
  }
}

// A ring behind one switch whose link to one GPU runs at half rate: no two GPUs see the same
// fabric, so no classes; the slow link slows the ring.
TEST_CASE("symmetry classes: a degraded link falls back to the full simulation") {
  const auto star = [](double slow_fraction) {
    Topology t;
    const NodeIndex sw = t.add_node("switch", NodeKind::leaf);
    for (int g = 0; g < 8; ++g) {
      const NodeIndex gpu = t.add_node(fmt::format("gpu{}", g), NodeKind::gpu);
      const double rate = g == 5 ? 50e9 * slow_fraction : 50e9;
      t.connect(gpu, sw, sim::BytesPerSecond(rate), sim::Duration::nanoseconds(500), LinkKind::network);
    }
    return t;
  };
  CollectiveSpec s;
  s.size = sim::Bytes(256e6);
  const CollectiveResult even = run_collective(star(1.0), s), degraded = run_collective(star(0.5), s);
  CHECK(even.units == 8);
  CHECK(degraded.units == 0);
  s.symmetry = false;
  CHECK(run_collective(star(1.0), s).time.to_seconds() == orrery::testing::Approx(even.time.to_seconds()).epsilon(1e-3));
  CHECK(degraded.time.to_seconds() > 1.9 * even.time.to_seconds());
}

// Kinds of a parallel plan at once (run_concurrent): data-parallel rings, expert all-to-alls and
// pipeline traffic of every group on one fabric, with classes against every flow. A pipeline
// boundary is an all-to-all of its two ranks: activations forward and gradients back at once,
// as in 1F1B's steady state.
namespace {
// Kinds of a plan on one fabric, run as they are and again with `change` applied to each.
struct Mix {
  const char* what;
  const char* topology;
  std::vector<CollectiveSpec> specs;
  bool symmetric = true;
};
std::pair<CollectiveResult, CollectiveResult> run_twice(const Mix& m, void (*change)(CollectiveSpec&)) {
  const Topology t = build_topology(m.topology);
  std::vector<CollectiveSpec> specs = m.specs;
  const CollectiveResult as_given = run_concurrent(t, specs);
  for (CollectiveSpec& s : specs) change(s);
  return {as_given, run_concurrent(t, specs)};
}
}  // namespace

TEST_CASE("symmetry classes: mixed plans contend alike with and without classes") {
  const auto make = grouped;
  const std::vector<Mix> mixes = {
      {"DP rings + EP all-to-alls, 128 GPUs, 2:1 sprayed", "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2,routing=spray",
       {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 16, 8, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 8, 1)}},
      {"DP rings + EP all-to-alls + PP exchanges, 512 GPUs, 4:1 sprayed",
       "dgx-h100:nodes=64,fabric=fat-tree,leaf_ports=32,oversubscription=4,routing=spray",
       {make(CollectiveOp::all_reduce, CollectiveAlgo::ring, 128e6, 32, 16, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 32e6, 8, 64, 1),
        make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 32e6, 2, 256, 256)}},
      {"DP rings + PP exchanges on sprayed rails, 2,048 GPUs", "dgx-h100:nodes=256,routing=spray",
       {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 128, 16, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 2, 1024, 1024)}},
      // NVLink domains of two leaves each: a GPU's NVLink peers reach past its leaf, so the
      // pattern repeats only every two leaves (units of two leaves' servers).
      {"EP all-to-alls across two NVLink domains + PP exchanges, 2:1 sprayed",
       "nvl72:domains=4,gpus_per_domain=32,fabric=fat-tree,leaf_ports=16,routing=spray,oversubscription=2",
       {make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 32e6, 64, 2, 1), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 16e6, 2, 64, 64)}},
      {"DP rings + EP all-to-alls, hashed ECMP 2:1", "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2",
       {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 16, 8, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 8, 1)},
       false},
  };
  for (const Mix& m : mixes) {
    const Topology t = build_topology(m.topology);
    const std::vector<CollectiveSpec>& specs = m.specs;
    const auto [classes, full] = run_twice(m, [](CollectiveSpec& s) { s.symmetry = false; });
    INFO(std::string(m.what), ": ", classes.units, " units, ", classes.flows, " flows against ", full.flows);
    CHECK((classes.units > 0) == m.symmetric);
    REQUIRE(classes.ends.size() == specs.size());
    for (std::size_t k = 0; k < specs.size(); ++k) {
      CHECK(classes.ends[k].to_seconds() == orrery::testing::Approx(full.ends[k].to_seconds()).epsilon(1e-3));
      // Together each ends no sooner than alone.
      CollectiveSpec alone = specs[k];
      alone.symmetry = false;
      CHECK(full.ends[k] >= run_collective(t, alone).time);
    }
    MESSAGE(std::string(m.what), ": ", classes.units, " units, ", classes.flows, " flows against ", full.flows);
  }
}

namespace {
// Mixes with a long ring beside other kinds, on contended spines (the last on hashed ECMP, whose
// two-step mix has no symmetric units).
std::vector<Mix> long_ring_mixes() {
  const auto make = grouped;
  return {
      {"DP all-reduce + EP all-to-alls + PP exchanges, 512 GPUs, 4:1 sprayed",
       "dgx-h100:nodes=64,fabric=fat-tree,leaf_ports=32,oversubscription=4,routing=spray",
       {make(CollectiveOp::all_reduce, CollectiveAlgo::ring, 128e6, 32, 16, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 32e6, 8, 64, 1),
        make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 32e6, 2, 256, 256)}},
      {"DP reduce-scatter + PP exchanges, 2,048 GPUs on sprayed rails", "dgx-h100:nodes=256,routing=spray",
       {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 128, 16, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 8e6, 2, 1024, 1024)}},
      {"DP all-gather + EP all-to-alls, 256 GPUs, 2:1 sprayed", "dgx-h100:nodes=32,fabric=fat-tree,leaf_ports=16,oversubscription=2,routing=spray",
       {make(CollectiveOp::all_gather, CollectiveAlgo::ring, 512e6, 32, 8, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 256e6, 16, 16, 1)}},
      {"DP all-reduce + EP all-to-alls, 256 GPUs, hashed ECMP 2:1", "dgx-h100:nodes=32,fabric=fat-tree,leaf_ports=16,oversubscription=2",
       {make(CollectiveOp::all_reduce, CollectiveAlgo::ring, 64e6, 32, 8, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 16e6, 16, 16, 1)}},
  };
}
}  // namespace

// A long ring beside other kinds is costed from runs of the mix with k and 2k of its steps (the
// others ending before the truncated ring could part from the whole one): each collective's
// end against the mix with the ring run whole, within 0.1%.
TEST_CASE("mixes with a long ring: extrapolated from two short runs, as the whole ring gives") {
  const std::vector<Mix> mixes = long_ring_mixes();
  for (const Mix& m : mixes) {
    const std::vector<CollectiveSpec>& specs = m.specs;
    const auto [fast, whole] = run_twice(m, [](CollectiveSpec& s) { s.extrapolate_rings = false; });
    INFO(std::string(m.what));
    CHECK(fast.extrapolated_steps > 0);
    CHECK(whole.extrapolated_steps == 0);
    CHECK(fast.flows < whole.flows);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      CHECK(fast.ends[k].to_seconds() == orrery::testing::Approx(whole.ends[k].to_seconds()).epsilon(1e-3));
    }
    MESSAGE(std::string(m.what), ": ", fast.flows, " flows against ", whole.flows, "; ends (ns) ", fast.ends[0].ns(), " vs ", whole.ends[0].ns(),
            ", ", fast.ends[1].ns(), " vs ", whole.ends[1].ns());
  }
}

// The same mixes with their truncated rings' reductions built from a two-step plan of the mix
// (repeat_ring_steps with the other collectives kept once) against the mixes planned at k and
// 2k steps: every end equal to the nanosecond, and the flows.
TEST_CASE("mixes with a long ring: reduced from two ring steps, as from the truncated mixes") {
  std::vector<Mix> mixes = long_ring_mixes();
  mixes.push_back({"DP rings across NVLink domains + EP all-to-alls, 2:1 sprayed",
                   "nvl72:domains=8,gpus_per_domain=32,fabric=fat-tree,leaf_ports=16,routing=spray,oversubscription=2",
                   {grouped(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 1e9, 64, 4, 1),
                    grouped(CollectiveOp::all_to_all, CollectiveAlgo::direct, 4e6, 64, 4, 1)}});
  int reduced = 0;
  for (const Mix& m : mixes) {
    const auto [two, truncated] = run_twice(m, [](CollectiveSpec& s) { s.repeat_ring_steps = false; });
    INFO(std::string(m.what), ": ", two.flows, " flows against ", truncated.flows);
    CHECK(two.extrapolated_steps > 0);
    CHECK(two.extrapolated_steps == truncated.extrapolated_steps);
    CHECK(two.flows == truncated.flows);
    CHECK(two.units == truncated.units);
    REQUIRE(two.ends.size() == truncated.ends.size());
    for (std::size_t k = 0; k < two.ends.size(); ++k) CHECK(two.ends[k] == truncated.ends[k]);
    reduced += two.units > 1;
  }
  CHECK(reduced >= 3);
}

// An extrapolated ring's reductions at k and 2k steps are built from its first two steps
// (repeat_ring_steps): on rings of several fabrics, each unit choice that reduces the longer plan
// (by GPU, by server, by group) gives, field by field, what repeat_ring_steps builds from the
// two-step plan's reduction by the same units, and none where the longer plan has none.
namespace {
// The plan's links on topology t (capacity, latency, kind) and every transfer's route.
struct TestLinks {
  std::vector<double> capacity;
  std::vector<std::int64_t> latency;
  std::vector<std::uint32_t> kind;
  std::vector<std::vector<std::uint32_t>> routes;
  TestLinks(const Topology& t, const CollectivePlan& plan) {
    for (const TopoLink& l : t.links()) {
      capacity.push_back(l.bandwidth.value());
      latency.push_back(l.latency.ns());
      kind.push_back(static_cast<std::uint32_t>(l.kind));
    }
    for (const Transfer& tr : plan.transfers) {
      const std::vector<LinkIndex> r = tr.src == tr.dst ? std::vector<LinkIndex>{} : t.route(tr.src, tr.dst, tr.flow_hash);
      routes.emplace_back(r.begin(), r.end());
    }
  }
  PlanLinks view() const {
    return {capacity, latency, [this](std::uint32_t i) { return std::span<const std::uint32_t>(routes[i]); }, kind};
  }
};
// Each transfer's unit: its sending GPU, the GPU's server, or its group; densely numbered from 0.
std::vector<std::uint32_t> units_of(const Topology& t, const CollectivePlan& plan, int how, int& count) {
  std::vector<std::uint32_t> key(plan.transfers.size());
  for (std::size_t i = 0; i < key.size(); ++i) {
    const NodeIndex gpu = plan.transfers[i].src;
    std::size_t g = 0;
    while (g + 1 < plan.group_begin.size() && plan.group_begin[g + 1] <= i) ++g;
    key[i] = how == 0 ? gpu : how == 1 ? static_cast<std::uint32_t>(t.node(gpu).server) : static_cast<std::uint32_t>(g);
  }
  std::map<std::uint32_t, std::uint32_t> dense;
  for (std::uint32_t& k : key) k = dense.emplace(k, static_cast<std::uint32_t>(dense.size())).first->second;
  count = static_cast<int>(dense.size());
  return key;
}
}  // namespace

TEST_CASE("repeat_ring_steps: a ring's reduction at k steps from its first two, field by field") {
  int reduced = 0, compared = 0;
  for (const orrery::testing::RingCase& c : orrery::testing::ring_cases()) {
    const Topology t = build_topology(c.topology);
    CollectiveSpec s = grouped(c.op, CollectiveAlgo::ring, 64e6, c.ranks, c.groups, c.stride);
    s.chunks = c.chunks;
    s.ring_steps = 2;
    const CollectivePlan two = plan_collective(t, s);
    const TestLinks two_links(t, two);
    for (const int k : {2, 3, 5}) {
      s.ring_steps = k;
      const CollectivePlan longer = plan_collective(t, s);
      const TestLinks longer_links(t, longer);
      for (int how = 0; how < 3; ++how) {
        CAPTURE(c.topology);
        CAPTURE(k);
        CAPTURE(how);
        int units = 0, units_two = 0;
        const std::vector<std::uint32_t> unit_of = units_of(t, longer, how, units);
        const std::vector<std::uint32_t> unit_of_two = units_of(t, two, how, units_two);
        const std::optional<SymmetricReduction> direct = reduce_by_symmetry(longer, unit_of, units, longer_links.view());
        const std::optional<SymmetricReduction> from_two = reduce_by_symmetry(two, unit_of_two, units_two, two_links.view());
        REQUIRE(direct.has_value() == from_two.has_value());
        if (!direct) continue;
        ++reduced;
        const std::optional<SymmetricReduction> repeated = repeat_ring_steps(*from_two, k);
        REQUIRE(repeated.has_value());
        const SymmetricReduction& a = *direct;
        const SymmetricReduction& b = *repeated;
        CHECK(a.units == b.units);
        CHECK(a.capacity == b.capacity);
        CHECK(a.link == b.link);
        CHECK(a.share == b.share);
        CHECK(a.route_begin == b.route_begin);
        CHECK(a.routes == b.routes);
        CHECK(a.latency_ns == b.latency_ns);
        CHECK(a.plan.deps == b.plan.deps);
        REQUIRE(a.plan.transfers.size() == b.plan.transfers.size());
        for (std::size_t i = 0; i < a.plan.transfers.size(); ++i) {
          const Transfer& x = a.plan.transfers[i];
          const Transfer& y = b.plan.transfers[i];
          const bool same = x.src == y.src && x.dst == y.dst && x.bytes == y.bytes && x.flow_hash == y.flow_hash && x.nvls == y.nvls &&
                            x.horizon == y.horizon && x.deps_begin == y.deps_begin && x.deps_count == y.deps_count &&
                            x.ring_step == y.ring_step && x.collective == y.collective;
          if (!same) FAIL("transfer ", i, " differs");
          ++compared;
        }
      }
    }
  }
  MESSAGE(reduced, " reductions compared, ", compared, " transfers");
  CHECK(reduced >= 20);
}

// Mixes too large to simulate together are costed from each collective's run alone and the
// loads the others put on its links (ends_by_link_loads): against run_concurrent on every mix
// above.
TEST_CASE("mixes by link loads: against the simulated mix") {
  std::vector<Mix> mixes = long_ring_mixes();
  const auto make = grouped;
  mixes.push_back({"DP rings + EP all-to-alls, 128 GPUs, 2:1 sprayed", "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2,routing=spray",
                   {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 16, 8, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 8, 1)}});
  mixes.push_back({"DP rings + EP all-to-alls, hashed ECMP 2:1", "dgx-h100:nodes=16,fabric=fat-tree,leaf_ports=16,oversubscription=2",
                   {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 16, 8, 8), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 8, 1)}});
  mixes.push_back({"DP rings across NVLink domains + EP all-to-alls, 2:1 sprayed",
                   "nvl72:domains=8,gpus_per_domain=32,fabric=fat-tree,leaf_ports=16,routing=spray,oversubscription=2",
                   {grouped(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 1e9, 64, 4, 1), grouped(CollectiveOp::all_to_all, CollectiveAlgo::direct, 4e6, 64, 4, 1)}});
  mixes.push_back({"EP all-to-alls across two NVLink domains + PP exchanges, 2:1 sprayed",
                   "nvl72:domains=4,gpus_per_domain=32,fabric=fat-tree,leaf_ports=16,routing=spray,oversubscription=2",
                   {make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 32e6, 64, 2, 1), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 16e6, 2, 64, 64)}});
  // As a frontier plan lays out its kinds (DeepSeek-V3, tp 1): data-parallel rings over racks of
  // one scalable unit, expert all-to-alls inside each rack, pipeline sends between units over
  // the hashed spines of nvl72's default rail fabric.
  mixes.push_back({"DP rings + EP all-to-alls inside racks + PP exchanges across units, hashed rails",
                   "nvl72:domains=16,gpus_per_domain=16,leaf_ports=4,oversubscription=2",
                   {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 256e6, 64, 4, 1), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 16, 1),
                    make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 2, 128, 64)}});
  mixes.push_back({"short DP ring beside long EP all-to-alls across racks, hashed rails",
                   "nvl72:domains=8,gpus_per_domain=16,leaf_ports=4,oversubscription=2",
                   {make(CollectiveOp::all_gather, CollectiveAlgo::ring, 16e6, 32, 4, 1), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 512e6, 32, 4, 1)}});
  {
    // As NCCL runs them: a software latency each, no link latencies, a ring of four chunks.
    CollectiveSpec ring = make(CollectiveOp::all_reduce, CollectiveAlgo::ring, 256e6, 32, 8, 8), a2a = make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 8, 32, 1);
    ring.chunks = 4, ring.latency = sim::Duration::microseconds(30), a2a.latency = sim::Duration::microseconds(20);
    ring.link_latency = a2a.link_latency = false;
    mixes.push_back({"DP all-reduce in chunks + EP all-to-alls, NCCL latencies, 256 GPUs, 4:1 hashed ECMP",
                     "dgx-h100:nodes=32,fabric=fat-tree,leaf_ports=16,oversubscription=4", {ring, a2a}});
  }
  mixes.push_back({"DP reduce-scatter + CP all-gather rings + PP exchanges, 512 GPUs, 2:1 hashed ECMP",
                   "dgx-h100:nodes=64,fabric=fat-tree,leaf_ports=32,oversubscription=2",
                   {make(CollectiveOp::reduce_scatter, CollectiveAlgo::ring, 512e6, 16, 32, 16), make(CollectiveOp::all_gather, CollectiveAlgo::ring, 64e6, 2, 256, 8),
                    make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 128e6, 2, 256, 256)}});
  mixes.push_back({"long EP all-to-alls + short PP exchanges across a 4:1 sprayed spine", "dgx-h100:nodes=32,fabric=fat-tree,leaf_ports=16,oversubscription=4,routing=spray",
                   {make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 512e6, 16, 16, 1), make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 8e6, 2, 128, 128)}});
  double worst = 0;
  int slowed = 0, compared = 0;
  for (const Mix& m : mixes) {
    const Topology t = build_topology(m.topology);
    const CollectiveResult together = run_concurrent(t, m.specs);
    std::vector<LinkLoad> loads;
    std::vector<const LinkLoad*> views;
    std::vector<sim::Duration> alone;
    std::vector<double> scale(m.specs.size(), 1.0);
    for (const CollectiveSpec& s : m.specs) {
      loads.push_back(link_load(t, s));
      // Direct sends: one group alone (its first, where it lies on the fabric).
      CollectiveSpec one = s;
      if (!loads.back().lockstep()) one.groups = 1;
      alone.push_back(run_collective(t, one).time);
    }
    for (const LinkLoad& l : loads) views.push_back(&l);
    const std::vector<sim::Duration> ends = ends_by_link_loads(t, views, scale, alone);
    REQUIRE(ends.size() == m.specs.size());
    for (std::size_t k = 0; k < ends.size(); ++k) {
      CHECK(ends_by_link_loads(t, views, scale, alone, {}, k)[k] == ends[k]);  // its own links alone decide its end
      INFO(std::string(m.what), " #", k, ": alone ", alone[k].ns(), " ns, together ", together.ends[k].ns(), " ns, by loads ", ends[k].ns(), " ns");
      CHECK(ends[k] >= alone[k]);
      const double error = ends[k].to_seconds() / together.ends[k].to_seconds() - 1;
      CHECK(std::abs(error) < 0.03);
      worst = std::max(worst, std::abs(error));
      slowed += together.ends[k].to_seconds() > 1.05 * alone[k].to_seconds();
      ++compared;
    }
  }
  CHECK(slowed >= 12);  // most of them meet real contention
  // A uniform all-to-all's loads are read without its plan: as its plan gives them (the same
  // all-to-all written as an all-to-allv of equal pairs).
  const Topology t = build_topology("dgx-h100:nodes=8,fabric=fat-tree,leaf_ports=16,oversubscription=2");
  CollectiveSpec a2a = make(CollectiveOp::all_to_all, CollectiveAlgo::direct, 64e6, 16, 4, 1), pairs = a2a;
  pairs.pair_bytes.assign(16 * 16, 64e6 / 16);
  const LinkLoad streamed = link_load(t, a2a), planned = link_load(t, pairs);
  CHECK(streamed.bytes == planned.bytes);
  CHECK(streamed.connections == planned.connections);
  CHECK(streamed.used == planned.used);
  CHECK(streamed.wire == planned.wire);
  MESSAGE(compared, " ends by link loads against the simulated mixes, ", slowed, " of them slowed by more than 5%: worst error ", 100 * worst, "%");
}
