#include "traces/json_input.hpp"

#include "sim/error.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace orrery::traces {

using sim::InputError;
using sim::quote;

std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

void JsonNode::fail(std::string_view message) const {
  throw InputError(std::string(source_), pointer_.empty() ? "/" : pointer_, std::string(message));
}

void JsonNode::fail_expected(std::string_view expected) const {
  fail(fmt::format("found {}, expected {}", describe(), expected));
}

std::string JsonNode::describe() const {
  const nlohmann::json& v = *value_;
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return fmt::format("a boolean {}", v.get<bool>());
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      return fmt::format("a string {}", quote(s.size() > 60 ? s.substr(0, 57) + "..." : s));
    }
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return fmt::format("an array of {} values", v.size());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return fmt::format("a number {}", v.dump());
    default: return "an unsupported value";
  }
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail_expected("a string");
  return value_->get<std::string>();
}

int JsonNode::as_int_in(int lo, int hi) const {
  const std::int64_t v = as_int();
  if (v < lo || v > hi) fail_expected(fmt::format("a whole number from {} to {}", lo, hi));
  return static_cast<int>(v);
}

void for_each_jsonl_row(std::string_view text, const std::function<void(std::string_view row, int line)>& row) {
  int line = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view r = text.substr(begin, end - begin);
    begin = end + 1;
    ++line;
    if (r.find_first_not_of(" \t\r") != std::string_view::npos) row(r, line);
  }
}

std::int64_t JsonNode::as_int() const {
  if (value_->is_number_integer()) {
    if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      fail_expected("an integer that fits in 64 bits");
    }
    return value_->get<std::int64_t>();
  }
  fail_expected("an integer");
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail_expected("a number");
  return value_->get<double>();
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail_expected("true or false");
  return value_->get<bool>();
}

std::vector<JsonNode> JsonNode::as_array() const {
  if (!value_->is_array()) fail_expected("an array");
  std::vector<JsonNode> out;
  out.reserve(value_->size());
  std::size_t i = 0;
  for (const nlohmann::json& element : *value_) {
    out.emplace_back(element, source_, fmt::format("{}/{}", pointer_, i++));
  }
  return out;
}

JsonObject JsonNode::as_object() const {
  if (!value_->is_object()) fail_expected("an object");
  return JsonObject(*this);
}

namespace {
template <class T>
T parse_unit(const JsonNode& node, T (*parse)(std::string_view, sim::InputLocation), std::string_view expected) {
  if (!node.json().is_string()) node.fail_expected(expected);
  return parse(node.json().get_ref<const std::string&>(), node.location());
}
}  // namespace

sim::Duration JsonNode::as_duration() const {
  return parse_unit(*this, &sim::parse_duration, "a duration string such as \"1.5 us\"");
}
sim::Bytes JsonNode::as_bytes() const { return parse_unit(*this, &sim::parse_bytes, "a size string such as \"80 GiB\""); }
sim::BytesPerSecond JsonNode::as_bandwidth() const {
  return parse_unit(*this, &sim::parse_bandwidth, "a bandwidth string such as \"400 Gb/s\"");
}
sim::Flops JsonNode::as_flops() const { return parse_unit(*this, &sim::parse_flops, "a FLOP count such as \"3 PFLOP\""); }
sim::FlopsPerSecond JsonNode::as_flop_rate() const {
  return parse_unit(*this, &sim::parse_flop_rate, "a FLOP rate such as \"989 TFLOP/s\"");
}

JsonNode JsonObject::child(std::string_view key) const {
  return JsonNode(node_.json().find(key).value(), node_.source(),
                  fmt::format("{}/{}", node_.pointer(), pointer_token(key)));
}

JsonNode JsonObject::required(std::string_view key) {
  known_.emplace_back(key);
  if (!node_.json().contains(key)) {
    // A present key one typo away is the likely cause: say so.
    std::vector<std::string> present;
    for (const auto& item : node_.json().items()) present.push_back(item.key());
    const std::string typo = sim::closest_match(key, present);
    node_.fail(fmt::format("missing required field {}{}", quote(key),
                           typo.empty() ? "" : fmt::format(" (is {} a misspelling of it?)", quote(typo))));
  }
  return child(key);
}

std::optional<JsonNode> JsonObject::optional(std::string_view key) {
  known_.emplace_back(key);
  if (!node_.json().contains(key)) return std::nullopt;
  return child(key);
}

void JsonObject::finish() const {
  for (const auto& [key, value] : node_.json().items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string listed;
    for (const auto& k : known_) listed += (listed.empty() ? "" : ", ") + k;
    throw InputError(std::string(node_.source()), fmt::format("{}/{}", node_.pointer(), pointer_token(key)),
                     fmt::format("unknown key {}{}; valid keys here: {}", quote(key), sim::did_you_mean(key, known_),
                                 listed));
  }
}

namespace {

// Builds the document from nlohmann's SAX events, in time linear in its size. It names a key
// repeated in one object (nlohmann keeps the last silently; a typo'd copy of a field would
// then win unseen), bounds the nesting depth (no format of ours nests deeper than a dozen
// levels, and recursive readers must not exhaust the stack), and turns nlohmann's errors
// (syntax, and numbers beyond what a double holds) into a position for the caller. (nlohmann's
// own callback parser rescans the parent container after each object: quadratic in the objects
// of one array.)
class DomBuilder {
 public:
  using json = nlohmann::json;
  static constexpr std::size_t kMaxDepth = 256;

