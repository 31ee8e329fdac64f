#include "models/network/symmetry.hpp"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace orrery::models {

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;

// splitmix64's finaliser: members of a set or multiset hash to this and their hashes add up.
std::uint64_t scramble(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::optional<SymmetricReduction> reduce_by_symmetry(const CollectivePlan& plan, std::span<const std::uint32_t> unit_of, int units,
                                                     const PlanLinks& links) {
  const std::size_t n = plan.transfers.size();
  if (units < 2 || n == 0 || unit_of.size() != n) return std::nullopt;
  const auto u_count = static_cast<std::size_t>(units);

  // (a) Local indices: every unit must hold as many transfers as unit 0.
  std::vector<std::uint32_t> count(u_count, 0), local(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (unit_of[i] >= u_count) return std::nullopt;
    local[i] = count[unit_of[i]]++;
  }
  const std::uint32_t per = count[0];
  if (per == 0 || std::any_of(count.begin(), count.end(), [&](std::uint32_t c) { return c != per; })) return std::nullopt;
  std::vector<std::uint32_t> member(n);  // unit u's transfer j at u * per + j
  for (std::size_t i = 0; i < n; ++i) member[static_cast<std::size_t>(unit_of[i]) * per + local[i]] = static_cast<std::uint32_t>(i);

  // ... and transfer j of every unit must be unit 0's transfer j: bytes, kind, local dependencies.
  std::vector<std::uint32_t> mine, theirs;
  const auto local_deps = [&](const Transfer& t, std::vector<std::uint32_t>& out) {
    out.clear();
    for (std::uint32_t k = 0; k < t.deps_count; ++k) out.push_back(local[plan.deps[t.deps_begin + k]]);
    std::sort(out.begin(), out.end());
  };
  for (std::size_t u = 1; u < u_count; ++u) {
    for (std::uint32_t j = 0; j < per; ++j) {
      const Transfer& a = plan.transfers[member[j]];
      const Transfer& b = plan.transfers[member[u * per + j]];
      if (a.bytes != b.bytes || a.nvls != b.nvls || a.horizon != b.horizon || a.collective != b.collective || a.ring_step != b.ring_step ||
          (a.src == a.dst) != (b.src == b.dst) ||
          a.deps_count != b.deps_count) {
        return std::nullopt;
      }
      local_deps(a, mine);
      local_deps(b, theirs);
      if (mine != theirs) return std::nullopt;
    }
  }

  // A necessary part of (c), checked first because it is cheap (no pass over the links): transfer
  // j of every unit crosses links of unit 0's kinds (a class holds one kind) with unit 0's latency.
  {
    const auto signature = [&](std::uint32_t i) {
      std::uint64_t kinds = 0;
      std::int64_t latency = 0;
      for (const std::uint32_t l : links.route(i)) {
        if (!links.kind.empty()) kinds |= std::uint64_t{1} << std::min<std::uint32_t>(links.kind[l], 63);
        latency += links.latency_ns[l];
      }
      return std::pair{kinds, latency};
    };
    std::vector<std::pair<std::uint64_t, std::int64_t>> first(per);
    for (std::uint32_t j = 0; j < per; ++j) first[j] = signature(member[j]);
    for (std::size_t u = 1; u < u_count; ++u) {
      for (std::uint32_t j = 0; j < per; ++j) {
        if (signature(member[u * per + j]) != first[j]) return std::nullopt;
      }
    }
  }

  // (b) Each link's multiset of local indices, as a hash and a size; its class.
  const std::size_t link_count = links.capacity.size();
  std::vector<std::uint64_t> multiset(link_count, 0);
  std::vector<std::uint32_t> size(link_count, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = scramble(local[i]);
    for (const std::uint32_t l : links.route(static_cast<std::uint32_t>(i))) {
      multiset[l] += h;
      ++size[l];
    }
  }
  struct Key {
    std::uint64_t capacity, multiset;
    std::int64_t latency;
    std::uint32_t size, kind;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return scramble(k.capacity ^ scramble(k.multiset ^ scramble(static_cast<std::uint64_t>(k.latency) + k.size + (std::uint64_t{k.kind} << 32))));
    }
  };
  std::unordered_map<Key, std::uint32_t, KeyHash> class_of_key;
  std::vector<std::uint32_t> class_of(link_count, kNone);
  std::vector<Key> classes;
  std::vector<std::uint32_t> first_link;  // by class
  for (std::size_t l = 0; l < link_count; ++l) {
    if (size[l] == 0) continue;
    const Key key{std::bit_cast<std::uint64_t>(links.capacity[l]), multiset[l], links.latency_ns[l], size[l], links.kind.empty() ? 0 : links.kind[l]};
    const auto [it, added] = class_of_key.emplace(key, static_cast<std::uint32_t>(classes.size()));
    if (added) {
      classes.push_back(key);
      first_link.push_back(static_cast<std::uint32_t>(l));
    }
    class_of[l] = it->second;
  }

  // (c) Transfer j of every unit crosses unit 0's classes with unit 0's latency.
  std::vector<std::uint32_t> crossed;
  const auto classes_of = [&](std::uint32_t i, std::int64_t& latency) -> const std::vector<std::uint32_t>& {
    crossed.clear();
    latency = 0;
    for (const std::uint32_t l : links.route(i)) {
      crossed.push_back(class_of[l]);
      latency += links.latency_ns[l];
    }
    std::sort(crossed.begin(), crossed.end());
    crossed.erase(std::unique(crossed.begin(), crossed.end()), crossed.end());
    return crossed;
  };
  const auto set_hash = [](const std::vector<std::uint32_t>& set) {
    std::uint64_t h = set.size();
    for (const std::uint32_t k : set) h += scramble(0x5bd1e995ull + k);
    return h;
  };
  SymmetricReduction r;
  std::vector<std::uint64_t> reference(per);
  r.route_begin.push_back(0);
  for (std::uint32_t j = 0; j < per; ++j) {
    std::int64_t latency = 0;
    const auto& set = classes_of(member[j], latency);
    reference[j] = set_hash(set);
    r.latency_ns.push_back(latency);
    r.routes.insert(r.routes.end(), set.begin(), set.end());
    r.route_begin.push_back(static_cast<std::uint32_t>(r.routes.size()));
  }
  for (std::size_t u = 1; u < u_count; ++u) {
    for (std::uint32_t j = 0; j < per; ++j) {
      std::int64_t latency = 0;
      const auto& set = classes_of(member[u * per + j], latency);
      if (latency != r.latency_ns[j] || set_hash(set) != reference[j]) return std::nullopt;
    }
  }

  // (b) again: each class unit 0 crosses holds each of its indices m times; its link in the
  // reduced problem has capacity / m. Unit 0's indices on the class are its support.
  std::vector<std::uint64_t> support(classes.size(), 0);
  std::vector<std::uint32_t> support_size(classes.size(), 0);
  for (std::uint32_t j = 0; j < per; ++j) {
    for (std::uint32_t k = r.route_begin[j]; k < r.route_begin[j + 1]; ++k) {
      support[r.routes[k]] += scramble(j);
      ++support_size[r.routes[k]];
    }
  }
  std::vector<std::uint32_t> dense(classes.size(), kNone);
  for (std::uint32_t& k : r.routes) {
    if (dense[k] == kNone) {
      const Key& c = classes[k];
      const std::uint32_t m = c.size / support_size[k];
      if (m * support_size[k] != c.size || c.multiset != m * support[k]) return std::nullopt;
      dense[k] = static_cast<std::uint32_t>(r.capacity.size());
      r.capacity.push_back(std::bit_cast<double>(c.capacity) / m);
      r.link.push_back(first_link[k]);
      r.share.push_back(m);
    }
    k = dense[k];
  }

  r.units = units;
  r.plan.ranks = plan.ranks;
  r.plan.channels = plan.channels;
  r.plan.transfers.reserve(per);
  for (std::uint32_t j = 0; j < per; ++j) {
    Transfer t = plan.transfers[member[j]];
    const auto begin = static_cast<std::uint32_t>(r.plan.deps.size());
    for (std::uint32_t k = 0; k < t.deps_count; ++k) r.plan.deps.push_back(local[plan.deps[t.deps_begin + k]]);
    t.deps_begin = begin;
    r.plan.transfers.push_back(t);
  }
  return r;
}

