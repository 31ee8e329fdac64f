#include "traces/chakra.hpp"

#include "traces/atomic_file.hpp"
#include "traces/json_input.hpp"

#include "sim/error.hpp"

#include "chakra/chakra_et.pb.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace orrery::traces {

namespace {

namespace pb = ChakraProtoMsg;

// Files above this are refused rather than read into memory (a step of 131,072 ranks writes
// files of a few MB each).
constexpr std::uintmax_t kMaxEtBytes = std::uintmax_t{1} << 30;

std::string read_bytes(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw sim::InputError(path, "", "cannot read the file: " + ec.message());
  if (size > kMaxEtBytes) throw sim::InputError(path, "", fmt::format("{} bytes, above the {} an execution trace may have", size, kMaxEtBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sim::InputError(path, "", "cannot open the file");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) throw sim::InputError(path, "", "the file shrank while being read");
  return bytes;
}

// The attributes Chakra's feeder reads, by its names and value types.
void read_attr(const pb::AttributeProto& a, EtNode& n, std::string_view source, const std::string& where) {
  const auto bad = [&](std::string_view expected) {
    throw sim::InputError(std::string(source), where, fmt::format("attribute {} has the wrong value type, expected {}", a.name(), expected));
  };
  // Integers are accepted in any of the integer encodings (writers differ), checked for range.
  const auto integer = [&]() -> std::optional<long double> {
    switch (a.value_case()) {
      case pb::AttributeProto::kInt32Val: return a.int32_val();
      case pb::AttributeProto::kInt64Val: return a.int64_val();
      case pb::AttributeProto::kUint32Val: return a.uint32_val();
      case pb::AttributeProto::kUint64Val: return a.uint64_val();
      case pb::AttributeProto::kSint32Val: return a.sint32_val();
      case pb::AttributeProto::kSint64Val: return a.sint64_val();
      default: return std::nullopt;
    }
  };
  const auto in_range = [&](long double lo, long double hi) -> long double {
    const std::optional<long double> v = integer();
    if (!v) bad("an integer");
    if (*v < lo || *v > hi) {
      throw sim::InputError(std::string(source), where, fmt::format("attribute {} is {}, expected {} to {}", a.name(), static_cast<double>(*v),
                                                                    static_cast<double>(lo), static_cast<double>(hi)));
    }
    return *v;
  };
  constexpr long double kMax64 = static_cast<long double>(std::numeric_limits<std::int64_t>::max());
  constexpr long double kMax32 = static_cast<long double>(std::numeric_limits<std::int32_t>::max());
  const std::string& name = a.name();
  if (name == "num_ops") {
    n.num_ops = static_cast<std::int64_t>(in_range(0, kMax64));
  } else if (name == "tensor_size") {
    n.tensor_size = static_cast<std::uint64_t>(in_range(0, kMax64));
  } else if (name == "comm_type") {
    n.comm_type = static_cast<std::int64_t>(in_range(0, 9));
  } else if (name == "comm_size") {
    n.comm_size = static_cast<std::int64_t>(in_range(0, kMax64));
  } else if (name == "comm_src") {
    n.comm_src = static_cast<std::int32_t>(in_range(0, kMax32));
  } else if (name == "comm_dst") {
    n.comm_dst = static_cast<std::int32_t>(in_range(0, kMax32));
  } else if (name == "comm_tag") {
    n.comm_tag = static_cast<std::int32_t>(in_range(0, kMax32));
  } else if (name == "pg_name") {
    if (a.value_case() == pb::AttributeProto::kStringVal) {
      n.pg_name = a.string_val();
    } else if (const std::optional<long double> v = integer()) {
      n.pg_name = fmt::format("{}", static_cast<long long>(*v));
    } else {
      bad("a string");
    }
  } else if (name == "is_cpu_op") {
    if (a.value_case() == pb::AttributeProto::kBoolVal) {
      n.is_cpu_op = a.bool_val();
    } else {
      n.is_cpu_op = in_range(0, 1) != 0;
    }
  }
}

void add_attr(pb::Node& node, const char* name, std::int64_t v) {
  pb::AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void add_attr32(pb::Node& node, const char* name, std::int32_t v) {
  pb::AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_int32_val(v);
}

}  // namespace

std::string_view to_string(EtNodeType t) {
  switch (t) {
    case EtNodeType::invalid: return "INVALID_NODE";
    case EtNodeType::metadata: return "METADATA_NODE";
    case EtNodeType::mem_load: return "MEM_LOAD_NODE";
    case EtNodeType::mem_store: return "MEM_STORE_NODE";
    case EtNodeType::compute: return "COMP_NODE";
    case EtNodeType::send: return "COMM_SEND_NODE";
    case EtNodeType::recv: return "COMM_RECV_NODE";
    case EtNodeType::collective: return "COMM_COLL_NODE";
  }
  return "?";
}

std::string et_node_where(const EtRankTrace& t, std::size_t i) {
  const EtNode& n = t.nodes[i];
  return fmt::format("node #{} (id {}, {})", i, n.id, n.name);
}

std::optional<models::CollectiveOp> collective_of(std::int64_t comm_type) {
  switch (comm_type) {
    case pb::ALL_REDUCE: return models::CollectiveOp::all_reduce;
    case pb::REDUCE: return models::CollectiveOp::reduce;
    case pb::ALL_GATHER: return models::CollectiveOp::all_gather;
    case pb::BROADCAST: return models::CollectiveOp::broadcast;
    case pb::ALL_TO_ALL: return models::CollectiveOp::all_to_all;
    case pb::REDUCE_SCATTER: return models::CollectiveOp::reduce_scatter;
    default: return std::nullopt;
  }
}

std::int64_t chakra_comm_type(models::CollectiveOp op) {
  switch (op) {
    case models::CollectiveOp::all_reduce: return pb::ALL_REDUCE;
    case models::CollectiveOp::reduce: return pb::REDUCE;
    case models::CollectiveOp::all_gather: return pb::ALL_GATHER;
    case models::CollectiveOp::broadcast: return pb::BROADCAST;
    case models::CollectiveOp::all_to_all: return pb::ALL_TO_ALL;
    case models::CollectiveOp::reduce_scatter: return pb::REDUCE_SCATTER;
    case models::CollectiveOp::send_recv: break;
  }
  ORRERY_CHECK(false, "send/recv is not a Chakra collective");
  return 0;
}

EtRankTrace parse_chakra_et(std::string_view bytes, std::string_view source) {
  EtRankTrace t;
  t.path = std::string(source);
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(static_cast<int>(std::min<std::size_t>(bytes.size() + 1, std::numeric_limits<int>::max())));
  const auto malformed = [&](const std::string& where, std::string_view what) {
    throw sim::InputError(t.path, where, fmt::format("malformed protobuf at byte {}: {}", in.CurrentPosition(), what));
  };
  // One length-prefixed message.
  const auto read_message = [&](google::protobuf::MessageLite& msg, const std::string& where) {
    std::uint32_t size = 0;
    if (!in.ReadVarint32(&size)) malformed(where, "a truncated length prefix");
    if (size > static_cast<std::uint32_t>(in.BytesUntilTotalBytesLimit())) {
      malformed(where, fmt::format("a message of {} bytes where {} remain", size, in.BytesUntilTotalBytesLimit()));
    }
    const auto limit = in.PushLimit(static_cast<int>(size));
    if (!msg.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) malformed(where, "the message does not parse");
    in.PopLimit(limit);
  };
  if (bytes.empty()) throw sim::InputError(t.path, "", "an empty file, expected a GlobalMetadata message and the rank's nodes");
  pb::GlobalMetadata meta;
  read_message(meta, "global metadata");
  t.version = meta.version();
  while (!in.ExpectAtEnd() && in.BytesUntilTotalBytesLimit() > 0) {
    const std::string where = fmt::format("node #{}", t.nodes.size());
    pb::Node node;
    read_message(node, where);
    EtNode n;
    n.id = node.id();
    const std::string at = fmt::format("node #{} (id {})", t.nodes.size(), n.id);
    n.name = node.name();
    if (node.type() < pb::METADATA_NODE || node.type() > pb::COMM_COLL_NODE) {
      throw sim::InputError(t.path, at, fmt::format("node type {}, expected METADATA_NODE (1) to COMM_COLL_NODE (7)", static_cast<int>(node.type())));
    }
    n.type = static_cast<EtNodeType>(node.type());
    n.ctrl_deps.assign(node.ctrl_deps().begin(), node.ctrl_deps().end());
    n.data_deps.assign(node.data_deps().begin(), node.data_deps().end());
    n.start_time_micros = node.start_time_micros();
    n.duration_micros = node.duration_micros();
    // A duration above a year is a garbled field, not a trace.
    if (n.duration_micros > 365ull * 24 * 3600 * 1000000) {
      throw sim::InputError(t.path, at, fmt::format("duration {} us, expected at most a year", n.duration_micros));
    }
    for (const pb::AttributeProto& a : node.attr()) read_attr(a, n, t.path, at);
    if (!t.index.emplace(n.id, t.nodes.size()).second) {
      throw sim::InputError(t.path, at, fmt::format("a second node with id {} (the first is node #{})", n.id, t.index.at(n.id)));
    }
    t.nodes.push_back(std::move(n));
  }
  // Every data dependency names a node of the file. Control dependencies are kept but not
  // checked: Chakra's feeder (and so ASTRA-sim) orders nodes by data dependencies only, and
  // PyTorch's converter points control dependencies at parent operators it leaves out.
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const EtNode& n = t.nodes[i];
    for (const std::uint64_t d : n.data_deps) {
      if (t.index.count(d) == 0) {
        throw sim::InputError(t.path, et_node_where(t, i),
                              fmt::format("depends on node {}, which the trace does not have", d));
      }
    }
    t.ctrl_deps += n.ctrl_deps.size();
  }
  return t;
}

EtRankTrace read_chakra_et(const std::string& path) { return parse_chakra_et(read_bytes(path), path); }

std::map<std::string, std::vector<int>> parse_comm_groups(std::string_view text, std::string_view source) {
  const std::unique_ptr<JsonDocument> doc = parse_json(text, std::string(source));
  std::map<std::string, std::vector<int>> groups;
  const JsonNode root = doc->root();
  if (!root.json().is_object()) root.fail_expected("an object of communicator groups {\"<pg_name>\": [ranks...]}");
  for (const auto& [name, v] : root.json().items()) {
    const JsonNode g(v, source, "/" + pointer_token(name));
    std::vector<int>& ranks = groups[name];
    std::set<int> seen;
    for (const JsonNode& r : g.as_array()) {
      const int rank = r.as_int_in(0, 1 << 24);
      if (!seen.insert(rank).second) r.fail(fmt::format("rank {} twice in group {}", rank, name));
      ranks.push_back(rank);
    }
    if (ranks.empty()) g.fail("an empty group, expected its ranks");
  }
  return groups;
}

ChakraWorkload read_chakra_workload(const std::string& prefix, const std::string& groups_path) {
  ChakraWorkload w;
  for (int r = 0;; ++r) {
    const std::string path = fmt::format("{}.{}.et", prefix, r);
    if (!std::filesystem::exists(path)) break;
    w.ranks.push_back(read_chakra_et(path));
  }
  if (w.ranks.empty()) throw sim::InputError(prefix, "", fmt::format("no execution trace {}.0.et, expected one file per rank ({}.<rank>.et)", prefix, prefix));
  const std::string groups_file = groups_path.empty() ? prefix + ".comm_groups.json" : groups_path;
  if (!groups_path.empty() || std::filesystem::exists(groups_file)) {
    std::ifstream in(groups_file);
    if (!in) throw sim::InputError(groups_file, "", "cannot open the communicator-groups file");
    std::stringstream ss;
    ss << in.rdbuf();
    w.groups = parse_comm_groups(ss.str(), groups_file);
    w.groups_path = groups_file;
    const int n = static_cast<int>(w.ranks.size());
    for (const auto& [name, ranks] : w.groups) {
      for (const int r : ranks) {
        if (r >= n) throw sim::InputError(groups_file, "/" + pointer_token(name), fmt::format("rank {}, but the workload has {} ranks", r, n));
      }
    }
  }
  check_chakra_workload(w, prefix);
  return w;
}

void check_chakra_workload(const ChakraWorkload& w, const std::string& prefix) {
  const int n = static_cast<int>(w.ranks.size());
  for (int r = 0; r < n; ++r) {
    const EtRankTrace& t = w.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      const EtNode& node = t.nodes[i];
      const std::string at = et_node_where(t, i);
      if (!node.pg_name.empty() && w.groups.count(node.pg_name) == 0) {
        throw sim::InputError(t.path, at,
                              w.groups_path.empty()
                                  ? fmt::format("communicator group {} but no groups file ({}.comm_groups.json)", sim::quote(node.pg_name), prefix)
                                  : fmt::format("communicator group {}, which {} does not define", sim::quote(node.pg_name), w.groups_path));
      }
      if (!node.pg_name.empty()) {
        const std::vector<int>& members = w.groups.at(node.pg_name);
        if (std::find(members.begin(), members.end(), r) == members.end()) {
          throw sim::InputError(t.path, at, fmt::format("communicator group {} does not contain this rank ({})", sim::quote(node.pg_name), r));
        }
      }
      if (node.is_cpu_op) continue;  // a host-side operator: its duration on the CPU, whatever its type (as ASTRA-sim runs it)
      if (node.type == EtNodeType::send || node.type == EtNodeType::recv) {
        const auto peer = node.type == EtNodeType::send ? node.comm_dst : node.comm_src;
        const char* field = node.type == EtNodeType::send ? "comm_dst" : "comm_src";
        if (!peer) throw sim::InputError(t.path, at, fmt::format("a {} without {}", to_string(node.type), field));
        if (*peer >= n || *peer == r) {
          throw sim::InputError(t.path, at, fmt::format("{} {}, expected another of the workload's {} ranks", field, *peer, n));
        }
        if (!node.comm_size) throw sim::InputError(t.path, at, fmt::format("a {} without comm_size", to_string(node.type)));
      }
      if (node.type == EtNodeType::collective) {
        if (!node.comm_type) throw sim::InputError(t.path, at, "a COMM_COLL_NODE without comm_type");
        if (!collective_of(*node.comm_type)) {
          throw sim::InputError(t.path, at, fmt::format("comm_type {}, expected ALL_REDUCE (0), REDUCE (1), ALL_GATHER (2), BROADCAST (5), ALL_TO_ALL (6) or REDUCE_SCATTER (7)",
                                                        *node.comm_type));
        }
        if (!node.comm_size) throw sim::InputError(t.path, at, "a COMM_COLL_NODE without comm_size");
      }
    }
  }
}

