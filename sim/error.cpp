#include "sim/error.hpp"

#include <algorithm>
#include <cctype>

namespace orrery::sim {

namespace {
std::string compose(const std::string& source, const std::string& where, const std::string& message) {
  if (where.empty()) return fmt::format("{}: {}", source, message);
  return fmt::format("{}:{}: {}", source, where, message);
}
}  // namespace

InputError::InputError(std::string source, std::string where, std::string message)
    : std::runtime_error(compose(source, where, message)),
      source_(std::move(source)),
      where_(std::move(where)),
      message_(std::move(message)) {}

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
  std::string out = "\"";
  for (const char c : text) {
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
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace orrery::sim
