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

[[maybe_unused]] bool sanitized() {
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

// The kernel's transparent_hugepage/enabled line, or "" where there is none.
[[maybe_unused]] std::string thp_line() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string huge_page_tunables(const char* current, const char* opt_out, std::string_view thp_enabled) {
  if (opt_out != nullptr && std::strcmp(opt_out, "0") == 0) return "";
  const std::string before = current == nullptr ? "" : current;
  if (before.find("glibc.malloc.hugetlb") != std::string::npos) return "";  // set (by us, or by the user's choice)
  // Only where huge pages go to memory that asks for them ("madvise"): with "always" every
  // region gets them already, with "never" none does.
  if (thp_enabled.find("[madvise]") == std::string_view::npos) return "";
  return before.empty() ? kTunable : before + ":" + kTunable;
}

void use_huge_pages(char** argv) {
#if defined(__linux__) && defined(__GLIBC__)
  if (sanitized() || argv == nullptr || argv[0] == nullptr) return;
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::string with = huge_page_tunables(current, std::getenv("ORRERY_HUGE_PAGES"), thp_line());
  if (with.empty()) return;
  const std::string before = current == nullptr ? "" : current;
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
