// orrery: the command-line entry point. All logic lives in cli/app.cpp.
#include "cli/app.hpp"
#include "sim/huge_pages.hpp"

#include <iostream>

int main(int argc, char** argv) {
  orrery::sim::use_huge_pages(argv);  // may run this program again, with huge pages
  std::ios::sync_with_stdio(false);
  return orrery::cli::run(std::vector<std::string>(argv, argv + argc), std::cout, std::cerr);
}