  explicit DomBuilder(const std::string& source) : source_(source) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(json(v)); }
  bool string(json::string_t& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t /*elements*/) { return open(json::object()); }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Frame& top = frames_.back();
    if (top.value->get_ref<const json::object_t&>().count(k) != 0) {
      top.key = std::move(k);
      throw InputError(source_, pointer(), fmt::format("key {} appears twice in one object", quote(top.key)));
    }
    top.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    error_position_ = position;
    error_token_ = token;
    error_id_ = e.id;
    error_what_ = e.what();
    return false;
  }

  json& root() { return root_; }
  std::size_t error_position() const { return error_position_; }
  const std::string& error_token() const { return error_token_; }
  int error_id() const { return error_id_; }
  const std::string& error_what() const { return error_what_; }

 private:
  struct Frame {
    json* value;
    std::string key;  // objects: the key of the value being read
  };

  // Places `v` where the parser stands: the root, the next array element, or the current key.
  json* place(json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = frames_.back();
    if (top.value->is_array()) {
      auto& array = top.value->get_ref<json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    auto& object = top.value->get_ref<json::object_t&>();
    return &object.emplace(top.key, std::move(v)).first->second;
  }
  bool put(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& container) {
    if (frames_.size() >= kMaxDepth) {
      throw InputError(source_, pointer(),
                       fmt::format("found arrays or objects nested more than {} deep, expected a shallower document", kMaxDepth));
    }
    json* at = place(std::move(container));
    frames_.push_back(Frame{at, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  // The JSON pointer of the value being read.
  std::string pointer() const {
    std::string out;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      // An outer array's last element is the container open inside it; the innermost array's
      // next element is the value being read.
      const std::size_t index = f.value->size() - (i + 1 < frames_.size() ? 1 : 0);
      out += "/" + (f.value->is_array() ? std::to_string(index) : pointer_token(f.key));
    }
    return out.empty() ? "/" : out;
  }

  const std::string& source_;
  json root_;
  std::vector<Frame> frames_;
  std::size_t error_position_ = 0;
  std::string error_token_;
  int error_id_ = 0;
  std::string error_what_;
};

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3, column 5:
// syntax error while parsing object - unexpected '}'; expected string literal": keep what
// follows the position, which says what was found and what was expected.
std::string syntax_problem(const std::string& what) {
  const auto column = what.find("column ");
  if (column != std::string::npos) {
    const auto colon = what.find(": ", column);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  const auto bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// nlohmann stops just past the token it could not use; step back to that token's first
// character, which is where a reader looks: a string literal back to its opening quote,
// a number or bare word back over its characters, punctuation is one character.
std::size_t token_start(std::string_view text, std::size_t stop) {
  if (stop == 0 || stop > text.size()) return std::min(stop, text.size());  // past the end: point there
  std::size_t i = stop - 1;
  // The lexer may have read trailing whitespace after a bad literal ("tru ").
  while (i > 0 && std::isspace(static_cast<unsigned char>(text[i]))) --i;
  if (text[i] == '"') {
    while (i > 0) {
      --i;
      if (text[i] != '"') continue;
      std::size_t backslashes = 0;
      while (i > backslashes && text[i - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return i;
    }
    return 0;
  }
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+'; };
  if (!word(text[i])) return i;
  while (i > 0 && word(text[i - 1])) --i;
  return i;
}

}  // namespace

namespace {

// Parses `text` into a document named `source`; a syntax error names `error_source` and the
// line (counting from `first_line`) and column.
std::unique_ptr<JsonDocument> parse_document(std::string_view text, std::string source, std::string error_source, int first_line) {
  DomBuilder builder(source);
  if (nlohmann::json::sax_parse(text.begin(), text.end(), &builder)) {
    return std::make_unique<JsonDocument>(std::move(source), std::move(builder.root()));
  }
  // The position counts the characters read, up to and including the offending token.
  const std::size_t stop = token_start(text, builder.error_position());
  std::size_t line = static_cast<std::size_t>(first_line);
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < stop; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  const std::string where = fmt::format("line {}, column {}", line, stop - line_start + 1);
  // 406: a number nlohmann read as infinite (1e400): the user's number, not our failure.
  if (builder.error_id() == 406) {
    throw InputError(std::move(error_source), where,
                     fmt::format("found the number {}, beyond what a double holds (magnitude below 1.8e308), expected a "
                                 "number in range",
                                 quote(builder.error_token().size() > 40 ? builder.error_token().substr(0, 37) + "..."
                                                                         : builder.error_token())));
  }
  throw InputError(std::move(error_source), where, fmt::format("malformed JSON: {}", syntax_problem(builder.error_what())));
}

}  // namespace

std::unique_ptr<JsonDocument> parse_json(std::string_view text, std::string source) {
  std::string error_source = source;
  return parse_document(text, std::move(source), std::move(error_source), 1);
}

std::unique_ptr<JsonDocument> parse_jsonl_row(std::string_view row, const std::string& file, int line) {
  return parse_document(row, fmt::format("{}:line {}", file, line), file, line);
}

namespace {
thread_local const FileOverlay* innermost_overlay = nullptr;
}  // namespace

FileOverlay::FileOverlay(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)), outer_(innermost_overlay) {
  innermost_overlay = this;
}

FileOverlay::~FileOverlay() { innermost_overlay = outer_; }

std::string read_text_file(const std::string& path) {
  for (const FileOverlay* o = innermost_overlay; o != nullptr; o = o->outer_) {
    if (o->path_ == path) return o->text_;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", fmt::format("cannot open file: {}", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read file");
  return std::move(buffer).str();
}

std::unique_ptr<JsonDocument> load_json_file(const std::string& path) {
  return parse_json(read_text_file(path), path);
}

}  // namespace orrery::traces
