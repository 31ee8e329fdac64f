#include "sim/error.hpp"

#include <algorithm>
#include <numeric>

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
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
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

}  // namespace orrery::sim
