// Pipeline schedules: the order in which each pipeline stage runs the forward and backward
// passes of the micro-batches. models/ owns the decision point (this interface and the
// dependency rules); policies/pipeline.cpp registers the schedules (GPipe, 1F1B, interleaved
// 1F1B, ZB-H1).
//
// A model is cut into `stages` x `chunks` virtual stages; virtual stage vs = chunk * stages +
// stage runs on `stage` (Megatron's interleaving). Dependencies between ops:
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
  PipeOpKind kind = PipeOpKind::forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this stage (0 .. chunks-1)
  friend bool operator==(const PipeOp&, const PipeOp&) = default;
};

struct PipelineShape {
  int stages = 1;
  int micro_batches = 1;
  int chunks = 1;  // virtual stages per stage
};

using PipelinePlan = std::vector<std::vector<PipeOp>>;  // per stage, in order

class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  virtual std::string_view name() const = 0;
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

}  // namespace orrery::models
