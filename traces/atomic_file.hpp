// Output files written atomically: contents go to a temporary file beside the target, which
// is renamed over it only on commit(). A run that fails leaves no half-written file behind.
//   AtomicFile out("report.json");
//   out.write("{...}");
//   out.commit();   // without it, the destructor removes the temporary
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace orrery::traces {

class AtomicFile {
 public:
  // Opens the temporary; an impossible path is an InputError naming it.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  // Flushes, closes and renames onto the target path.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
};

void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace orrery::traces
