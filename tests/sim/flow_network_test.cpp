#include "sim/flow_network.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>

using namespace orrery::sim;
using namespace orrery::sim::literals;

namespace {

struct Completions : FlowObserver {
  std::map<std::uint64_t, Time> at;  // tag -> completion time
  void on_flow_complete(FlowId, std::uint64_t tag, Time now) override { at[tag] = now; }
};

// Integrates every flow's rate over time; at completion the bytes must be the flow's size, and
// at every rate change no link may be over capacity.
struct Ledger : FlowObserver {
  FlowNetwork* net = nullptr;
  std::map<std::uint32_t, double> sent, rate;
  Time last = Time::zero();
  void integrate(Time now) {
    const double dt = static_cast<double>((now - last).ns()) * 1e-9;
    for (auto& [f, r] : rate) sent[f] += r * dt;
    last = now;
  }
  void started(FlowId f) {
    rate[index_of(f)] = 0;
    sent[index_of(f)] = 0;
  }
  void check_done(FlowId flow, double want, Time now) {
    integrate(now);
    const std::uint32_t f = index_of(flow);
    // Completion is rounded up to the next nanosecond: at most one ns of extra sending.
    CHECK(sent[f] >= want * (1 - 1e-9));
    CHECK(sent[f] <= want * (1 + 1e-9) + rate[f] * 1e-9 + 1e-6);
    sent.erase(f);
    rate.erase(f);
  }
  void check_loads_and_read_rates(Time now) {
    integrate(now);
    for (std::uint32_t l = 0; l < net->link_count(); ++l) {
      CHECK(net->link_load(LinkId(l)).value() <= net->capacity(LinkId(l)).value() * (1 + 1e-9));
    }
    for (auto& [f, r] : rate) r = net->active(FlowId(f)) ? net->rate(FlowId(f)).value() : 0.0;
  }
};

}  // namespace

TEST_CASE("a lone flow takes its latency plus size over capacity") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l = net.add_link(BytesPerSecond(1e9), 1_us);
  Completions done;
  net.set_observer(&done);
  net.start({&l, 1}, Bytes(1e6), 1);
  engine.run();
  // 1 us latency + 1e6 B / 1e9 B/s = 1 ms.
  CHECK(done.at.at(1) == Time::zero() + 1_us + 1_ms);
}

TEST_CASE("two equal flows on one link get half each") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l = net.add_link(BytesPerSecond(1e9), 0_ns);
  Completions done;
  net.set_observer(&done);
  const FlowId a = net.start({&l, 1}, Bytes(1e6), 1);
  const FlowId b = net.start({&l, 1}, Bytes(1e6), 2);
  engine.run_until(Time::zero());
  CHECK(net.rate(a).value() == 0.5e9);
  CHECK(net.rate(b).value() == 0.5e9);
  engine.run();
  CHECK(done.at.at(1) == Time::zero() + 2_ms);
  CHECK(done.at.at(2) == Time::zero() + 2_ms);
}

TEST_CASE("weights scale the share") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l = net.add_link(BytesPerSecond(8e9), 0_ns);
  const FlowId a = net.start({&l, 1}, Bytes(1e9), 1, 1.0);
  const FlowId b = net.start({&l, 1}, Bytes(1e9), 2, 3.0);
  engine.run_until(Time::zero());
  CHECK(net.rate(a).value() == 2e9);
  CHECK(net.rate(b).value() == 6e9);
}

// The textbook max-min example: L2 (4 B/s) is the bottleneck of f2 and f3, which get 2 each;
// f1 then takes what is left of L1 (10 B/s): 8.
TEST_CASE("max-min allocation across two links") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l1 = net.add_link(BytesPerSecond(10), 0_ns);
  const LinkId l2 = net.add_link(BytesPerSecond(4), 0_ns);
  const std::vector<LinkId> both{l1, l2};
  const FlowId f1 = net.start({&l1, 1}, Bytes(100), 1);
  const FlowId f2 = net.start(both, Bytes(100), 2);
  const FlowId f3 = net.start({&l2, 1}, Bytes(100), 3);
  engine.run_until(Time::zero());
  CHECK(net.rate(f1).value() == orrery::testing::Approx(8));
  CHECK(net.rate(f2).value() == orrery::testing::Approx(2));
  CHECK(net.rate(f3).value() == orrery::testing::Approx(2));
  CHECK(net.link_load(l1).value() == orrery::testing::Approx(10));
  CHECK(net.link_load(l2).value() == orrery::testing::Approx(4));
}

