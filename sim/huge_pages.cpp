#include "sim/huge_pages.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__linux__) && defined(__GLIBC__)
#include <unistd.h>
#endif

namespace orrery::sim {

namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb=1";

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// Whether the kernel gives huge pages to memory that asks for them.
bool kernel_offers_huge_pages() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return false;
  return line.find("[madvise]") != std::string::npos || line.find("[always]") != std::string::npos;
}

}  // namespace

void use_huge_pages(char** argv) {
#if defined(__linux__) && defined(__GLIBC__)
  if (sanitized() || argv == nullptr || argv[0] == nullptr) return;
  if (const char* off = std::getenv("ORRERY_HUGE_PAGES"); off != nullptr && std::strcmp(off, "0") == 0) return;
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::string before = current == nullptr ? "" : current;
  if (before.find("glibc.malloc.hugetlb") != std::string::npos) return;  // set (by us, or by the user's choice)
  if (!kernel_offers_huge_pages()) return;
  const std::string with = before.empty() ? kTunable : before + ":" + kTunable;
  if (setenv("GLIBC_TUNABLES", with.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: the exec failed; go on as we were.
  if (current == nullptr) {
    unsetenv("GLIBC_TUNABLES");
  } else {
    setenv("GLIBC_TUNABLES", before.c_str(), 1);
  }
#else
  (void)argv;
#endif
}

}  // namespace orrery::sim
