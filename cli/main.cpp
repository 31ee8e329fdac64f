// orrery: the command-line entry point. All logic lives in cli/app.cpp.
#include "cli/app.hpp"

#include <iostream>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return orrery::cli::run(std::vector<std::string>(argv, argv + argc), std::cout, std::cerr);
}
