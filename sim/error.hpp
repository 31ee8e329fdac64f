// The two kinds of failure. `InputError` is the user's fault and names where it happened;
// `ORRERY_CHECK` guards our own invariants and throws `InternalError` when one breaks.
//   throw InputError("graph.json", "/nodes/3/duration", "found \"-2 ms\", expected a non-negative duration");
//   ORRERY_CHECK(at >= now_, "scheduled in the past: {} < {}", at, now_);
#pragma once

#include <fmt/format.h>

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::sim {

// A mistake in the user's input. `what()` is one line: "<source>:<where>: <message>", where
// <source> is a file name (or "<command line>") and <where> a JSON pointer or "line L, column C".
// Control characters in any part (a NUL, a newline in a file name) are escaped and the line is
// at most kMessageLimit characters, whatever the input.
class InputError : public std::runtime_error {
 public:
  InputError(std::string source, std::string where, std::string message);

  const std::string& source() const { return source_; }
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  std::string source_;
  std::string where_;
  std::string message_;
};

// A broken invariant of Orrery itself: a bug, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_check(std::string_view condition, std::string_view message,
                             std::source_location where);

// Edit distance counting adjacent transpositions as one edit, for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate to `word` if it is a plausible typo of it (distance at most a third
// of its length, at least 1); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// `"; did you mean \"x\"?"` when a close candidate exists, "" otherwise.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// ASCII case-insensitive equality ("H100" == "h100").
bool iequals(std::string_view a, std::string_view b);

// Quotes a user-supplied string for an error message, escaping quotes and control characters
// (a NUL, a newline). A text longer than kQuoteLimit bytes is cut there with a count:
// "\"abc...\" (and 9,999,900 more bytes)".
inline constexpr std::size_t kQuoteLimit = 200;
std::string quote(std::string_view text);

// 1234567 -> "1,234,567", for counts in messages.
std::string with_thousands(std::size_t n);

// The longest line an InputError prints; beyond it the message is cut with a count.
inline constexpr std::size_t kMessageLimit = 4000;

}  // namespace orrery::sim

// Checks an invariant of our own; on failure throws InternalError with the condition, the
// formatted message and the source location. Always on: a wrong answer is worse than a slow one.
#define ORRERY_CHECK(condition, ...)                                                     \
  do {                                                                                   \
    if (!(condition)) [[unlikely]] {                                                     \
      ::orrery::sim::fail_check(#condition, ::fmt::format(__VA_ARGS__),                  \
                                std::source_location::current());                        \
    }                                                                                    \
  } while (false)
