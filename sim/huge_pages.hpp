// Transparent huge pages for the heap. A frontier step (131,072 GPUs) builds and checks
// hundreds of megabytes of plans, routes and link arrays once; with 4 KiB pages a third of its
// time went to the kernel's page faults (and the TLB misses after them). glibc's malloc asks
// the kernel for huge pages when its tunable glibc.malloc.hugetlb=1 is set, and tunables are
// read only when a process starts, so an entry point calls this first: where the kernel gives
// huge pages to memory that asks for them (/sys/kernel/mm/transparent_hugepage/enabled is
// "madvise"; with "always" every region has them already) and the tunable is not set, it runs
// the same program again with it (execv of /proc/self/exe, the same arguments and environment
// plus the tunable).
//   int main(int argc, char** argv) { orrery::sim::use_huge_pages(argv); ... }
// Nothing changes in what a run computes. ORRERY_HUGE_PAGES=0 turns it off; sanitizer builds
// (their own allocator) and other C libraries skip it; a failed exec leaves the process as it was.
#pragma once

#include <string>
#include <string_view>

namespace orrery::sim {

void use_huge_pages(char** argv);

// The GLIBC_TUNABLES to run again with, or "" to run on as is: `current` the variable (null:
// unset), `opt_out` ORRERY_HUGE_PAGES (null: unset), `thp_enabled` the kernel's
// transparent_hugepage/enabled line ("always [madvise] never").
std::string huge_page_tunables(const char* current, const char* opt_out, std::string_view thp_enabled);

}  // namespace orrery::sim
