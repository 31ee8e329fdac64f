// Where a command's JSON report goes: the file named by --report, or, when a sweep runs the
// command in-process, a string the sweep reads its metrics from. Either, both or neither.
#pragma once

#include "reports/report.hpp"

#include <string>

namespace orrery::runs {

inline bool report_wanted(const std::string& path, const std::string* json) { return !path.empty() || json != nullptr; }

inline void emit_report(const reports::Report& report, const std::string& path, std::string* json) {
  if (json != nullptr) *json = report.to_json();
  if (!path.empty()) report.write(path);
}

}  // namespace orrery::runs
