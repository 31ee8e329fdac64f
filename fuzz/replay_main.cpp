// The fuzz targets without libFuzzer (any compiler, in `make test`): runs each file of the given
// corpus folders, then `--mutations N` deterministic mutants of them (bytes flipped, inserted,
// deleted, duplicated, spliced from another input, numbers replaced by extreme ones), seeded, so a
// smoke run is the same on every machine. A finding aborts with the input's origin on stderr.
//   fuzz_topology_replay fuzz/corpus/topology --mutations 2000 --seed 1
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cctype>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// splitmix64: tiny and identical on every platform.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

// Values that break naive readers: extremes of every numeric type, non-numbers, separators.
const std::vector<std::string> kTokens = {
    "-1", "0", "1e400", "-1e400", "1e308", "1e-300", "nan", "inf", "-inf", "1e17", "1e18", "2.5", "0x42",
    "9223372036854775807", "18446744073709551616", "-9223372036854775809", "1099511627776", "\"\"", "null",
    "[]", "{}", ",", ";", "=", ":", "\"", "\n", "\xef\xbb\xbf", "\x00", "1e30 B", "1e-9 b/s", "0 Gb/s", "1000000000"};

std::string mutate(std::string s, const std::vector<std::string>& corpus, Rng& rng) {
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = rng.below(s.size() + 1);
    switch (rng.below(7)) {
      case 0:
        if (!s.empty()) s[std::min(at, s.size() - 1)] = static_cast<char>(rng.next());
        break;
      case 1: s.insert(at, 1, static_cast<char>(rng.next())); break;
      case 2: s.erase(at, rng.below(16)); break;
      case 3: {  // duplicate a span
        const std::size_t len = rng.below(64);
        s.insert(at, s.substr(at, len));
        break;
      }
      case 4: {  // splice in a span of another input
        const std::string& other = corpus[rng.below(corpus.size())];
        const std::size_t from = rng.below(other.size() + 1);
        s.insert(at, other.substr(from, rng.below(128)));
        break;
      }
      case 5: {  // replace a run of digits (a number) by an extreme token
        const std::size_t digit = s.find_first_of("0123456789", at);
        if (digit == std::string::npos) break;
        std::size_t end = digit;
        while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.' || s[end] == 'e')) ++end;
        s.replace(digit, end - digit, kTokens[rng.below(kTokens.size())]);
        break;
      }
      default: s.insert(at, kTokens[rng.below(kTokens.size())]); break;
    }
  }
  return s;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Each input is written here before it runs, so that an abort leaves it on disk.
std::filesystem::path last_input;

void run_one(const std::string& input) {
  std::ofstream(last_input, std::ios::binary | std::ios::trunc) << input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> folders;
  long mutations = 0;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) {
      mutations = std::strtol(argv[++i], nullptr, 10);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      folders.emplace_back(a);
    }
  }
  std::vector<std::string> corpus;
  std::vector<std::string> names;
  for (const auto& folder : folders) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());  // directory order differs between machines
    for (const auto& f : files) {
      corpus.push_back(slurp(f));
      names.push_back(f.string());
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "fuzz replay: no inputs in the given folders\n");
    return 1;
  }
  last_input = std::filesystem::temp_directory_path() /
               ("orrery-" + std::filesystem::path(argv[0]).filename().string() + ".last-input");
  std::fprintf(stderr, "fuzz replay: each input is kept in %s while it runs\n", last_input.c_str());
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    std::fprintf(stderr, "corpus %s\n", names[i].c_str());
    run_one(corpus[i]);
  }
  Rng rng{seed};
  for (long m = 0; m < mutations; ++m) {
    const std::size_t base = rng.below(corpus.size());
    run_one(mutate(corpus[base], corpus, rng));
  }
  std::printf("fuzz replay: %zu corpus inputs and %ld mutants (seed %llu), no finding\n", corpus.size(), mutations,
              static_cast<unsigned long long>(seed));
  return 0;
}
