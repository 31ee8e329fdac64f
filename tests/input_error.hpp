// The message of the InputError a piece of code throws, for tests of bad input:
//   CHECK(error_of([&] { load("bad.json"); }) == "bad.json:/x: found 3, expected ...");
// Code that throws none fails the check and gives "no error".
#pragma once

#include "sim/error.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace orrery::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sim::InputError& e) {
    return e.what();
  }
  FAIL_CHECK("no InputError");
  return "no error";
}

}  // namespace orrery::testing
