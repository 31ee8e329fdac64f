// Pipeline schedules: the order in which each pipeline stage runs the forward and backward
// passes of the micro-batches. models/ owns the decision point (this interface and the
// dependency rules); policies/pipeline.cpp registers the schedules (GPipe, 1F1B, interleaved
// 1F1B, ZB-H1).
//
// A model is cut into virtual stages, placed on the stages as the schedule's placement says:
//   interleaved    stages x chunks virtual stages, vs = chunk * stages + stage (Megatron's);
//   vee            the same count, every odd chunk running the stages backwards (ZB-V's V
//                  shape for two chunks: vs = stage and 2 stages - 1 - stage), so the first
//                  and the last virtual stage share stage 0;
//   bidirectional  `stages` virtual stages, each held twice (DualPipe): the first half of the
//                  micro-batches enters at stage 0 and runs chunk 0 (vs = stage), the second
//                  half enters at the last stage and runs chunk 1 (vs = stages - 1 - stage).
// Dependencies between ops:
//   forward(vs, mb)         after forward(vs - 1, mb)
//   backward(vs, mb)        after forward(vs, mb) and backward(vs + 1, mb)   [B: input grads]
//   backward_weight(vs, mb) after backward_input(vs, mb)                      [W: weight grads]
// `backward` is B and W together; schedules that split it emit backward_input and
// backward_weight instead.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace orrery::models {

enum class PipeOpKind : std::uint8_t { forward, backward, backward_input, backward_weight };
std::string_view to_string(PipeOpKind);

struct PipeOp {
  PipeOp() = default;
  PipeOp(PipeOpKind k, int mb, int c, bool pair = false) : kind(k), micro_batch(mb), chunk(c), paired(pair) {}

  PipeOpKind kind = PipeOpKind::forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this stage (0 .. chunks-1)
  // Issued together with the stage's next op of the opposite pass (a forward with a backward):
  // DualPipe's overlapped pairs and STP's braided units, whose tensor- and expert-parallel
  // communication runs while the partner computes.
  bool paired = false;
  friend bool operator==(const PipeOp&, const PipeOp&) = default;
};

enum class PipelinePlacement : std::uint8_t { interleaved, vee, bidirectional };
std::string_view to_string(PipelinePlacement);

struct PipelineShape {
  PipelineShape() = default;
  PipelineShape(int stage_count, int micro_batch_count, int chunk_count = 1, PipelinePlacement where = PipelinePlacement::interleaved)
      : stages(stage_count), micro_batches(micro_batch_count), chunks(chunk_count), placement(where) {}

  int stages = 1;
  int micro_batches = 1;
  int chunks = 1;  // model chunks per stage
  PipelinePlacement placement = PipelinePlacement::interleaved;
  // One chunk's forward, input-gradient and weight-gradient times, relative: what schedules
  // built by simulating the pipeline (the zero-bubble heuristic) order by. Equal by default.
  struct Costs {
    double f = 1, b = 1, w = 1;
  } costs;

  // The model's virtual stages: stages x chunks, or `stages` when bidirectional.
  int virtual_stages() const { return placement == PipelinePlacement::bidirectional ? stages : stages * chunks; }
  // The virtual stage chunk `chunk` of `stage` holds.
  int virtual_stage(int stage, int chunk) const;
  // Where micro-batch `mb` runs virtual stage vs.
  struct Slot {
    int stage, chunk;
  };
  Slot slot(int vs, int mb) const;
  // The chunk micro-batch `mb` runs on every stage when bidirectional (its direction); -1 otherwise.
  int direction(int mb) const;
};

using PipelinePlan = std::vector<std::vector<PipeOp>>;  // per stage, in order

class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  virtual std::string_view name() const = 0;
  // How the schedule places the model's chunks on the stages (PipelineShape::placement).
  virtual PipelinePlacement placement() const { return PipelinePlacement::interleaved; }
  // Whether the order depends on PipelineShape::costs (the zero-bubble heuristic's): its memory
  // is then known only with the step's op costs.
  virtual bool orders_by_cost() const { return false; }
  // Whether it runs a plan of `vp` model chunks per stage (ParallelPlan::vp): one by default.
  virtual bool runs_chunks(int vp) const { return vp == 1; }
  // Per stage, the ops in the order the stage runs them. Throws InputError (naming `where`)
  // when the shape does not suit the schedule (e.g. interleaving needs micro-batches to be a
  // multiple of the stages).
  virtual PipelinePlan plan(const PipelineShape& shape, std::string_view source, std::string_view where) const = 0;
};

// Checks that a plan runs every op exactly once and respects the dependencies without
// deadlock; throws InternalError otherwise (a schedule bug).
void check_plan(const PipelinePlan& plan, const PipelineShape& shape);

// Runs a plan with fixed op times (per chunk) and free communication; returns the makespan.
// `backward` ops take t_b + t_w. For tests and quick estimates; the step emulator runs the real
// costs on the engine.
double plan_makespan(const PipelinePlan& plan, const PipelineShape& shape, double t_f, double t_b, double t_w);

// The same with any op times (per op and stage: micro-batches of unequal work); `spans`, when
// given, receives every op's start and end.
using OpDuration = std::function<double(const PipeOp&, int stage)>;
struct OpSpan {
  int stage;
  PipeOp op;
  double start, end;
};
double plan_makespan(const PipelinePlan& plan, const PipelineShape& shape, const OpDuration& duration, std::vector<OpSpan>* spans = nullptr);
// The same where an op's time may depend on when it starts (an op gated by transfers issued at
// the step's start, as ZeRO-1's parameter gathers gate each chunk's first forward).
using TimedOpDuration = std::function<double(const PipeOp&, int stage, double start)>;
double plan_makespan(const PipelinePlan& plan, const PipelineShape& shape, const TimedOpDuration& duration, std::vector<OpSpan>* spans = nullptr);

// The peak number of micro-batches whose forward activations a stage holds at once (forward
// done, backward not yet), over all stages, counted in chunks.
int peak_in_flight(const PipelinePlan& plan);
// The same for one stage.
int peak_in_flight(const std::vector<PipeOp>& stage_ops);

// The longest time a stage waits between its first op's start and its last op's end (the
// bubble of a schedule whose stages start one forward apart by construction, as ZB-H2's
// parallelogram: its ramp is no bubble once the next step's forwards start beside this step's
// last weight gradients).
double max_stage_idle(const std::vector<OpSpan>& spans, int stages);

}  // namespace orrery::models