std::optional<SymmetricReduction> repeat_ring_steps(const SymmetricReduction& two, int steps, std::span<const char> ring) {
  const std::vector<Transfer>& from = two.plan.transfers;
  const std::size_t n = from.size();
  if (steps < 2 || n == 0) return std::nullopt;
  const auto is_ring = [&](std::uint32_t collective) { return ring.empty() || (collective < ring.size() && ring[collective] != 0); };
  // Unit 0's transfers come a channel at a time: a ring's run of step 0, then a run of step 1 as
  // long (repeated); another collective's transfers in one run (kept once).
  struct Run {
    std::uint32_t first, length, base;  // base: its first transfer's index in the longer plan
    bool repeats;
  };
  std::vector<Run> runs;
  std::vector<std::uint32_t> run_of(n), offset(n);  // by transfer: its run, its place in its step
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n;) {
    const std::uint32_t collective = from[i].collective;
    const auto same = [&](std::size_t x, std::uint32_t step) { return from[x].collective == collective && from[x].ring_step == step; };
    std::size_t j = i, h = i, length = 0;
    const bool repeats = is_ring(collective);
    if (repeats) {
      while (j < n && same(j, 0)) ++j;
      h = j;
      while (h < n && same(h, 1)) ++h;
      length = j - i;
      if (length == 0 || h - j != length) return std::nullopt;
    } else {
      while (h < n && from[h].collective == collective) ++h;
      length = h - i;
    }
    for (std::size_t x = i; x < h; ++x) {
      run_of[x] = static_cast<std::uint32_t>(runs.size());
      offset[x] = static_cast<std::uint32_t>((x - i) % length);
    }
    runs.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(length), static_cast<std::uint32_t>(total), repeats});
    total += static_cast<std::uint64_t>(length) * static_cast<std::uint64_t>(repeats ? steps : 1);
    if (total > kNone) return std::nullopt;
    i = h;
  }
  SymmetricReduction r;
  r.capacity = two.capacity;
  r.units = two.units;
  r.link = two.link;
  r.share = two.share;
  r.plan.ranks = two.plan.ranks;
  r.plan.channels = two.plan.channels;
  r.plan.transfers.reserve(static_cast<std::size_t>(total));
  r.latency_ns.reserve(static_cast<std::size_t>(total));
  r.route_begin.push_back(0);
  for (const Run& run : runs) {
    for (int s = 0; s < (run.repeats ? steps : 1); ++s) {
      for (std::uint32_t p = 0; p < run.length; ++p) {
        // A ring's step 0 is the two-step plan's step 0; every later step repeats its step 1.
        const std::uint32_t src = run.first + (s == 0 ? 0 : run.length) + p;
        Transfer t = from[src];
        if (run.repeats) {
          t.ring_step = static_cast<std::uint32_t>(s);
          if (s > 0 && s + 1 < steps) t.horizon = false;  // only the last step's ends release steps left out
        }
        t.deps_begin = static_cast<std::uint32_t>(r.plan.deps.size());
        for (std::uint32_t k = 0; k < t.deps_count; ++k) {
          const std::uint32_t d = two.plan.deps[from[src].deps_begin + k];
          if (d >= n) return std::nullopt;
          const Run& dr = runs[run_of[d]];
          if (dr.repeats != run.repeats) return std::nullopt;  // a ring and another collective never wait on each other
          // A ring's dependency on the step before or on its own step, as in the two-step plan.
          const std::uint32_t dep_step = from[d].ring_step;
          if (run.repeats && dep_step > from[src].ring_step) return std::nullopt;
          const std::uint32_t at_step = !run.repeats || s == 0 ? 0 : static_cast<std::uint32_t>(s) - 1 + dep_step;
          r.plan.deps.push_back(dr.base + at_step * dr.length + offset[d]);
        }
        r.plan.transfers.push_back(t);
        r.latency_ns.push_back(two.latency_ns[src]);
        r.routes.insert(r.routes.end(), two.routes.begin() + two.route_begin[src], two.routes.begin() + two.route_begin[src + 1]);
        r.route_begin.push_back(static_cast<std::uint32_t>(r.routes.size()));
      }
    }
  }
  return r;
}

}  // namespace orrery::models
