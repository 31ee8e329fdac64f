// Run reports: every metric of a run as JSON with a stable key order (sorted), written atomically.
//   Report r;
//   r.set("/makespan_ns", std::int64_t{21000000});
//   r.set("/streams/stage0~1compute/busy_ns", ...);   // RFC 6901 pointers
//   r.write("out.json");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace orrery::reports {

class Report {
 public:
  Report();
  ~Report();
  Report(Report&&) noexcept;
  Report& operator=(Report&&) noexcept;

  // Sets the value at a JSON pointer, creating the objects on the way.
  void set(std::string_view pointer, std::int64_t value);
  void set(std::string_view pointer, double value);
  void set(std::string_view pointer, bool value);
  void set(std::string_view pointer, std::string_view value);
  void set(std::string_view pointer, const char* value) { set(pointer, std::string_view(value)); }

  // Two-space indented JSON, keys sorted, trailing newline: byte-identical for equal reports.
  std::string to_json() const;
  void write(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orrery::reports
