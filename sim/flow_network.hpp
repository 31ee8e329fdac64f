// Flow-level network: links are resources with a capacity; a flow crosses a route of links,
// waits out its latency, then shares bandwidth max-min fairly (weighted progressive filling)
// until its bytes are through. Arrivals and departures at one instant are batched into one
// re-solve of only the affected part (the links and flows connected to the change); flows
// whose rate changed get their completion event rescheduled. Knows nothing of GPUs.
//   FlowNetwork net(engine);
//   LinkId l = net.add_link(BytesPerSecond(50e9), 1_us);
//   net.set_observer(&me);                      // hears completions
//   FlowId f = net.start({&l, 1}, Bytes(1e9), /*tag=*/7);
#pragma once

#include "sim/engine.hpp"
#include "sim/units.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace orrery::sim {

enum class LinkId : std::uint32_t {};
enum class FlowId : std::uint32_t {};
constexpr std::uint32_t index_of(LinkId l) { return static_cast<std::uint32_t>(l); }
constexpr std::uint32_t index_of(FlowId f) { return static_cast<std::uint32_t>(f); }

class FlowObserver {
 public:
  virtual ~FlowObserver() = default;
  // The flow's last byte has arrived. Its id may be reused by flows started from here on.
  virtual void on_flow_complete(FlowId flow, std::uint64_t tag, Time now) = 0;
  // The total rate through a link changed (for utilisation counters). Off unless asked for.
  virtual void on_link_load(LinkId, Time, BytesPerSecond) {}
  // A re-solve changed the rate of at least one flow; rates are constant until the next call.
  virtual void on_rates_changed(Time) {}
};

class FlowNetwork {
 public:
  explicit FlowNetwork(Engine& engine) : engine_(engine) {}
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  LinkId add_link(BytesPerSecond capacity, Duration latency);
  std::size_t link_count() const { return capacity_.size(); }
  BytesPerSecond capacity(LinkId l) const { return BytesPerSecond(capacity_[index_of(l)]); }
  Duration latency(LinkId l) const { return Duration::nanoseconds(latency_ns_[index_of(l)]); }

  // `observer` hears completions (and link loads if `link_loads`); it must outlive the network.
  void set_observer(FlowObserver* observer, bool link_loads = false) {
    observer_ = observer;
    report_link_loads_ = link_loads;
  }

  // Starts a flow now over `route` (links in order; empty for a local copy, which takes only
  // its latency). Its latency is `extra_latency` plus its links' latencies; during it the
  // flow holds no bandwidth. A flow of weight w gets w times the share of a weight-1 flow.
  FlowId start(std::span<const LinkId> route, Bytes size, std::uint64_t tag, double weight = 1.0,
               Duration extra_latency = Duration::zero());

  bool active(FlowId f) const { return index_of(f) < state_.size() && state_[index_of(f)] != State::free; }
  // Current rate (zero during the latency phase).
  BytesPerSecond rate(FlowId f) const { return BytesPerSecond(rate_[index_of(f)]); }
  // Bytes still to send, as of now.
  Bytes remaining(FlowId f) const;
  std::span<const LinkId> route(FlowId f) const;
  double weight(FlowId f) const { return weight_[index_of(f)]; }
  // Sum of the rates of the flows crossing a link now.
  BytesPerSecond link_load(LinkId l) const;
  // Flows sharing a link now (past their latency).
  std::span<const std::uint32_t> flows_on(LinkId l) const { return on_link_[index_of(l)]; }

  std::size_t active_flows() const { return active_count_; }
  std::uint64_t flows_started() const { return started_; }
  // Re-solves run so far, and the flow-link incidences they visited (the work done).
  std::uint64_t solves() const { return solves_; }
  std::uint64_t solve_work() const { return solve_work_; }
  // Testing only: re-solve whole components even when only flows left (the default re-solves
  // just the flows at or above the lowest departing flow's level; see solve()).
  void set_full_solves_for_testing(bool full) { always_full_ = full; }

 private:
  // latency: waiting out its latency; sharing: on its links; finishing: nothing to share
  // (empty route or no bytes), its completion is due now.
  enum class State : std::uint8_t { free, latency, sharing, finishing };

  void activate(std::uint32_t f);
  void complete(std::uint32_t f);
  void detach(std::uint32_t f);
  void mark_dirty(std::uint32_t link);
  void request_solve();
  void solve();
  void reschedule(std::uint32_t f, double new_rate);

  Engine& engine_;
  FlowObserver* observer_ = nullptr;
  bool report_link_loads_ = false;

  // Links, struct of arrays.
  std::vector<double> capacity_;              // bytes/s
  std::vector<std::int64_t> latency_ns_;
  std::vector<std::vector<std::uint32_t>> on_link_;  // sharing flows per link

  // Flows, struct of arrays; ids are reused through free_flows_.
  std::vector<State> state_;
  std::vector<double> remaining_;             // bytes, as of updated_ns_
  std::vector<double> rate_;                  // bytes/s
  std::vector<double> weight_;
  std::vector<std::int64_t> updated_ns_;
  std::vector<std::uint64_t> tag_;
  std::vector<EventId> event_;                // activation or completion
  std::vector<std::uint32_t> route_begin_;    // into route_pool_ and slot_pool_
  std::vector<std::uint32_t> route_size_;
  std::vector<std::uint32_t> route_capacity_;
  std::vector<LinkId> route_pool_;
  std::vector<std::uint32_t> slot_pool_;      // the flow's index in on_link_ of each route link
  std::vector<std::uint32_t> free_flows_;
  std::size_t active_count_ = 0;
  std::uint64_t started_ = 0;

  // Re-solve state: links touched since the last solve, and scratch space reused by solve().
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint8_t> link_dirty_;
  std::vector<std::uint64_t> link_mark_;      // == solve_epoch_ when visited in this solve
  std::vector<std::uint64_t> flow_mark_;      // 2*epoch: in the component; 2*epoch+1: frozen
  std::vector<double> level_;                 // residual / unfrozen weight, per link
  std::vector<std::uint32_t> unfrozen_;       // unfrozen flows per link, during a solve
  std::vector<double> new_rate_;              // per flow, during a solve
  std::vector<double> reported_load_;         // per link, for on_link_load
  struct Level {
    double level;
    std::uint32_t link;
  };
  std::vector<Level> heap_;
  std::vector<std::uint64_t> touched_mark_;   // == touched_epoch_: already in touched_
  std::vector<std::uint32_t> touched_;        // links whose level changed in this round
  std::uint64_t touched_epoch_ = 1;
  std::vector<double> residual_;              // capacity left, per link, during a solve
  std::vector<double> weight_left_;           // unfrozen weight, per link, during a solve
  std::vector<std::uint32_t> component_links_;
  std::vector<std::uint32_t> component_flows_;
  std::uint64_t solve_epoch_ = 0;
  bool solve_pending_ = false;
  bool arrivals_ = false;          // a flow joined since the last solve
  double departure_floor_ = 0;     // least level (rate/weight) of the flows that left since
  bool departures_ = false;
  bool always_full_ = false;
  std::uint64_t solves_ = 0;
  std::uint64_t solve_work_ = 0;
};

}  // namespace orrery::sim
