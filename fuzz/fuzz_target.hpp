// What every fuzz target shares: the input as text, handed to a reader through a FileOverlay
// (so path-based readers read it without touching the disk), with InputError the only
// acceptable failure. Anything else escaping a reader (InternalError, std::out_of_range,
// nlohmann's exceptions, bad_alloc) is a finding: it aborts, and libFuzzer or the replay
// driver (fuzz/replay_main.cpp) reports the input.
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     return orrery::fuzz::run(data, size, [](std::string_view text) { traces::read_topology(text, "t.json"); });
//   }
#pragma once

#include "sim/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

namespace orrery::fuzz {

// Inputs above this are cut: every reader's cost is at least linear, and the interesting
// structure of our formats fits in a few kB.
inline constexpr std::size_t kMaxInput = 64 * 1024;

template <class F>
int run(const std::uint8_t* data, std::size_t size, F&& read) {
  const std::string_view text(reinterpret_cast<const char*>(data), size < kMaxInput ? size : kMaxInput);
  try {
    read(text);
  } catch (const sim::InputError& e) {
    // The user's fault, answered: it must be one line.
    const std::string_view what = e.what();
    if (what.find('\n') != std::string_view::npos || what.size() > 4096) {
      std::fprintf(stderr, "fuzz: an input error is not one short line (%zu bytes): %.300s\n", what.size(), e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not an input error: %s\n", e.what());
    std::abort();
  }
  return 0;
}

// The first byte picks one of `n` sub-formats; the rest is the input. Empty input: format 0.
inline std::size_t pick(std::string_view& text, std::size_t n) {
  if (text.empty()) return 0;
  const auto choice = static_cast<unsigned char>(text.front()) % n;
  text.remove_prefix(1);
  return choice;
}

}  // namespace orrery::fuzz
