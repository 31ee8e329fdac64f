// Strict reading of JSON input: every value knows its file and JSON pointer, so a wrong type,
// a missing field or an unknown key (with "did you mean") becomes a precise InputError.
//   JsonDocument doc = load_json_file("graph.json");
//   JsonObject top = doc.root().as_object();
//   for (const JsonNode& n : top.required("nodes").as_array()) { ... }
//   top.finish();   // rejects keys nobody asked for
// Include only from .cpp files at the input boundary: it brings in nlohmann/json.
#pragma once

#include "sim/unit_parse.hpp"
#include "sim/units.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::traces {

class JsonObject;

// A value inside a document, with its place. Does not own the JSON; the document must outlive it.
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string_view source, std::string pointer)
      : value_(&value), source_(source), pointer_(std::move(pointer)) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& pointer() const { return pointer_; }
  std::string_view source() const { return source_; }
  sim::InputLocation location() const { return {source_, pointer_}; }

  // Throws InputError "<source>:<pointer>: <message>".
  [[noreturn]] void fail(std::string_view message) const;
  // Throws "found <what this is>, expected <expected>".
  [[noreturn]] void fail_expected(std::string_view expected) const;
  // "a number 5", "a string \"abc\"", "an object", "an array of 3 values", "null".
  std::string describe() const;

  bool is_null() const { return value_->is_null(); }
  std::string as_string() const;
  std::int64_t as_int() const;      // an integral number
  int as_int_in(int lo, int hi) const;  // "expected a whole number from lo to hi"
  double as_number() const;
  bool as_bool() const;
  std::vector<JsonNode> as_array() const;
  JsonObject as_object() const;
  // Strings with units, parsed at this boundary.
  sim::Duration as_duration() const;
  sim::Bytes as_bytes() const;
  sim::BytesPerSecond as_bandwidth() const;
  sim::Flops as_flops() const;
  sim::FlopsPerSecond as_flop_rate() const;

 private:
  const nlohmann::json* value_;
  std::string_view source_;
  std::string pointer_;
};

// An object whose keys are consumed one by one; finish() rejects the keys nobody asked for.
class JsonObject {
 public:
  explicit JsonObject(JsonNode node) : node_(std::move(node)) {}
  const JsonNode& node() const { return node_; }

  JsonNode required(std::string_view key);
  std::optional<JsonNode> optional(std::string_view key);
  // Rejects any key not asked for through required()/optional(), suggesting the nearest.
  void finish() const;

 private:
  JsonNode child(std::string_view key) const;
  JsonNode node_;
  std::vector<std::string> known_;
};

class JsonDocument {
 public:
  JsonDocument(std::string source, nlohmann::json root) : source_(std::move(source)), root_(std::move(root)) {}
  JsonDocument(const JsonDocument&) = delete;  // nodes point into it
  JsonDocument& operator=(const JsonDocument&) = delete;
  JsonNode root() const { return JsonNode(root_, source_, ""); }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  nlohmann::json root_;
};

// Parses `text`; a syntax error names "line L, column C" and what was found and expected;
// a key repeated in one object names its JSON pointer; a number beyond what a double holds and
// nesting deeper than 256 levels are errors at their place.
std::unique_ptr<JsonDocument> parse_json(std::string_view text, std::string source);
// One row of a JSONL file, at `line`: the document is named "<file>:line <line>" (so errors at a
// JSON pointer read "f.jsonl:line 3:/samples/0"), a syntax error "<file>:line <line>, column C".
std::unique_ptr<JsonDocument> parse_jsonl_row(std::string_view row, const std::string& file, int line);
// Reads and parses a file; an unreadable file is an InputError naming it.
std::unique_ptr<JsonDocument> load_json_file(const std::string& path);
// Reads a whole file; an unreadable file is an InputError naming it. A path with an overlay on
// the calling thread (below) reads the overlay's text instead.
std::string read_text_file(const std::string& path);

// While alive, read_text_file(path) on this thread returns `text`: a sweep hands each point's
// patched scenario to the unchanged commands under a name beside its base file, so the
// scenario's relative paths still resolve against the base's folder and errors name the point.
// Overlays nest; each thread has its own.
class FileOverlay {
 public:
  FileOverlay(std::string path, std::string text);
  ~FileOverlay();
  FileOverlay(const FileOverlay&) = delete;
  FileOverlay& operator=(const FileOverlay&) = delete;

 private:
  std::string path_;
  std::string text_;
  const FileOverlay* outer_;
  friend std::string read_text_file(const std::string& path);
};
// Calls `row(text, line)` for each line of a JSONL text that is not blank (lines count from 1).
void for_each_jsonl_row(std::string_view text, const std::function<void(std::string_view row, int line)>& row);

// "a/b" -> "a~1b": a key as one JSON-pointer token (RFC 6901).
std::string pointer_token(std::string_view key);

}  // namespace orrery::traces
