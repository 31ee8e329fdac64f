#include "traces/multimodal_batches.hpp"

#include "sim/error.hpp"
#include "traces/json_input.hpp"

#include <fmt/format.h>

namespace orrery::traces {

namespace {

// [a, b] or [a, b, c] of positive integers.
std::vector<int> tuple(const JsonNode& n, std::size_t size, std::string_view expected) {
  const std::vector<JsonNode> items = n.as_array();
  if (items.size() != size) n.fail_expected(std::string(expected));
  std::vector<int> out;
  for (const JsonNode& i : items) out.push_back(i.as_int_in(1, 1'000'000));
  return out;
}

}  // namespace

std::vector<MultimodalBatch> read_multimodal_jsonl(std::string_view text, const std::string& source) {
  std::vector<MultimodalBatch> out;
  for_each_jsonl_row(text, [&](std::string_view row, int line) {
    const auto doc = parse_jsonl_row(row, source, line);
    JsonObject top = doc->root().as_object();
    MultimodalBatch b;
    b.line = line;
    for (const JsonNode& s : top.required("samples").as_array()) {
      JsonObject o = s.as_object();
      models::MultimodalSample x;
      const JsonNode t = o.required("text");
      x.text_tokens = t.as_int();
      if (x.text_tokens < 0 || x.text_tokens > 10'000'000) t.fail_expected("a token count of 0 or more");
      if (auto v = o.optional("images")) {
        for (const JsonNode& i : v->as_array()) {
          const std::vector<int> hw = tuple(i, 2, "[height, width] in pixels");
          x.images.push_back({hw[0], hw[1]});
        }
      }
      if (auto v = o.optional("videos")) {
        for (const JsonNode& i : v->as_array()) {
          const std::vector<int> fhw = tuple(i, 3, "[frames, height, width]");
          x.videos.push_back({fhw[0], fhw[1], fhw[2]});
        }
      }
      if (auto v = o.optional("audio")) {
        for (const JsonNode& i : v->as_array()) {
          const double sec = i.as_number();
          if (!(sec > 0 && sec <= 36000)) i.fail_expected("a clip length in seconds (0 to 36000]");
          x.audio_seconds.push_back(sec);
        }
      }
      o.finish();
      b.samples.push_back(std::move(x));
    }
    top.finish();
    if (b.samples.empty()) throw sim::InputError(source, fmt::format("line {}", line), "found a batch with no samples");
    out.push_back(std::move(b));
  });
  if (out.empty()) throw sim::InputError(source, "", "found no batches, expected one {\"samples\": [...]} object per line");
  return out;
}

std::vector<MultimodalBatch> load_multimodal_batches(const std::string& path) {
  if (!path.ends_with(".jsonl")) throw sim::InputError(path, "", "expected a .jsonl multimodal batch trace (one batch per line)");
  return read_multimodal_jsonl(read_text_file(path), path);
}

std::string multimodal_to_jsonl(const std::vector<std::vector<models::MultimodalSample>>& batches) {
  std::string out;
  for (const auto& batch : batches) {
    out += "{\"samples\": [";
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const models::MultimodalSample& x = batch[i];
      out += fmt::format("{}{{\"text\": {}", i > 0 ? ", " : "", x.text_tokens);
      if (!x.images.empty()) {
        out += ", \"images\": [";
        for (std::size_t k = 0; k < x.images.size(); ++k) out += fmt::format("{}[{}, {}]", k > 0 ? ", " : "", x.images[k].height, x.images[k].width);
        out += "]";
      }
      if (!x.videos.empty()) {
        out += ", \"videos\": [";
        for (std::size_t k = 0; k < x.videos.size(); ++k) {
          out += fmt::format("{}[{}, {}, {}]", k > 0 ? ", " : "", x.videos[k].frames, x.videos[k].height, x.videos[k].width);
        }
        out += "]";
      }
      if (!x.audio_seconds.empty()) {
        out += ", \"audio\": [";
        for (std::size_t k = 0; k < x.audio_seconds.size(); ++k) out += fmt::format("{}{}", k > 0 ? ", " : "", x.audio_seconds[k]);
        out += "]";
      }
      out += "}";
    }
    out += "]}\n";
  }
  return out;
}

}  // namespace orrery::traces
