#include "sim/error.hpp"

#include <algorithm>
#include <cctype>

namespace orrery::sim {

namespace {

// The largest prefix of `text` of at most `limit` bytes that does not split a UTF-8 character.
std::size_t cut_at(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return text.size();
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// One printable line: control characters escaped, at most `limit` bytes kept with a count.
std::string one_line(std::string_view text, std::size_t limit) {
  std::string out;
  const std::size_t keep = cut_at(text, limit);
  out.reserve(keep + 16);
  for (std::size_t i = 0; i < keep; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (keep < text.size()) out += fmt::format("... (and {} more bytes)", with_thousands(text.size() - keep));
  return out;
}

std::string compose(const std::string& source, const std::string& where, const std::string& message) {
  if (where.empty()) return fmt::format("{}: {}", source, message);
  return fmt::format("{}:{}: {}", source, where, message);
}

}  // namespace

InputError::InputError(std::string source, std::string where, std::string message)
    : std::runtime_error(compose(one_line(source, kMessageLimit / 4), one_line(where, kMessageLimit / 4), one_line(message, kMessageLimit / 2))),
      source_(one_line(source, kMessageLimit / 4)),
      where_(one_line(where, kMessageLimit / 4)),
      message_(one_line(message, kMessageLimit / 2)) {}

std::string with_thousands(std::size_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void fail_check(std::string_view condition, std::string_view message, std::source_location where) {
  throw InternalError(fmt::format("internal error: check `{}` failed at {}:{}: {}", condition,
                                  where.file_name(), where.line(), message));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insertions, deletions, substitutions and transpositions of
  // adjacent characters each cost 1 ("dpes" is one step from "deps").
  const std::size_t m = a.size();
  const std::size_t n = b.size();
  std::vector<std::size_t> d((m + 1) * (n + 1));
  const auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (n + 1) + j]; };
  for (std::size_t i = 0; i <= m; ++i) at(i, 0) = i;
  for (std::size_t j = 0; j <= n; ++j) at(0, j) = j;
  for (std::size_t i = 1; i <= m; ++i) {
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(m, n);
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    // The distance is at least the difference in length: a 10 MB key is no typo of "nodes",
    // and is not compared byte by byte.
    const std::size_t longer = std::max(word.size(), candidate.size()), shorter = std::min(word.size(), candidate.size());
    if (longer - shorter >= best_distance) continue;
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_match(word, candidates);
  return best.empty() ? std::string() : fmt::format("; did you mean \"{}\"?", best);
}

std::string quote(std::string_view text) {
  const std::size_t keep = cut_at(text, kQuoteLimit);
  std::string out = "\"";
  for (const char c : text.substr(0, keep)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  out += '"';
  if (keep < text.size()) {
    out.insert(out.size() - 1, "...");
    out += fmt::format(" (and {} more bytes)", with_thousands(text.size() - keep));
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace orrery::sim
