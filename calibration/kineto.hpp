// PyTorch profiler (Kineto) traces: the Chrome trace-event JSON that torch.profiler's
// export_chrome_trace writes for a real training step, read into
//  (a) a calibration profile: each GPU kernel matched to an Orrery kernel kind by its name and
//      the shape of the operator that launched it (its "Input Dims" and "Input type", joined on
//      "External id"), with its measured duration; `orrery calibrate fit` turns it into curves;
//  (b) a replayable graph of the step, as Lumos rebuilds one (Liang et al., MLSys 2025): each
//      stream's kernels in order, none before the host launched it, and a kernel that started
//      later than both waits on the kernel of another stream that ended last before it (the
//      cross-stream event the trace does not name). NCCL kernels keep their recorded time, or
//      are re-costed on a fabric as collectives of their recorded size and group.
//   KinetoTrace t = read_kineto_trace("step.json");
//   Profile p = kineto_profile(t);                 // kernels by kind and shape
//   KinetoReplay r = replay_kineto(t, {});         // r.span against t.span()
#pragma once

#include "calibration/profile.hpp"
#include "models/network/collectives.hpp"
#include "models/training/step.hpp"
#include "sim/executor.hpp"
#include "sim/task_graph.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace orrery::calibration {

// A GPU kernel (or memcpy / memset) of the trace.
struct KinetoKernel {
  std::string name;
  std::string category;  // "kernel", "gpu_memcpy", "gpu_memset"
  int device = 0;
  std::int64_t stream = 0;
  double ts_us = 0, dur_us = 0;
  std::optional<double> launch_us;  // the end of the host's launch call (its cuda_runtime event)
  std::string where;                // "/traceEvents/123" (for messages)
  // The operator that launched it (joined on External id), when the trace has it.
  std::string op;
  std::vector<std::vector<std::int64_t>> input_dims;
  std::vector<std::string> input_types;
  std::vector<std::string> concrete_inputs;
  // NCCL kernels: the collective, its bytes and group, from the kernel's or its operator's args.
  std::optional<models::CollectiveOp> collective;
  double comm_bytes = 0;
  int group_size = 0;
  double bytes = 0;  // memcpy / memset
};

struct KinetoTrace {
  std::string source;
  std::string device;  // deviceProperties[0].name
  calibration::Fields identity, software;
  std::string date;
  std::vector<KinetoKernel> kernels;  // sorted by (device, stream, ts)
  double span_us() const;             // first kernel start to last kernel end
};

// Malformed JSON, an event without the fields its category needs, and a trace with no GPU
// kernels are InputErrors naming the file and the event.
KinetoTrace read_kineto_trace(const std::string& path);
KinetoTrace parse_kineto_trace(std::string_view text, const std::string& source);

// How each kernel was matched: the profile, and per reason the kernels not in it (name: count).
struct KinetoProfile {
  Profile profile;
  std::map<std::string, int> matched;                 // kind -> kernels
  std::map<std::string, std::map<std::string, int>> skipped;  // reason -> kernel name -> count
  double matched_us = 0, total_us = 0;
};
// Identical kernels (kind, dtype and shape) become one point: their median, p10 and p90.
KinetoProfile kineto_profile(const KinetoTrace& trace);
// The Orrery kernel a trace kernel is, or why not ("" and the reason).
std::optional<models::Kernel> kineto_kernel(const KinetoKernel& k, std::string& why_not);

struct KinetoReplayOptions {
  std::string topology;  // re-cost NCCL kernels on this fabric ("" : their recorded times)
  int ranks = 0;         // the collectives' group size there (0: as recorded)
  models::CommModel comm = models::CommModel::nccl;
};
struct KinetoReplay {
  sim::Duration span;
  std::size_t kernels = 0, collectives = 0, waits = 0;
  sim::TaskGraph graph;
  std::vector<sim::Span> spans;
};
KinetoReplay replay_kineto(const KinetoTrace& trace, const KinetoReplayOptions& options);

}  // namespace orrery::calibration
