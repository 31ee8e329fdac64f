// What the validation suites share: a table row's place for messages, the interleaving rule for
// published pipeline plans, the multimodal suites' plan shape.
#pragma once

#include "traces/csv.hpp"

#include <cstddef>
#include <string>

namespace orrery::validation {

inline constexpr double kGiB = 1073741824.0;

// "file.csv:12": the file name (no folder) and the row's line, for messages and reports.
std::string where(const traces::CsvTable& t, std::size_t row);

// One rule for every row (no per-row tuning): pipelines of more than one stage use Megatron's
// interleaved schedule with the most chunks, up to 8, that divide each stage's layers.
int virtual_stages(int layers, int pp);

// A multimodal plan: tensor, pipeline and data parallelism and the micro-batch.
struct Shape {
  int tp, pp, dp, micro_batch;
};

}  // namespace orrery::validation
