// Flow-level network: links are resources with a capacity; a flow crosses a route of links,
// waits out its latency, then shares bandwidth max-min fairly (weighted progressive filling)
// until its bytes are through. Arrivals and departures at one instant are batched into one
// re-solve of only the affected part: after an arrival, everything connected to it; after
// departures only, the flows at or above the departing flows' level that connect to them.
// Flows are kept in groups by bottleneck link, each group with one level, one virtual clock
// and one completion event, so a re-solve that changes many flows' rates but few bottlenecks
// moves few events. Knows nothing of GPUs.
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

  // The largest capacity a link may have (1 PB/s, far beyond any real link): loads are kept in
  // 64-bit fixed point. Inputs are checked against it where they are read.
  static constexpr double kMaxCapacity = 1e15;
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
  BytesPerSecond rate(FlowId f) const { return BytesPerSecond(flows_[index_of(f)].rate); }
  // Bytes still to send, as of now.
  Bytes remaining(FlowId f) const;
  std::span<const LinkId> route(FlowId f) const;
  double weight(FlowId f) const { return flows_[index_of(f)].weight; }
  // Sum of the rates of the flows crossing a link now.
  BytesPerSecond link_load(LinkId l) const;
  // Flows sharing a link now (past their latency).
  std::span<const std::uint32_t> flows_on(LinkId l) const { return on_link_[index_of(l)]; }

  std::size_t active_flows() const { return active_count_; }
  std::uint64_t flows_started() const { return started_; }
  // Re-solves run so far, and the flow-link incidences they visited (the work done).
  std::uint64_t solves() const { return solves_; }
  std::uint64_t solve_work() const { return solve_work_; }
  // Departures re-solve at the next multiple of `quantum` instead of at once (arrivals still
  // re-solve at once, taking any pending departures with them). Between a departure and that
  // re-solve its bandwidth lies idle and the others keep their rates: an approximation that
  // trades up to a quantum of delay per departure for far fewer re-solves when thousands of
  // flows end at distinct instants (a large all-to-all under ECMP). Zero (the default): exact.
  void set_departure_quantum(Duration quantum) {
    ORRERY_CHECK(quantum >= Duration::zero(), "negative departure quantum");
    quantum_ns_ = quantum.ns();
  }
  // Testing only: re-solve whole components even when only flows left (the default re-solves
  // just the flows at or above the lowest departing flow's level; see solve()).
  void set_full_solves_for_testing(bool full) { always_full_ = full; }

 private:
  // latency: waiting out its latency; sharing: on its links; finishing: nothing to share
  // (empty route or no bytes), its completion is due now.
  enum class State : std::uint8_t { free, latency, sharing, finishing };
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // What a re-solve reads of a flow, in one cache line, route included: a re-solve visits
  // tens of thousands of flows in no useful order (a large all-to-all under per-flow ECMP), so
  // each costs one line from memory, fetched ahead by prefetch(), rather than one per array.
  // Routes longer than kInlineLinks (a rail-optimized fabric's longest has 6) live in
  // spill_links_.
  static constexpr std::uint32_t kInlineLinks = 6;
  struct alignas(64) FlowRecord {
    double weight = 0;
    double rate = 0;                   // bytes/s
    std::int64_t rate_fx = 0;          // rate in fixed point (kLoadScale per B/s)
    std::uint32_t group = kNone;       // its bottleneck link, or kNone
    std::uint32_t mark = 0;            // == flow_epoch_ when in the solve's component
    std::uint32_t local = 0;           // then: its local number
    std::uint32_t route_size = 0;
    LinkId links[kInlineLinks] = {};   // the route, when it fits
  };
  static_assert(sizeof(FlowRecord) == 64, "a flow's record is one cache line");
  // How far ahead the hot loops prefetch records: enough to cover a miss to memory at the
  // loops' pace (32 measured the same).
  static constexpr std::size_t kPrefetchAhead = 16;
  void prefetch(std::uint32_t f) const { __builtin_prefetch(&flows_[f]); }
  const LinkId* links_of(std::uint32_t f) const {
    return flows_[f].route_size <= kInlineLinks ? flows_[f].links : spill_links_.data() + spill_begin_[f];
  }
  std::uint32_t* slots_of(std::uint32_t f) {
    return flows_[f].route_size <= kInlineLinks ? inline_slots_.data() + std::size_t{f} * kInlineLinks
                                                : spill_slots_.data() + spill_begin_[f];
  }
  void next_epoch();

  void activate(std::uint32_t f);
  void complete(std::uint32_t f);
  void detach(std::uint32_t f);
  void mark_dirty(std::uint32_t link);
  void request_solve(bool departure = false);
  void solve();
  bool gather_component(double floor, std::size_t budget);
  void gather_above_floor(double floor);
  void start_component();
  void add_to_component(std::uint32_t f);
  std::uint32_t local_link(std::uint32_t link);
  std::uint32_t find(std::uint32_t link);
  void fill();
  void apply();
  // Groups: the sharing flows whose bottleneck is one link (see flow_network.cpp).
  void advance(std::uint32_t g);
  std::int64_t due_ns(std::uint32_t g, std::uint32_t f) const;
  void schedule_group(std::uint32_t g);
  void complete_due(std::uint32_t g);
  void group_insert(std::uint32_t g, std::uint32_t f);
  void group_erase(std::uint32_t f);
  void sift_up(std::uint32_t g, std::uint32_t pos);
  void sift_down(std::uint32_t g, std::uint32_t pos);
  void place(std::vector<std::uint32_t>& heap, std::uint32_t pos, std::uint32_t f) {
    heap[pos] = f;
    heap_pos_[f] = pos;
  }
  bool finishes_before(std::uint32_t a, std::uint32_t b) const {
    return finish_[a] < finish_[b] || (finish_[a] == finish_[b] && a < b);
  }
  void set_rate(std::uint32_t f, double rate);

  Engine& engine_;
  FlowObserver* observer_ = nullptr;
  bool report_link_loads_ = false;

  // Links, struct of arrays.
  std::vector<double> capacity_;              // bytes/s
  std::vector<std::int64_t> latency_ns_;
  std::vector<std::vector<std::uint32_t>> on_link_;  // sharing flows per link
  std::vector<std::int64_t> load_fx_;         // sum of the sharing flows' rate_fx

  // Flows: their records, the rest struct of arrays; ids are reused through free_flows_.
  std::vector<FlowRecord> flows_;
  std::vector<State> state_;
  std::vector<double> remaining_;             // bytes, until the flow starts sharing
  std::vector<std::uint64_t> tag_;
  std::vector<EventId> event_;                // activation, or a finishing flow's completion
  std::vector<std::uint32_t> inline_slots_;   // kInlineLinks per flow: its index in on_link_ of each route link
  std::vector<std::uint32_t> spill_begin_;    // a long route's start in spill_links_ and spill_slots_
  std::vector<std::uint32_t> spill_capacity_; // and the room it has there
  std::vector<LinkId> spill_links_;
  std::vector<std::uint32_t> spill_slots_;
  std::vector<std::uint32_t> free_flows_;
  std::size_t active_count_ = 0;
  std::uint64_t started_ = 0;

  // Groups, one per link (a group is the set of sharing flows that link bottlenecks): a
  // shared level (rate per unit weight), a virtual clock (bytes per unit weight served since
  // the group formed) and a heap of its flows by the clock reading at which each finishes.
  std::vector<double> finish_;                // per flow: its group's clock when it is done
  std::vector<std::uint32_t> heap_pos_;       // per flow: its index in its group's heap
  std::vector<std::vector<std::uint32_t>> members_;  // per link: a heap of flows
  std::vector<double> group_level_;
  std::vector<double> clock_;                 // per link, as of clock_ns_
  std::vector<std::int64_t> clock_ns_;
  std::vector<EventId> group_event_;          // the next completion among the members
  std::vector<std::uint32_t> active_groups_;  // links that have members
  std::vector<std::uint32_t> active_slot_;

  // Re-solve state: links touched since the last solve, and scratch space reused by solve().
  // A solve copies its component into dense arrays (flows and links numbered from zero in the
  // order found, each flow's route as local link numbers) so that the filling's passes read
  // memory in order rather than all over the network's per-flow arrays.
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint8_t> link_dirty_;
  std::vector<std::uint64_t> link_mark_;      // == solve_epoch_ when in the component
  std::vector<std::uint32_t> local_;          // then: its local number
  std::vector<std::uint32_t> parent_;         // union-find over links, valid when uf_mark_ is current
  std::vector<std::uint64_t> uf_mark_;
  std::vector<std::uint64_t> root_mark_;      // == solve_epoch_: a changed link's set
  std::vector<std::uint32_t> changed_links_;  // the links a solve started from
  std::uint32_t breadth_first_backoff_ = 0;   // solves to skip the breadth-first try after a failure
  std::uint32_t breadth_first_wait_ = 0;      // of which this many are left
  // Component flows, local numbering, with what the solve needs of their records copied in
  // as they are gathered (one visit to each record up to apply()).
  std::vector<std::uint32_t> cf_flow_;        // the flow's id
  std::vector<double> cf_weight_;
  std::vector<std::int64_t> cf_old_fx_;       // its rate_fx before the solve
  std::vector<double> cf_old_rate_;           // its rate before the solve
  std::vector<std::uint32_t> cf_old_group_;   // its group before the solve
  std::vector<std::uint32_t> cf_route_;       // start of its route in cr_link_
  std::vector<std::uint32_t> cr_link_;        // routes, as local link numbers
  std::vector<double> cf_rate_;               // the new rate
  std::vector<std::uint32_t> cf_group_;       // the new bottleneck, a local link number
  std::vector<std::uint8_t> cf_frozen_;
  // Component links, local numbering.
  std::vector<std::uint32_t> cl_link_;        // the link's id
  std::vector<double> cl_residual_;           // capacity left
  std::vector<double> cl_weight_;             // unfrozen weight
  std::vector<std::uint32_t> cl_unfrozen_;    // unfrozen flows
  std::vector<std::int64_t> cl_in_fx_;        // the component's rate_fx on it
  std::vector<double> cl_level_;              // the level it froze at
  std::vector<std::uint32_t> csr_begin_;      // per local link: its flows in csr_flows_
  std::vector<std::uint32_t> csr_flows_;      // local flow numbers
  std::vector<std::uint32_t> csr_cursor_;
  bool by_links_ = true;                      // the component was found breadth first
  // The filling's links by level, keyed lazily: a link's level only rises as flows freeze
  // (up to rounding), so a key is refreshed only when it reaches the top.
  struct Key {
    double level;
    std::uint32_t link;   // the link's id: ties break by it, deterministically
    std::uint32_t local;
  };
  std::vector<Key> heap_;
  std::vector<std::uint64_t> touched_mark_;   // per link, for apply()
  std::uint64_t touched_epoch_ = 1;
  std::vector<std::uint32_t> changed_groups_;
  std::vector<double> old_level_;             // per link, for changed_groups_
  std::vector<double> reported_load_;         // per link, for on_link_load
  std::uint64_t solve_epoch_ = 0;
  std::uint32_t flow_epoch_ = 0;   // advances with solve_epoch_, in 32 bits for the records' marks
  bool solve_pending_ = false;
  bool deferred_pending_ = false;  // a departures' re-solve waits for the quantum's boundary
  std::int64_t quantum_ns_ = 0;
  bool arrivals_ = false;          // a flow joined since the last solve
  double departure_floor_ = 0;     // least level (rate/weight) of the flows that left since
  bool departures_ = false;
  bool always_full_ = false;
  std::uint64_t solves_ = 0;
  std::uint64_t solve_work_ = 0;
};

}  // namespace orrery::sim
