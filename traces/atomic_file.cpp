#include "traces/atomic_file.hpp"

#include "sim/error.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace orrery::traces {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // Same directory as the target, so that rename() is atomic (one filesystem).
  temp_path_ = fmt::format("{}.tmp-{}", path_, ::getpid());
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw sim::InputError(path_, "", fmt::format("cannot write output file: {}", std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

void AtomicFile::write(std::string_view bytes) {
  ORRERY_CHECK(file_ != nullptr, "write to {} after commit", path_);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw sim::InputError(path_, "", fmt::format("cannot write output file: {}", std::strerror(errno)));
  }
}

void AtomicFile::commit() {
  ORRERY_CHECK(file_ != nullptr, "{} committed twice", path_);
  const bool flushed = std::fflush(file_) == 0;
  const int flush_errno = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed || std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int error = !flushed ? flush_errno : errno;
    std::remove(temp_path_.c_str());
    throw sim::InputError(path_, "", fmt::format("cannot write output file: {}", std::strerror(error)));
  }
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents);
  file.commit();
}

}  // namespace orrery::traces
