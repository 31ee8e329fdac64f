// Multimodal batch traces: JSONL, one global batch per line:
//   {"samples": [{"text": 512, "images": [[448, 448]], "videos": [[16, 448, 448]], "audio": [12.5]}, ...]}
// `text` (tokens) is required; `images` ([height, width] each), `videos` ([frames, height,
// width] each) and `audio` (seconds per clip) are optional lists. Errors name the file, the
// line and the JSON pointer inside it.
#pragma once

#include "models/multimodal/multimodal.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

struct MultimodalBatch {
  std::vector<models::MultimodalSample> samples;
  int line = 0;
};

std::vector<MultimodalBatch> read_multimodal_jsonl(std::string_view text, const std::string& source);
std::vector<MultimodalBatch> load_multimodal_batches(const std::string& path);
std::string multimodal_to_jsonl(const std::vector<std::vector<models::MultimodalSample>>& batches);

}  // namespace orrery::traces