std::string chakra_et_bytes(const EtRankTrace& trace) {
  std::string out;
  google::protobuf::io::StringOutputStream raw(&out);
  {
    google::protobuf::io::CodedOutputStream os(&raw);
    const auto write = [&](const google::protobuf::MessageLite& m) {
      os.WriteVarint32(static_cast<std::uint32_t>(m.ByteSizeLong()));
      m.SerializeWithCachedSizes(&os);
    };
    pb::GlobalMetadata meta;
    meta.set_version(trace.version.empty() ? "0.0.4" : trace.version);
    write(meta);
    for (const EtNode& n : trace.nodes) {
      pb::Node node;
      node.set_id(n.id);
      node.set_name(n.name);
      node.set_type(static_cast<pb::NodeType>(n.type));
      for (const std::uint64_t d : n.ctrl_deps) node.add_ctrl_deps(d);
      for (const std::uint64_t d : n.data_deps) node.add_data_deps(d);
      node.set_start_time_micros(n.start_time_micros);
      node.set_duration_micros(n.duration_micros);
      if (n.num_ops) add_attr(node, "num_ops", *n.num_ops);
      if (n.tensor_size) {
        pb::AttributeProto* a = node.add_attr();
        a->set_name("tensor_size");
        a->set_uint64_val(*n.tensor_size);
      }
      if (n.comm_type) add_attr(node, "comm_type", *n.comm_type);
      if (n.comm_size) add_attr(node, "comm_size", *n.comm_size);
      if (n.comm_src) add_attr32(node, "comm_src", *n.comm_src);
      if (n.comm_dst) add_attr32(node, "comm_dst", *n.comm_dst);
      if (n.comm_tag) add_attr32(node, "comm_tag", *n.comm_tag);
      if (!n.pg_name.empty()) {
        pb::AttributeProto* a = node.add_attr();
        a->set_name("pg_name");
        a->set_string_val(n.pg_name);
      }
      pb::AttributeProto* cpu = node.add_attr();
      cpu->set_name("is_cpu_op");
      cpu->set_bool_val(n.is_cpu_op);
      write(node);
    }
  }
  return out;
}

void write_chakra_workload(const std::string& prefix, const ChakraWorkload& w) {
  // Everything is serialised before any file is written.
  std::vector<std::string> files;
  files.reserve(w.ranks.size());
  for (const EtRankTrace& t : w.ranks) files.push_back(chakra_et_bytes(t));
  std::string groups;
  if (!w.groups.empty()) {
    groups = "{\n";
    std::size_t k = 0;
    for (const auto& [name, ranks] : w.groups) {
      groups += fmt::format("  {}: [{}]{}\n", nlohmann::json(name).dump(), fmt::join(ranks, ", "), ++k < w.groups.size() ? "," : "");
    }
    groups += "}\n";
  }
  for (std::size_t r = 0; r < files.size(); ++r) write_file_atomically(fmt::format("{}.{}.et", prefix, r), files[r]);
  if (!groups.empty()) write_file_atomically(prefix + ".comm_groups.json", groups);
}

}  // namespace orrery::traces
