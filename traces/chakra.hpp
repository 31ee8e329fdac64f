// Chakra execution traces (MLCommons Chakra, the workload format of ASTRA-sim and SimAI): one
// file per rank, `<prefix>.<rank>.et`, each a GlobalMetadata message then the rank's nodes, every
// message preceded by its length as a varint (traces/chakra/chakra_et.proto, Orrery's own
// description of the wire format); communicator groups in `<prefix>.comm_groups.json`, the
// `{"<pg_name>": [ranks...]}` object ASTRA-sim takes as its comm-group configuration.
//   ChakraWorkload w = read_chakra_workload("runs/llama");   // runs/llama.0.et, runs/llama.1.et, ...
//   write_chakra_workload("out/llama", w);
// Malformed input is an InputError naming the file and the node (its index and id).
#pragma once

#include "models/network/collectives.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

// Chakra's NodeType values.
enum class EtNodeType : std::uint8_t { invalid = 0, metadata = 1, mem_load = 2, mem_store = 3, compute = 4, send = 5, recv = 6, collective = 7 };
std::string_view to_string(EtNodeType t);

// One node of a rank's trace, with the attributes Chakra's feeder reads (its names and types:
// num_ops int64, tensor_size uint64, comm_type int64, comm_size int64, comm_src / comm_dst /
// comm_tag int32, pg_name string, is_cpu_op bool).
struct EtNode {
  std::uint64_t id = 0;
  std::string name;
  EtNodeType type = EtNodeType::invalid;
  std::vector<std::uint64_t> ctrl_deps, data_deps;
  std::uint64_t start_time_micros = 0;
  std::uint64_t duration_micros = 0;
  std::optional<std::int64_t> num_ops;        // FLOPs of a compute node
  std::optional<std::uint64_t> tensor_size;   // bytes it reads and writes
  std::optional<std::int64_t> comm_type;      // Chakra's CollectiveCommType value
  std::optional<std::int64_t> comm_size;      // bytes of a collective or a send/recv
  std::optional<std::int32_t> comm_src, comm_dst, comm_tag;
  std::string pg_name;                        // communicator group ("" : all ranks)
  bool is_cpu_op = false;
};

struct EtRankTrace {
  std::string path;     // the file it was read from (for errors)
  std::string version;  // GlobalMetadata's
  std::vector<EtNode> nodes;
  // Index of a node id in `nodes` (built by the reader; the writer needs none).
  std::map<std::uint64_t, std::size_t> index;
  // Control dependencies in the file: kept, not enforced (Chakra's feeder and ASTRA-sim order
  // nodes by their data dependencies only).
  std::size_t ctrl_deps = 0;
};

struct ChakraWorkload {
  std::vector<EtRankTrace> ranks;                  // rank r is ranks[r]
  std::map<std::string, std::vector<int>> groups;  // pg_name -> its ranks, in order
  std::string groups_path;                         // "" when the workload has no groups file
};

// The CollectiveOp of a Chakra CollectiveCommType, or nullopt for the types Orrery does not
// simulate (gather, scatter, reduce-scatter-block, barrier).
std::optional<models::CollectiveOp> collective_of(std::int64_t comm_type);
std::int64_t chakra_comm_type(models::CollectiveOp op);

// One rank's file. Checks the framing and the messages (a truncated or garbled file names the
// byte offset and the node), duplicate ids, and that every dependency names a node of the file.
EtRankTrace read_chakra_et(const std::string& path);
// `<prefix>.0.et`, `<prefix>.1.et`, ... up to the first missing rank, and the groups file when
// there is one (`groups_path` overrides `<prefix>.comm_groups.json`). Checks every pg_name a
// node uses against the groups, and every send/recv peer against the ranks.
ChakraWorkload read_chakra_workload(const std::string& prefix, const std::string& groups_path = "");
// Where node i of a trace is, for messages: "node #3 (id 17, aten::mm)".
std::string et_node_where(const EtRankTrace& t, std::size_t i);
// The checks read_chakra_workload makes across ranks (groups, peers, required attributes).
void check_chakra_workload(const ChakraWorkload& w, const std::string& prefix);
// Parses a groups file's text (errors name `source` and the JSON pointer).
std::map<std::string, std::vector<int>> parse_comm_groups(std::string_view text, std::string_view source);

// Writes every rank's file and, when there are groups, the groups file; each atomically.
void write_chakra_workload(const std::string& prefix, const ChakraWorkload& w);
// One rank's bytes (the fuzz target and tests parse these back).
std::string chakra_et_bytes(const EtRankTrace& trace);
EtRankTrace parse_chakra_et(std::string_view bytes, std::string_view source);

}  // namespace orrery::traces
