// Chakra execution traces: Orrery's step exported and replayed, a hand-built workload of another
// shape against its closed form, and bad input named by file and node.
#include "traces/chakra.hpp"
#include "traces/chakra_replay.hpp"

#include "models/hardware/hardware.hpp"
#include "models/hardware/step_params.hpp"
#include "models/training/llm.hpp"
#include "models/training/step.hpp"
#include "policies/pipeline.hpp"
#include "sim/error.hpp"

#include "approx.hpp"
#include "input_error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace orrery;
using namespace orrery::traces;

namespace {

models::StepResult run(const models::StepScenario& sc) {
  const auto schedule = policies::pipeline_schedules().create(sc.plan.schedule, {}, {"test", "/plan/schedule"});
  const auto cost = models::training_cost_model(sc.gpu, models::step_context(sc.plan));
  models::StepOptions o;
  o.reuse = false;
  o.keep_graph = true;
  return models::run_step(sc, *cost, *schedule, o);
}

models::StepScenario scenario_64() {
  models::StepScenario sc;
  sc.model = models::ModelCatalog::builtin().model("llama3-8b");
  sc.model.layers = 8;
  sc.gpu = models::HardwareCatalog::builtin().gpu("H100");
  sc.topology = "dgx-h100:nodes=8";
  sc.plan.tp = 2;
  sc.plan.pp = 4;
  sc.plan.vp = 2;
  sc.plan.dp = 8;
  sc.plan.schedule = "interleaved-1f1b";
  sc.plan.global_batch = 64;
  sc.plan.seq_len = 4096;
  sc.plan.overlap_tp_comm = true;
  return sc;
}

EtNode compute(std::uint64_t id, std::uint64_t micros, std::vector<std::uint64_t> deps = {}) {
  EtNode n;
  n.id = id;
  n.name = "comp " + std::to_string(id);
  n.type = EtNodeType::compute;
  n.duration_micros = micros;
  n.data_deps = std::move(deps);
  return n;
}

EtNode collective(std::uint64_t id, models::CollectiveOp op, std::int64_t bytes, std::string group, std::vector<std::uint64_t> deps) {
  EtNode n;
  n.id = id;
  n.name = "coll " + std::to_string(id);
  n.type = EtNodeType::collective;
  n.comm_type = chakra_comm_type(op);
  n.comm_size = bytes;
  n.pg_name = std::move(group);
  n.data_deps = std::move(deps);
  return n;
}

EtNode p2p(std::uint64_t id, EtNodeType type, int peer, std::int64_t bytes, std::vector<std::uint64_t> deps = {}) {
  EtNode n;
  n.id = id;
  n.name = (type == EtNodeType::send ? "send " : "recv ") + std::to_string(id);
  n.type = type;
  (type == EtNodeType::send ? n.comm_dst : n.comm_src) = peer;
  n.comm_tag = 7;
  n.comm_size = bytes;
  n.data_deps = std::move(deps);
  return n;
}

// Writes and reads back, so every test goes through the files.
ChakraWorkload round_trip(const ChakraWorkload& w, const std::string& prefix) {
  write_chakra_workload(prefix, w);
  return read_chakra_workload(prefix);
}

// An 8-rank workload of another shape than a training step: compute, an all-reduce of all
// ranks, compute; then rank 0 sends to rank 1, which computes once it has the data.
ChakraWorkload hand_built(std::int64_t ar_bytes, std::int64_t p2p_bytes) {
  ChakraWorkload w;
  w.ranks.resize(8);
  w.groups["1"] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int r = 0; r < 8; ++r) {
    auto& nodes = w.ranks[static_cast<std::size_t>(r)].nodes;
    nodes.push_back(compute(1, 1000));
    nodes.push_back(collective(2, models::CollectiveOp::all_reduce, ar_bytes, "1", {1}));
    nodes.push_back(compute(3, 500, {2}));
  }
  w.ranks[0].nodes.push_back(p2p(4, EtNodeType::send, 1, p2p_bytes, {3}));
  w.ranks[1].nodes.push_back(p2p(4, EtNodeType::recv, 0, p2p_bytes));
  w.ranks[1].nodes.push_back(compute(5, 200, {4, 3}));
  return w;
}

ChakraReplayOptions options(const std::string& topology) {
  ChakraReplayOptions o;
  o.topology = topology;
  o.gpu = models::HardwareCatalog::builtin().gpu("H100");
  o.roofline = models::training_roofline_params(o.gpu);
  return o;
}

}  // namespace

