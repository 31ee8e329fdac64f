// The orrery command line, callable in-process (tests) or from main(). Returns the exit code:
// 0 success, 1 bad input (one line on `err` naming the file and place), 2 internal error.
//   int code = orrery::cli::run({"orrery", "replay", "g.json"}, std::cout, std::cerr);
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace orrery::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitInternal = 2;

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Runs `command`, turning what it throws into one line on `err` and an exit code:
// sim::InputError -> 1; sim::InternalError, std::bad_alloc, any other exception -> 2.
int run_guarded(const std::function<void()>& command, std::ostream& err);

}  // namespace orrery::cli
