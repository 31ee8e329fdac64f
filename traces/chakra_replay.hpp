// Chakra workloads on Orrery's fabric, and Orrery's steps as Chakra workloads.
//
// Replay (ASTRA-sim's semantics): a rank's compute nodes run one at a time on its GPU, in the
// order their data dependencies free them (control dependencies are not enforced, as Chakra's
// feeder does not; host-side operators run their recorded time on a CPU stream), with their recorded duration or re-costed from their FLOPs
// and bytes; MEM_LOAD / MEM_STORE nodes move their bytes over the GPU's host link; collectives
// and send/recv run beside the compute. The k-th collective each member issues on a
// communicator group is one collective: it starts when every member has reached it and costs
// what Orrery's communication model says for that group on that fabric; each member's share
// runs as a flow on its GPU's own NVLink or NIC (as the step emulator runs its data-parallel
// buckets), so transfers that share a GPU's link slow each other. A send and the receive that
// names it (same source, destination and tag, in order) are one transfer, from the sender's
// link to the receiver's.
//   ChakraReplay r = replay_chakra(read_chakra_workload("llama"), {.topology = "dgx-h100:nodes=8", .gpu = h100});
//
// Export: run_step with keep_graph and without reuse (every rank simulated), then
// chakra_from_step writes each GPU's compute tasks as COMP_NODEs with their durations, its
// data-parallel buckets as COMM_COLL_NODEs on their groups, and pipeline sends as
// COMM_SEND_NODE / COMM_RECV_NODE pairs, with the graph's dependencies.
#pragma once

#include "traces/chakra.hpp"

#include "models/hardware/hardware.hpp"
#include "models/training/step.hpp"
#include "sim/executor.hpp"
#include "sim/task_graph.hpp"

#include <string>
#include <vector>

namespace orrery::traces {

struct ChakraReplayOptions {
  std::string topology;  // builder spec; its GPUs must equal the workload's ranks
  models::GpuSpec gpu;
  models::CommModel comm = models::CommModel::nccl;
  // Re-cost compute nodes from num_ops (at the roofline's GEMM efficiency of the bf16 peak) and
  // tensor_size (at its HBM efficiency), plus its per-kernel overhead, instead of their recorded
  // durations. Needs every compute node to carry one of the two.
  bool recost = false;
  models::RooflineParams roofline;
};

struct ChakraReplay {
  sim::Duration makespan;
  std::size_t nodes = 0, collectives = 0, transfers = 0;
  sim::TaskGraph graph;
  std::vector<sim::Span> spans;
  std::vector<double> compute_s;  // per rank, busy
  std::vector<double> comm_s;     // per rank, its transfers' time (overlapping the compute or not)
};

// Errors (InputError naming the file and node): a collective whose members disagree on its type
// or size, or issue different numbers of collectives on a group; a group that is not evenly
// spaced ranks; a send without its receive; a re-costed node with neither FLOPs nor bytes; a
// workload whose ranks differ from the fabric's GPUs; dependencies that deadlock.
ChakraReplay replay_chakra(const ChakraWorkload& workload, const ChakraReplayOptions& options);

// Orrery's step as per-rank Chakra traces (`result` from run_step with keep_graph and
// reuse = false). Group names are numbers from 1, as ASTRA-sim's comm-group files key them.
ChakraWorkload chakra_from_step(const models::StepResult& result, int gpus);

}  // namespace orrery::traces
