// Compound programs: parts of a multimodal (or distillation) step on their own GPU sets, joined
// by the samples they share. Used by MegaScale-Omni and Maestro (policies/compound.hpp).
//
// A `WavePlan` lists sections (a set of GPUs with `replicas` data-parallel copies, one pipeline
// stage each) and their micro-batches (which samples, forward and backward seconds); section a
// feeds section b when an edge says so. `wavefront_program` turns it into a pipeline program:
// a micro-batch's forward waits for the forwards of every upstream micro-batch that holds one of
// its samples, and an upstream backward waits for the downstream backwards that share a sample,
// so a section fires only for the samples it holds and independent sections run side by side.
// `schedule_program` (multimodal_pipeline.hpp) then runs it greedily, ready work first.
//   WavePlan p{.replicas = {1, 1}, .trainable = {true, true}, .edges = {}};
//   p.micro_batches = {{0, 0, {0}, 1.0, 0.0}, {1, 0, {0}, 1.0, 0.0}};
//   PipeProgram prog = wavefront_program(p);   // two independent sections: the step is max, not sum
#pragma once

#include "models/multimodal/multimodal.hpp"
#include "models/multimodal/multimodal_pipeline.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orrery::models {

struct WaveMicroBatch {
  int section = 0;
  int replica = 0;            // which of the section's replicas (stages) runs it
  std::vector<int> samples;   // indices into the global batch, ascending
  double f = 0, b = 0;        // seconds; b (backward and weight gradients) 0 when frozen
  double out_bytes = 0;       // forward output handed to downstream sections (and gradients back)
  double activation_bytes = 0;
  std::string label;
};

struct WavePlan {
  std::vector<int> replicas;              // per section
  std::vector<bool> trainable;            // per section: runs a backward
  std::vector<std::pair<int, int>> edges;  // section a feeds section b
  std::vector<WaveMicroBatch> micro_batches;  // per section in its preferred order
  // Optional, per section: the program stage each replica runs on, for a section colocated with
  // others (its work then queues with theirs on the same GPUs); sections without one get stages
  // of their own, numbered in section order.
  std::vector<std::vector<int>> colocated;
  int stage(int section, int replica) const;  // the program's stage of a section's replica
  int stages() const;
};

// The program of a plan (see above); forward priorities follow each section's order. InternalError
// on an edge or replica out of range.
PipeProgram wavefront_program(const WavePlan& plan);

// MegaScale-Omni's adaptive resharding: each encoder GPU sends the embeddings it produced
// straight to the LLM GPUs that own their samples (no gather on one rank). With every GPU on its
// own NIC of `link` bytes/s, the transfer takes as long as the busiest sender or receiver:
//   seconds = max(max_e sent_e, max_g received_g) / link.
struct Reshard {
  double bytes = 0;    // total moved
  double seconds = 0;
};
Reshard reshard(const std::vector<double>& sent_per_gpu, const std::vector<double>& received_per_gpu, double link);

// Bytes one sample's encoder outputs take once projected to the LLM's width (bf16): the
// projectors' output tokens x the LLM's hidden x 2.
double embedding_bytes(const MultimodalModel& m, const MultimodalSample& s);

// Parameters of a module's layers (a projector's MLP; the LLM's embeddings included).
double module_params(const ModuleSpec& module);

// Does `module` have work for `sample` (any attention document or token)?
bool has_work(const MultimodalModel& m, int module, const MultimodalSample& sample);

// SectionSpec (a section of a compound workload) is in multimodal_pipeline.hpp, beside the setup that carries it.

// The section graph: a -> b when a module of a feeds a module of b. InputError at
// `where`/<index> for an empty section, a module in two sections, or in none; at `where` for a
// cycle (naming its sections) or sections whose GPUs (tp x dp) add up to more than `gpus`.
std::vector<std::pair<int, int>> section_edges(const MultimodalModel& m, const std::vector<SectionSpec>& sections, int gpus, std::string_view source,
                                               std::string_view where);

// One section per encoder with its projector (or per frozen text encoder: a distillation
// teacher), and one for the sink and whatever else feeds it.
std::vector<SectionSpec> default_sections(const MultimodalModel& m);

// A distillation as a module graph: the catalog LLM `teacher`, frozen (forward only, a
// text_encoder), feeding the trained catalog LLM `student`.
//   MultimodalModel m = distillation_model("distill", "llama3-70b", "llama3-8b");
MultimodalModel distillation_model(std::string name, std::string_view teacher, std::string_view student);

}  // namespace orrery::models