// A: 1e9 B from t=0 on a 1e9 B/s link; B: 0.25e9 B joins at 0.5 s. Both run at 0.5e9 B/s
// until B ends at 1.0 s; A then has 0.25e9 B left at full rate and ends at 1.25 s.
TEST_CASE("a flow's time integrates its bytes over piecewise rates") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l = net.add_link(BytesPerSecond(1e9), 0_ns);
  Completions done;
  net.set_observer(&done);
  net.start({&l, 1}, Bytes(1e9), 1);
  engine.schedule_at(Time::zero() + 500_ms, [&] { net.start({&l, 1}, Bytes(0.25e9), 2); });
  engine.run();
  CHECK(done.at.at(2) == Time::zero() + 1000_ms);
  CHECK(done.at.at(1) == Time::zero() + 1250_ms);
}

TEST_CASE("empty routes and empty flows take only their latency") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId l = net.add_link(BytesPerSecond(1e9), 2_us);
  Completions done;
  net.set_observer(&done);
  net.start({}, Bytes(1e9), 1, 1.0, 3_us);
  net.start({&l, 1}, Bytes(0), 2);
  engine.run();
  CHECK(done.at.at(1) == Time::zero() + 3_us);
  CHECK(done.at.at(2) == Time::zero() + 2_us);
  CHECK(net.active_flows() == 0);
}

TEST_CASE("flows that start together are solved once; flows elsewhere are not touched") {
  Engine engine;
  FlowNetwork net(engine);
  const LinkId a = net.add_link(BytesPerSecond(1e9), 0_ns);
  const LinkId b = net.add_link(BytesPerSecond(1e9), 0_ns);
  for (int i = 0; i < 100; ++i) net.start({&a, 1}, Bytes(1e6 * (i + 1)), static_cast<std::uint64_t>(i));
  const FlowId other = net.start({&b, 1}, Bytes(1e9), 1000);
  engine.run_until(Time::zero());
  CHECK(net.solves() == 1);
  const std::uint64_t work = net.solve_work();
  // A flow ending on link a re-solves link a's component only.
  engine.run_until(Time::zero() + 100_ms);
  CHECK(net.solves() > 1);
  CHECK(net.solve_work() - work < 100 * 100);  // never more than link a's flows per solve
  CHECK(net.rate(other).value() == 1e9);
}