TEST_CASE("chakra: a 64-rank step exported, read back and replayed gives the step's time; groups and sizes exact") {
  std::filesystem::create_directories("chakra");
  const models::StepScenario sc = scenario_64();
  const models::StepResult step = run(sc);
  const ChakraWorkload exported = chakra_from_step(step, 64);
  const ChakraWorkload back = round_trip(exported, "chakra/step64");
  REQUIRE(back.ranks.size() == 64);
  // Data-parallel groups: one per (stage, tensor-parallel index), 8 ranks 2 apart.
  CHECK(back.groups.size() == 8);
  CHECK(back.groups == exported.groups);
  for (const auto& [name, ranks] : back.groups) {
    CHECK(ranks.size() == 8);
    CHECK(ranks[1] - ranks[0] == 2);
  }
  // Every node survives: type, dependencies, durations, and each collective's and send's size.
  std::size_t collectives = 0, sends = 0;
  for (std::size_t r = 0; r < 64; ++r) {
    const auto& a = exported.ranks[r].nodes;
    const auto& b = back.ranks[r].nodes;
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].id == b[i].id);
      CHECK(a[i].type == b[i].type);
      CHECK(a[i].data_deps == b[i].data_deps);
      CHECK(a[i].duration_micros == b[i].duration_micros);
      CHECK(a[i].comm_type == b[i].comm_type);
      CHECK(a[i].comm_size == b[i].comm_size);
      CHECK(a[i].pg_name == b[i].pg_name);
      collectives += b[i].type == EtNodeType::collective;
      sends += b[i].type == EtNodeType::send;
    }
  }
  // Compute nodes carry their FLOPs (the optimizer its bytes), for --recost and ASTRA-sim's roofline.
  double flops = 0;
  for (const EtRankTrace& t : back.ranks) {
    for (const EtNode& n : t.nodes) {
      if (n.type != EtNodeType::compute) continue;
      CHECK((n.name == "optimizer" ? n.tensor_size.value_or(0) > 0 : n.num_ops.value_or(0) > 0));
      flops += static_cast<double>(n.num_ops.value_or(0));
    }
  }
  CHECK(flops == orrery::testing::Approx(step.hardware_flops).epsilon(1e-6));
  // The step's transfers: the gradient buckets and parameter gathers, the pipeline's sends.
  std::size_t step_colls = 0, step_sends = 0;
  for (const models::StepComm& c : step.comms) (c.p2p ? step_sends : step_colls) += 1;
  CHECK(collectives == step_colls);
  CHECK(sends == step_sends);
  for (const models::StepComm& c : step.comms) {
    const EtRankTrace& t = back.ranks[static_cast<std::size_t>(c.rank)];
    const EtNode& n = t.nodes[t.index.at(sim::index_of(c.task))];
    CHECK(n.comm_size == static_cast<std::int64_t>(std::llround(c.bytes)));
    if (!c.p2p) CHECK(collective_of(*n.comm_type) == c.op);
  }
  const ChakraReplay replay = replay_chakra(back, options(sc.topology));
  CHECK(replay.makespan.to_seconds() == orrery::testing::Approx(step.step_time.to_seconds()).epsilon(0.01));
  CHECK(replay.collectives * 8 == step_colls);  // each collective is its 8 members' shares
  CHECK(replay.transfers == step_sends);
}

TEST_CASE("chakra: a hand-built workload of another shape replays as its closed form") {
  std::filesystem::create_directories("chakra");
  const std::int64_t ar = 256ll << 20, pp = 64ll << 20;
  const ChakraWorkload w = round_trip(hand_built(ar, pp), "chakra/hand");
  const ChakraReplay r = replay_chakra(w, options("dgx-h100:nodes=1"));
  models::FabricCosts fabric("dgx-h100:nodes=1", models::CommModel::nccl);
  const double expected = 1e-3 + fabric.collective(models::CollectiveOp::all_reduce, static_cast<double>(ar), 8, 1) + 0.5e-3 +
                          fabric.p2p(static_cast<double>(pp), 1) + 0.2e-3;
  CHECK(r.makespan.to_seconds() == orrery::testing::Approx(expected).epsilon(0.01));
  CHECK(r.collectives == 1);
  CHECK(r.transfers == 1);
  // Re-costed from FLOPs: a node of 1 PFLOP runs at the roofline's GEMM share of the bf16 peak,
  // plus its per-kernel overhead.
  ChakraWorkload flops = w;
  for (auto& t : flops.ranks) {
    for (EtNode& n : t.nodes) {
      if (n.type == EtNodeType::compute) n.num_ops = 1'000'000'000'000'000;
    }
  }
  ChakraReplayOptions o = options("dgx-h100:nodes=1");
  o.recost = true;
  const ChakraReplay re = replay_chakra(flops, o);
  const double node = 1e15 / (o.gpu.peak(models::DType::bf16).value() * o.roofline.gemm_efficiency) + o.roofline.kernel_overhead.to_seconds();
  CHECK(re.compute_s[1] == orrery::testing::Approx(3 * node).epsilon(1e-6));
  CHECK(re.makespan > r.makespan);
}

