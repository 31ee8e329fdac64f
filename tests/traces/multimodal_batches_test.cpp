#include "sim/error.hpp"
#include "traces/multimodal_batches.hpp"

#include <doctest/doctest.h>

using namespace orrery;

TEST_CASE("multimodal batch JSONL: read, write back, errors with line and pointer") {
  const std::string text =
      "{\"samples\": [{\"text\": 512, \"images\": [[448, 448], [896, 672]]}, {\"text\": 30}]}\n"
      "\n"
      "{\"samples\": [{\"text\": 64, \"videos\": [[16, 448, 448]], \"audio\": [12.5]}]}\n";
  const auto batches = traces::read_multimodal_jsonl(text, "b.jsonl");
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].samples.size() == 2);
  CHECK(batches[0].samples[0].images[1].height == 896);
  CHECK(batches[0].samples[0].images[1].width == 672);
  CHECK(batches[1].line == 3);
  CHECK(batches[1].samples[0].videos[0].frames == 16);
  CHECK(batches[1].samples[0].audio_seconds[0] == 12.5);
  std::vector<std::vector<models::MultimodalSample>> raw;
  for (const auto& b : batches) raw.push_back(b.samples);
  const auto again = traces::read_multimodal_jsonl(traces::multimodal_to_jsonl(raw), "again.jsonl");
  CHECK(traces::multimodal_to_jsonl({again[0].samples, again[1].samples}) == traces::multimodal_to_jsonl(raw));

  const auto error = [](const std::string& bad) {
    try {
      traces::read_multimodal_jsonl(bad, "b.jsonl");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("{\"samples\": [{\"text\": 5}]}\n{\"samples\": [{\"text\": 5, \"videos\": [[16, 448]]}]}\n")
            .find("b.jsonl:line 2:/samples/0/videos/0: found an array of 2 values, expected [frames, height, width]") != std::string::npos);
  CHECK(error("{\"samples\": [{\"text\": 5, \"image\": []}]}").find("did you mean \"images\"") != std::string::npos);
  CHECK(error("{\"samples\": [{\"images\": [[1, 1]]}]}").find("b.jsonl:line 1:/samples/0") != std::string::npos);
  CHECK(error("{\"samples\": []}").find("b.jsonl:line 1: found a batch with no samples") != std::string::npos);
  CHECK(error("{\"samples\": [{\"text\": 5}]").find("b.jsonl:line 1") != std::string::npos);
}