// Random networks: at every rate change, (1) no link is over capacity; (2) every flow has a
// bottleneck link: saturated, and on it no flow gets a larger share per unit weight; (3) at
// completion, the bytes integrated over the flow's piecewise rates equal its size.
TEST_CASE("max-min properties hold on random networks") {
  struct Checker : Ledger {
    std::map<std::uint64_t, double> expected_size_by_tag;
    int checks = 0;
    int completions = 0;
    void on_flow_complete(FlowId flow, std::uint64_t tag, Time now) override {
      check_done(flow, expected_size_by_tag.at(tag), now);
      ++completions;
    }
    void on_rates_changed(Time now) override {
      check_loads_and_read_rates(now);
      for (const auto& [f, r] : rate) {
        if (r == 0) continue;  // still in its latency phase
        bool has_bottleneck = false;
        for (const LinkId l : net->route(FlowId(f))) {
          const double cap = net->capacity(l).value();
          if (net->link_load(l).value() < cap * (1 - 1e-9)) continue;
          bool largest = true;
          for (const std::uint32_t g : net->flows_on(l)) {
            largest = largest && net->rate(FlowId(g)).value() / net->weight(FlowId(g)) <=
                                     r / net->weight(FlowId(f)) * (1 + 1e-9);
          }
          has_bottleneck = has_bottleneck || largest;
        }
        CHECK(has_bottleneck);
      }
      ++checks;
    }
  };

  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    Engine engine;
    FlowNetwork net(engine);
    Checker checker;
    checker.net = &net;
    net.set_observer(&checker);
    const int links = 24;
    for (int l = 0; l < links; ++l) {
      net.add_link(BytesPerSecond(1e9 * static_cast<double>(1 + rng() % 8)), Duration::nanoseconds(static_cast<std::int64_t>(rng() % 500)));
    }
    struct Spec {
      std::vector<LinkId> route;
      double size;
      double weight;
    };
    std::vector<Spec> specs(300);
    for (std::uint64_t tag = 0; tag < specs.size(); ++tag) {
      const auto start = Time::from_ns(static_cast<std::int64_t>(rng() % 2'000'000));
      std::vector<LinkId>& route = specs[tag].route;
      const auto hops = 1 + rng() % 4;
      while (route.size() < hops) {
        const auto l = LinkId(static_cast<std::uint32_t>(rng() % links));
        if (std::find(route.begin(), route.end(), l) == route.end()) route.push_back(l);
      }
      specs[tag].size = 1e3 * static_cast<double>(1 + rng() % 1000);
      specs[tag].weight = rng() % 4 == 0 ? 2.5 : 1.0;
      checker.expected_size_by_tag[tag] = specs[tag].size;
      engine.schedule_at(start, [&net, &checker, &specs, tag] {
        const Spec& spec = specs[tag];
        checker.started(net.start(spec.route, Bytes(spec.size), tag, spec.weight));
      });
    }
    engine.run();
    CHECK(checker.completions == 300);
    CHECK(checker.checks > 50);
    CHECK(net.active_flows() == 0);
  }
}

// Departures re-solve only the flows at or above the lowest departing flow's level: the same
// completion times as re-solving every component in full (to rounding: a nanosecond).
TEST_CASE("partial re-solves after departures agree with full re-solves") {
  const auto run = [](bool full, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    Engine engine;
    FlowNetwork net(engine);
    net.set_full_solves_for_testing(full);
    Completions done;
    net.set_observer(&done);
    for (int l = 0; l < 16; ++l) net.add_link(BytesPerSecond(1e9 * static_cast<double>(1 + rng() % 4)), 0_ns);
    struct Spec {
      std::vector<LinkId> route;
      double size, weight;
    };
    auto specs = std::make_shared<std::vector<Spec>>(400);
    for (std::uint64_t tag = 0; tag < specs->size(); ++tag) {
      Spec& s = (*specs)[tag];
      const auto hops = 1 + rng() % 3;
      while (s.route.size() < hops) {
        const auto l = LinkId(static_cast<std::uint32_t>(rng() % 16));
        if (std::find(s.route.begin(), s.route.end(), l) == s.route.end()) s.route.push_back(l);
      }
      s.size = 1e4 * static_cast<double>(1 + rng() % 500);
      s.weight = rng() % 3 == 0 ? 2.0 : 1.0;
      // Half start together (so that later there are departure-only instants), half spread out.
      const auto at = Time::from_ns(tag % 2 == 0 ? 0 : static_cast<std::int64_t>(rng() % 3'000'000));
      engine.schedule_at(at, [&net, specs, tag] {
        const Spec& sp = (*specs)[tag];
        net.start(sp.route, Bytes(sp.size), tag, sp.weight);
      });
    }
    engine.run();
    return std::make_pair(done.at, net.solve_work());
  };
  for (const std::uint64_t seed : {11u, 12u, 13u}) {
    const auto [full, full_work] = run(true, seed);
    const auto [partial, partial_work] = run(false, seed);
    REQUIRE(full.size() == 400);
    REQUIRE(partial.size() == 400);
    for (const auto& [tag, at] : full) {
      CAPTURE(tag);
      CHECK(std::llabs((partial.at(tag) - at).ns()) <= 1);
    }
    CHECK(partial_work < full_work);
  }
}