TEST_CASE("chakra: bad input named by file and node") {
  std::filesystem::create_directories("chakra");
  const auto error = orrery::testing::error_of;
  // Malformed protobuf: garbage, a truncated file.
  {
    std::ofstream("chakra/garbage.0.et", std::ios::binary) << "\xff\xff\xff\xff\xff\xff not a trace";
    CHECK(error([] { read_chakra_workload("chakra/garbage"); }).find("chakra/garbage.0.et:global metadata: malformed protobuf at byte") == 0);
    const std::string good = chakra_et_bytes(hand_built(1 << 20, 1 << 20).ranks[0]);
    std::ofstream("chakra/cut.0.et", std::ios::binary) << good.substr(0, good.size() - 5);
    const std::string e = error([] { read_chakra_workload("chakra/cut"); });
    CHECK(e.find("chakra/cut.0.et:node #") == 0);
    CHECK(e.find("malformed protobuf at byte") != std::string::npos);
    CHECK(error([] { parse_chakra_et("", "empty.et"); }) == "empty.et: an empty file, expected a GlobalMetadata message and the rank's nodes");
  }
  // A node that depends on a missing node.
  {
    ChakraWorkload w = hand_built(1 << 20, 1 << 20);
    w.ranks[3].nodes[2].data_deps = {99};
    CHECK(error([&] { round_trip(w, "chakra/missing"); }) ==
          "chakra/missing.3.et:node #2 (id 3, comp 3): depends on node 99, which the trace does not have");
  }
  // An unknown communicator group, one without this rank, no groups file at all.
  {
    ChakraWorkload w = hand_built(1 << 20, 1 << 20);
    w.ranks[2].nodes[1].pg_name = "9";
    CHECK(error([&] { round_trip(w, "chakra/group"); }) ==
          "chakra/group.2.et:node #1 (id 2, coll 2): communicator group \"9\", which chakra/group.comm_groups.json does not define");
    w = hand_built(1 << 20, 1 << 20);
    w.groups["1"] = {0, 1, 3, 4, 5, 6, 7};
    CHECK(error([&] { round_trip(w, "chakra/notmember"); }) ==
          "chakra/notmember.2.et:node #1 (id 2, coll 2): communicator group \"1\" does not contain this rank (2)");
    w = hand_built(1 << 20, 1 << 20);
    w.groups.clear();
    std::filesystem::remove("chakra/nogroups.comm_groups.json");
    CHECK(error([&] { round_trip(w, "chakra/nogroups"); }).find("communicator group \"1\" but no groups file (chakra/nogroups.comm_groups.json)") !=
          std::string::npos);
  }
  // Members that disagree, a send nobody receives, a deadlock, unevenly spaced ranks.
  {
    ChakraWorkload w = hand_built(1 << 20, 1 << 20);
    w.ranks[5].nodes[1].comm_size = 2 << 20;
    CHECK(error([&] { replay_chakra(round_trip(w, "chakra/size"), options("dgx-h100:nodes=1")); }) ==
          "chakra/size.5.et:node #1 (id 2, coll 2): collective #1 on group \"1\" is comm_type 0 of 2097152 bytes here but comm_type 0 of "
          "1048576 bytes on rank 0 (node #1 (id 2, coll 2))");
    w = hand_built(1 << 20, 1 << 20);
    w.ranks[1].nodes.erase(w.ranks[1].nodes.begin() + 3);  // the receive
    w.ranks[1].nodes.back().data_deps = {3};
    CHECK(error([&] { replay_chakra(round_trip(w, "chakra/unmatched"), options("dgx-h100:nodes=1")); }) ==
          "chakra/unmatched.0.et:node #3 (id 4, send 4): a send to rank 1 with tag 7 that rank 1 never receives");
    w = hand_built(1 << 20, 1 << 20);
    w.ranks[0].nodes[0].data_deps = {3};
    CHECK(error([&] { replay_chakra(round_trip(w, "chakra/cycle"), options("dgx-h100:nodes=1")); }).find("the trace deadlocks: ") != std::string::npos);
    w = hand_built(1 << 20, 1 << 20);
    w.groups["2"] = {0, 1, 3};
    for (int r : {0, 1, 3}) w.ranks[static_cast<std::size_t>(r)].nodes.push_back(collective(9, models::CollectiveOp::all_gather, 1 << 20, "2", {3}));
    CHECK(error([&] { replay_chakra(round_trip(w, "chakra/uneven"), options("dgx-h100:nodes=1")); }) ==
          "chakra/uneven.comm_groups.json:/2: group \"2\" has ranks 0 and 1 1 apart but 1 and 3 2 apart: Orrery costs collectives among evenly "
          "spaced ranks");
  }
  // The fabric must have one GPU per rank; a missing workload is named.
  CHECK(error([] { replay_chakra(read_chakra_workload("chakra/hand"), options("dgx-h100:nodes=2")); }) ==
        "dgx-h100:nodes=2: 16 GPUs, but the workload has 8 ranks (one per GPU)");
  CHECK(error([] { read_chakra_workload("chakra/nothing"); }) ==
        "chakra/nothing: no execution trace chakra/nothing.0.et, expected one file per rank (chakra/nothing.<rank>.et)");
  // Re-costing needs FLOPs or bytes.
  ChakraReplayOptions o = options("dgx-h100:nodes=1");
  o.recost = true;
  CHECK(error([&] { replay_chakra(read_chakra_workload("chakra/hand"), o); }) ==
        "chakra/hand.0.et:node #0 (id 1, comp 1): re-costing needs num_ops or tensor_size; the node has neither");
}