// With a departure quantum, a departure's bandwidth is handed out at the next multiple of the
// quantum; an arrival re-solves at once and takes pending departures with it.
TEST_CASE("a departure quantum defers departures' re-solves to its grid") {
  Engine engine;
  FlowNetwork net(engine);
  net.set_departure_quantum(1_ms);
  const LinkId l = net.add_link(BytesPerSecond(1e9), 0_ns);
  Completions done;
  net.set_observer(&done);
  net.start({&l, 1}, Bytes(1e6), 1);
  const FlowId b = net.start({&l, 1}, Bytes(2e6), 2);
  engine.run_until(Time::zero() + 2_ms);
  // Flow 1 ended at 2 ms (0.5 GB/s each); flow 2 keeps 0.5 GB/s until 3 ms, then has the link.
  CHECK(done.at.at(1) == Time::zero() + 2_ms);
  CHECK(net.rate(b).value() == 0.5e9);
  engine.run_until(Time::zero() + 3_ms);
  CHECK(net.rate(b).value() == 1e9);
  engine.run();
  CHECK(done.at.at(2) == Time::zero() + 3_ms + 500_us);  // exact: 3 ms

  // An arrival inside the window re-solves at once, departures included.
  Engine engine2;
  FlowNetwork net2(engine2);
  net2.set_departure_quantum(1_ms);
  const LinkId m = net2.add_link(BytesPerSecond(1e9), 0_ns);
  const LinkId other = net2.add_link(BytesPerSecond(1e9), 0_ns);
  net2.start({&m, 1}, Bytes(1e6), 1);
  const FlowId c = net2.start({&m, 1}, Bytes(2e6), 2);
  engine2.run_until(Time::zero() + 2_ms + 100_us);
  CHECK(net2.rate(c).value() == 0.5e9);
  net2.start({&other, 1}, Bytes(1e6), 3);
  engine2.run_until(Time::zero() + 2_ms + 100_us);
  CHECK(net2.rate(c).value() == 1e9);
}

// Under a quantum the rates are no longer max-min between re-solves, but still feasible, and
// every flow's bytes still add up; completion times stay within a few quanta of exact.
TEST_CASE("a departure quantum keeps links within capacity and bytes conserved") {
  struct Checker : Ledger {
    std::map<std::uint64_t, Time> at;
    void on_flow_complete(FlowId flow, std::uint64_t tag, Time now) override {
      check_done(flow, 1e3 * static_cast<double>(1 + tag % 1000), now);
      at[tag] = now;
    }
    void on_rates_changed(Time now) override { check_loads_and_read_rates(now); }
  };
  const auto run = [](Duration quantum) {
    std::mt19937_64 rng(5);
    Engine engine;
    FlowNetwork net(engine);
    net.set_departure_quantum(quantum);
    Checker checker;
    checker.net = &net;
    net.set_observer(&checker);
    for (int l = 0; l < 12; ++l) net.add_link(BytesPerSecond(1e9 * static_cast<double>(1 + rng() % 4)), 0_ns);
    std::vector<std::vector<LinkId>> routes(200);
    for (std::uint64_t tag = 0; tag < routes.size(); ++tag) {
      const auto hops = 1 + rng() % 3;
      while (routes[tag].size() < hops) {
        const auto l = LinkId(static_cast<std::uint32_t>(rng() % 12));
        if (std::find(routes[tag].begin(), routes[tag].end(), l) == routes[tag].end()) routes[tag].push_back(l);
      }
      const auto start = Time::from_ns(tag % 2 == 0 ? 0 : static_cast<std::int64_t>(rng() % 1'000'000));
      engine.schedule_at(start, [&net, &checker, &routes, tag] {
        checker.started(net.start(routes[tag], Bytes(1e3 * static_cast<double>(1 + tag % 1000)), tag));
      });
    }
    engine.run();
    CHECK(net.active_flows() == 0);
    return std::make_pair(checker.at, net.solves());
  };
  const auto [exact, exact_solves] = run(Duration::zero());
  const auto [deferred, deferred_solves] = run(10_us);
  REQUIRE(exact.size() == 200);
  REQUIRE(deferred.size() == 200);
  CHECK(deferred_solves < exact_solves);
  std::int64_t worst = 0;
  for (const auto& [tag, t] : exact) {
    const std::int64_t d = (deferred.at(tag) - t).ns();
    worst = std::max(worst, d < 0 ? -d : d);
  }
  CHECK(worst > 0);
  CHECK(worst < 50'000);  // 5 quanta (it is 1.7 here), on flows that last up to a millisecond or so
}
