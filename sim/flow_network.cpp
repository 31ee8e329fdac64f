#include "sim/flow_network.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::sim {

// How rates are kept.
//  - Every sharing flow belongs to the group of its bottleneck link: the link it froze on in
//    the last progressive filling. A group's flows share one level (rate per unit weight), so
//    a group keeps one virtual clock, the bytes per unit weight each of its flows has sent
//    since the group formed, and a heap of its flows by the clock reading at which each is
//    done (generalized processor sharing's virtual finish time). One engine event per group
//    stands for its next completion; when a re-solve changes a group's level, that one event
//    moves, not one per flow. In a large all-to-all with per-flow ECMP, a departure changes
//    the rates of thousands of flows but the bottleneck of only a handful.
//  - Each link keeps the sum of its flows' rates in fixed point (exact, so that it never
//    drifts however many times rates change), which gives the capacity that flows outside a
//    re-solve hold without visiting them.
namespace {
constexpr double kLoadScale = 1024.0;  // fixed-point units per B/s
std::int64_t to_fixed(double rate) { return std::llround(rate * kLoadScale); }
}  // namespace

LinkId FlowNetwork::add_link(BytesPerSecond capacity, Duration latency) {
  ORRERY_CHECK(capacity.value() > 0 && std::isfinite(capacity.value()), "link capacity {} B/s is not positive",
               capacity.value());
  ORRERY_CHECK(capacity.value() <= kMaxCapacity, "link capacity {} B/s is out of range (at most {})", capacity.value(), kMaxCapacity);
  ORRERY_CHECK(latency >= Duration::zero(), "negative link latency");
  const auto id = static_cast<std::uint32_t>(capacity_.size());
  capacity_.push_back(capacity.value());
  latency_ns_.push_back(latency.ns());
  on_link_.emplace_back();
  load_fx_.push_back(0);
  members_.emplace_back();
  group_level_.push_back(0);
  clock_.push_back(0);
  clock_ns_.push_back(0);
  group_event_.emplace_back();
  active_slot_.push_back(kNone);
  link_dirty_.push_back(0);
  link_mark_.push_back(0);
  local_.push_back(0);
  parent_.push_back(id);
  uf_mark_.push_back(0);
  root_mark_.push_back(0);
  touched_mark_.push_back(0);
  old_level_.push_back(0);
  reported_load_.push_back(0);
  return LinkId(id);
}

FlowId FlowNetwork::start(std::span<const LinkId> route, Bytes size, std::uint64_t tag, double weight,
                          Duration extra_latency) {
  ORRERY_CHECK(size.value() >= 0 && std::isfinite(size.value()), "flow size {} is negative or infinite", size.value());
  ORRERY_CHECK(weight > 0 && std::isfinite(weight), "flow weight {} is not positive", weight);
  ORRERY_CHECK(extra_latency >= Duration::zero(), "negative flow latency");
  std::int64_t latency_ns = extra_latency.ns();
  for (const LinkId l : route) {
    ORRERY_CHECK(index_of(l) < capacity_.size(), "route names link {} of {}", index_of(l), capacity_.size());
    latency_ns += latency_ns_[index_of(l)];
  }

  std::uint32_t f;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    f = static_cast<std::uint32_t>(state_.size());
    flows_.emplace_back();
    state_.push_back(State::free);
    remaining_.push_back(0);
    tag_.push_back(0);
    event_.emplace_back();
    inline_slots_.resize(inline_slots_.size() + kInlineLinks);
    spill_begin_.push_back(0);
    spill_capacity_.push_back(0);
    finish_.push_back(0);
    heap_pos_.push_back(0);
  }
  // A short route goes into the record, a long one to the spill pool, where a reused id keeps
  // its old space when the new route fits. The record's mark stays: it is older than any
  // solve to come.
  FlowRecord& r = flows_[f];
  const auto n = static_cast<std::uint32_t>(route.size());
  r.route_size = n;
  if (n <= kInlineLinks) {
    std::copy(route.begin(), route.end(), r.links);
  } else {
    if (spill_capacity_[f] < n) {
      spill_begin_[f] = static_cast<std::uint32_t>(spill_links_.size());
      spill_capacity_[f] = n;
      spill_links_.resize(spill_links_.size() + n);
      spill_slots_.resize(spill_slots_.size() + n);
    }
    std::copy(route.begin(), route.end(), spill_links_.begin() + spill_begin_[f]);
  }
  r.weight = weight;
  r.rate = 0;
  r.rate_fx = 0;
  r.group = kNone;

  state_[f] = State::latency;
  remaining_[f] = size.value();
  tag_[f] = tag;
  ++active_count_;
  ++started_;
  if (latency_ns == 0) {
    activate(f);
  } else {
    event_[f] = engine_.schedule_after(Duration::nanoseconds(latency_ns), [this, f] { activate(f); });
  }
  return FlowId(f);
}

std::span<const LinkId> FlowNetwork::route(FlowId flow) const {
  const std::uint32_t f = index_of(flow);
  return {links_of(f), flows_[f].route_size};
}

Bytes FlowNetwork::remaining(FlowId flow) const {
  const std::uint32_t f = index_of(flow);
  const std::uint32_t g = flows_[f].group;
  if (state_[f] != State::sharing || g == kNone) return Bytes(remaining_[f]);
  const double elapsed_s = static_cast<double>(engine_.now().ns() - clock_ns_[g]) * 1e-9;
  return Bytes(std::max(0.0, (finish_[f] - clock_[g] - group_level_[g] * elapsed_s) * flows_[f].weight));
}

BytesPerSecond FlowNetwork::link_load(LinkId l) const {
  double sum = 0;
  for (const std::uint32_t f : on_link_[index_of(l)]) sum += flows_[f].rate;
  return BytesPerSecond(sum);
}

void FlowNetwork::activate(std::uint32_t f) {
  const std::uint32_t n = flows_[f].route_size;
  if (n == 0 || remaining_[f] == 0) {
    // Nothing to share: done as soon as the latency is over (as an event, so that observers
    // never run inside start()).
    state_[f] = State::finishing;
    event_[f] = engine_.schedule_after(Duration::zero(), [this, f] { complete(f); });
    return;
  }
  state_[f] = State::sharing;
  arrivals_ = true;
  const LinkId* links = links_of(f);
  std::uint32_t* slots = slots_of(f);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t l = index_of(links[i]);
    slots[i] = static_cast<std::uint32_t>(on_link_[l].size());
    on_link_[l].push_back(f);
    mark_dirty(l);
  }
  request_solve();
}

void FlowNetwork::detach(std::uint32_t f) {
  const LinkId* links = links_of(f);
  const std::uint32_t* slots = slots_of(f);
  for (std::uint32_t i = 0; i < flows_[f].route_size; ++i) {
    const std::uint32_t l = index_of(links[i]);
    std::vector<std::uint32_t>& flows = on_link_[l];
    const std::uint32_t slot = slots[i];
    const std::uint32_t moved = flows.back();
    flows[slot] = moved;
    flows.pop_back();
    if (moved != f) {
      // Tell the moved flow where it now sits on this link.
      const LinkId* moved_links = links_of(moved);
      for (std::uint32_t j = 0; j < flows_[moved].route_size; ++j) {
        if (index_of(moved_links[j]) == l) {
          slots_of(moved)[j] = slot;
          break;
        }
      }
    }
    mark_dirty(l);
  }
}

void FlowNetwork::complete(std::uint32_t f) {
  if (state_[f] == State::sharing) {
    const std::uint32_t g = flows_[f].group;
    // A flow leaves between solves only through its group's completion event, so it has one.
    const double level = g == kNone ? flows_[f].rate / flows_[f].weight : group_level_[g];
    departure_floor_ = departures_ ? std::min(departure_floor_, level) : level;
    departures_ = true;
    if (g != kNone) group_erase(f);
    set_rate(f, 0);
    detach(f);
    request_solve(/*departure=*/true);
  }
  state_[f] = State::free;
  remaining_[f] = 0;
  --active_count_;
  free_flows_.push_back(f);
  if (observer_ != nullptr) observer_->on_flow_complete(FlowId(f), tag_[f], engine_.now());
}

void FlowNetwork::set_rate(std::uint32_t f, double rate) {
  FlowRecord& r = flows_[f];
  const std::int64_t fx = to_fixed(rate);
  const std::int64_t delta = fx - r.rate_fx;
  r.rate = rate;
  r.rate_fx = fx;
  if (delta == 0) return;
  const LinkId* links = links_of(f);
  for (std::uint32_t i = 0; i < r.route_size; ++i) load_fx_[index_of(links[i])] += delta;
}

void FlowNetwork::mark_dirty(std::uint32_t link) {
  if (link_dirty_[link] == 0) {
    link_dirty_[link] = 1;
    dirty_links_.push_back(link);
  }
}

void FlowNetwork::request_solve(bool departure) {
  // One re-solve per instant: it runs after the events already due now, which batches the
  // arrivals and departures of flows that start or end together.
  if (departure && quantum_ns_ > 0) {
    if (solve_pending_ || deferred_pending_) return;
    deferred_pending_ = true;
    const std::int64_t now = engine_.now().ns();
    engine_.schedule_at(Time::from_ns((now / quantum_ns_ + 1) * quantum_ns_), [this] {
      deferred_pending_ = false;
      solve();
    });
    return;
  }
  if (solve_pending_) return;
  solve_pending_ = true;
  engine_.schedule_after(Duration::zero(), [this] {
    solve_pending_ = false;
    solve();
  });
}

// ---- groups ----

void FlowNetwork::advance(std::uint32_t g) {
  const std::int64_t now = engine_.now().ns();
  if (clock_ns_[g] == now) return;
  clock_[g] += group_level_[g] * static_cast<double>(now - clock_ns_[g]) * 1e-9;
  clock_ns_[g] = now;
}

std::int64_t FlowNetwork::due_ns(std::uint32_t g, std::uint32_t f) const {
  const double ns = std::max(0.0, (finish_[f] - clock_[g]) / group_level_[g] * 1e9);
  return clock_ns_[g] + ceil_duration_ns(ns).ns();
}

void FlowNetwork::schedule_group(std::uint32_t g) {
  engine_.cancel(group_event_[g]);
  group_event_[g] = EventId();
  if (members_[g].empty()) return;
  const std::int64_t at = std::max(engine_.now().ns(), due_ns(g, members_[g].front()));
  group_event_[g] = engine_.schedule_at(Time::from_ns(at), [this, g] { complete_due(g); });
}

void FlowNetwork::complete_due(std::uint32_t g) {
  group_event_[g] = EventId();
  const std::int64_t now = engine_.now().ns();
  // Every member due by now finishes now, in heap order (deterministic: ties break by id).
  while (!members_[g].empty() && due_ns(g, members_[g].front()) <= now) complete(members_[g].front());
  if (!members_[g].empty()) schedule_group(g);
}

// A group's heap of flows by finish tag, each flow knowing its index (heap_pos_) so that it
// can leave from the middle when its bottleneck moves.
void FlowNetwork::sift_up(std::uint32_t g, std::uint32_t pos) {
  std::vector<std::uint32_t>& h = members_[g];
  const std::uint32_t f = h[pos];
  for (std::uint32_t parent; pos > 0 && finishes_before(f, h[parent = (pos - 1) / 2]); pos = parent) place(h, pos, h[parent]);
  place(h, pos, f);
}

void FlowNetwork::sift_down(std::uint32_t g, std::uint32_t pos) {
  std::vector<std::uint32_t>& h = members_[g];
  const auto n = static_cast<std::uint32_t>(h.size());
  const std::uint32_t f = h[pos];
  for (std::uint32_t child = 2 * pos + 1; child < n; child = 2 * pos + 1) {
    if (child + 1 < n && finishes_before(h[child + 1], h[child])) ++child;
    if (!finishes_before(h[child], f)) break;
    place(h, pos, h[child]);
    pos = child;
  }
  place(h, pos, f);
}

void FlowNetwork::group_insert(std::uint32_t g, std::uint32_t f) {
  if (members_[g].empty()) {
    active_slot_[g] = static_cast<std::uint32_t>(active_groups_.size());
    active_groups_.push_back(g);
  }
  flows_[f].group = g;
  members_[g].push_back(f);
  sift_up(g, static_cast<std::uint32_t>(members_[g].size() - 1));
}

void FlowNetwork::group_erase(std::uint32_t f) {
  const std::uint32_t g = flows_[f].group;
  flows_[f].group = kNone;
  std::vector<std::uint32_t>& h = members_[g];
  const std::uint32_t pos = heap_pos_[f];
  const std::uint32_t last = h.back();
  h.pop_back();
  if (last != f) {
    h[pos] = last;
    heap_pos_[last] = pos;
    sift_down(g, pos);
    sift_up(g, heap_pos_[last]);
  }
  if (!h.empty()) return;
  // The group is gone: its clock starts again from zero if it forms anew.
  engine_.cancel(group_event_[g]);
  group_event_[g] = EventId();
  clock_[g] = 0;
  const std::uint32_t slot = active_slot_[g];
  const std::uint32_t moved = active_groups_.back();
  active_groups_[slot] = moved;
  active_slot_[moved] = slot;
  active_groups_.pop_back();
  active_slot_[g] = kNone;
}

// ---- the solve ----

std::uint32_t FlowNetwork::find(std::uint32_t link) {
  if (uf_mark_[link] != solve_epoch_) {
    uf_mark_[link] = solve_epoch_;
    parent_[link] = link;
    return link;
  }
  while (parent_[link] != link) {
    parent_[link] = parent_[parent_[link]];
    link = parent_[link];
  }
  return link;
}

std::uint32_t FlowNetwork::local_link(std::uint32_t link) {
  if (link_mark_[link] == solve_epoch_) return local_[link];
  link_mark_[link] = solve_epoch_;
  const auto i = static_cast<std::uint32_t>(cl_link_.size());
  local_[link] = i;
  cl_link_.push_back(link);
  return i;
}

// Takes the flow into the component, copying from its record all that fill() and apply() need
// of it, so that neither visits the record again until apply() sets the new rate.
void FlowNetwork::add_to_component(std::uint32_t f) {
  FlowRecord& r = flows_[f];
  r.mark = flow_epoch_;
  r.local = static_cast<std::uint32_t>(cf_flow_.size());
  cf_flow_.push_back(f);
  cf_weight_.push_back(r.weight);
  cf_old_fx_.push_back(r.rate_fx);
  cf_old_rate_.push_back(r.rate);
  cf_old_group_.push_back(r.group);
  cf_route_.push_back(static_cast<std::uint32_t>(cr_link_.size()));
  const LinkId* links = links_of(f);
  for (std::uint32_t i = 0; i < r.route_size; ++i) cr_link_.push_back(local_link(index_of(links[i])));
}

// An empty component that holds the changed links (numbered first).
void FlowNetwork::start_component() {
  cf_flow_.clear();
  cf_weight_.clear();
  cf_old_fx_.clear();
  cf_old_rate_.clear();
  cf_old_group_.clear();
  cf_route_.clear();
  cr_link_.clear();
  cl_link_.clear();
  for (const std::uint32_t l : changed_links_) local_link(l);
}

// A new set of marks: links compare theirs with solve_epoch_ (64 bits: never wraps), flow
// records with flow_epoch_, which advances with it in 32 bits to keep the record in one cache
// line; when that wraps, every record's mark is cleared so that no stale mark can match.
void FlowNetwork::next_epoch() {
  ++solve_epoch_;
  if (++flow_epoch_ == 0) {
    for (FlowRecord& r : flows_) r.mark = 0;
    flow_epoch_ = 1;
  }
}

void FlowNetwork::solve() {
  // A deferred re-solve whose work an arrival's re-solve has done since.
  if (dirty_links_.empty() && !arrivals_ && !departures_) return;
  ++solves_;
  next_epoch();

  // When flows only left, the flows whose level (rate / weight) is below the lowest level of
  // those that left keep their rates: in progressive filling every link a departed flow
  // crossed saturated at or above its level, so nothing that froze below it can change. Only
  // flows at or above that floor are re-solved, with the others' rates held on their links.
  // An arrival re-solves everything connected to it (its level is not known in advance).
  // The floor is lowered by a millionth: a flow that shared the departed flow's bottleneck has
  // level (w x level) / w, which rounding can put a hair below it; re-solving a flow that did
  // not need it is only work, never an error.
  const bool partial = !arrivals_ && departures_ && !always_full_;
  const double floor = departure_floor_ * (1 - 1e-6);
  arrivals_ = false;
  departures_ = false;

  for (const std::uint32_t l : dirty_links_) link_dirty_[l] = 0;
  changed_links_.swap(dirty_links_);
  dirty_links_.clear();
  start_component();
  by_links_ = true;
  if (!partial) {
    gather_component(0.0, 0);
  } else {
    // Two ways to find the flows at or above the floor that connect to the change: breadth
    // first from the changed links, which also visits the held flows on every link it reaches
    // (cheap when the change touches a small part, such as one ring among many), or through
    // the groups (cheap when the floor is high). The first runs on a budget, a sixteenth of
    // the flows sharing, and gives way to the second when the budget runs out; after it has
    // given way, it sits out a number of solves that doubles with each failure (up to 256).
    const std::size_t budget = std::max<std::size_t>(64, active_count_ / 16);
    bool found = false;
    if (breadth_first_wait_ > 0) {
      --breadth_first_wait_;
    } else {
      found = gather_component(floor, budget);
      breadth_first_backoff_ = found ? 0 : std::min<std::uint32_t>(256, 2 * breadth_first_backoff_ + 1);
      breadth_first_wait_ = breadth_first_backoff_;
    }
    if (!found) {
      next_epoch();  // forget the marks of the attempt
      start_component();
      by_links_ = false;
      gather_above_floor(floor);
    }
  }
  cf_route_.push_back(static_cast<std::uint32_t>(cr_link_.size()));
  fill();
  apply();
}

// The flows at or above `floor` connected to a changed link through each other (floor 0:
// everything connected): breadth first over links and their flows. Gives up (false) once it
// has visited more than `budget` flow-link incidences, when a budget is given.
bool FlowNetwork::gather_component(double floor, std::size_t budget) {
  std::size_t visited = 0;
  for (std::size_t next = 0; next < cl_link_.size(); ++next) {
    const std::vector<std::uint32_t>& on = on_link_[cl_link_[next]];
    const std::size_t n = on.size();
    visited += n;
    solve_work_ += n;
    if (budget > 0 && visited > budget) return false;
    for (std::size_t c = 0; c < std::min(n, kPrefetchAhead); ++c) prefetch(on[c]);
    for (std::size_t c = 0; c < n; ++c) {
      if (c + kPrefetchAhead < n) prefetch(on[c + kPrefetchAhead]);
      const FlowRecord& r = flows_[on[c]];
      if (r.mark == flow_epoch_) continue;
      if (floor > 0 && r.group != kNone && group_level_[r.group] < floor) continue;  // held
      add_to_component(on[c]);
    }
  }
  return true;
}

// The flows at or above `floor` that connect to a changed link through each other. They are
// found through the groups (a group's flows all share its level), without visiting the held
// flows on the links; a union-find over the candidates' links keeps the connected ones.
// Each candidate's record is read once: what the solve needs of it goes straight into the
// component's arrays (routes as link ids for now), and the candidates that do not connect are
// then dropped in place, the routes of the others renumbered locally. Marks are not needed:
// every flow is in one group, so none is found twice, and fill() then reads the component's
// own lists rather than the links'.
void FlowNetwork::gather_above_floor(double floor) {
  for (const std::uint32_t g : active_groups_) {
    if (group_level_[g] < floor) continue;
    for (const std::uint32_t f : members_[g]) cf_flow_.push_back(f);
  }
  const std::size_t n = cf_flow_.size();
  cf_weight_.resize(n);
  cf_old_fx_.resize(n);
  cf_old_rate_.resize(n);
  cf_old_group_.resize(n);
  cf_route_.resize(n + 1);
  for (std::size_t c = 0; c < std::min(n, kPrefetchAhead); ++c) prefetch(cf_flow_[c]);
  for (std::size_t c = 0; c < n; ++c) {
    if (c + kPrefetchAhead < n) prefetch(cf_flow_[c + kPrefetchAhead]);
    const FlowRecord& r = flows_[cf_flow_[c]];
    cf_weight_[c] = r.weight;
    cf_old_fx_[c] = r.rate_fx;
    cf_old_rate_[c] = r.rate;
    cf_old_group_[c] = r.group;
    cf_route_[c] = static_cast<std::uint32_t>(cr_link_.size());
    const LinkId* links = links_of(cf_flow_[c]);
    cr_link_.push_back(index_of(links[0]));
    std::uint32_t root = find(index_of(links[0]));
    for (std::uint32_t i = 1; i < r.route_size; ++i) {
      cr_link_.push_back(index_of(links[i]));
      const std::uint32_t other = find(index_of(links[i]));
      if (other == root) continue;
      if (other < root) {
        parent_[root] = other;
        root = other;
      } else {
        parent_[other] = root;
      }
    }
    solve_work_ += r.route_size;
  }
  cf_route_[n] = static_cast<std::uint32_t>(cr_link_.size());
  // The sets the changed links belong to; the candidates in them are the component, kept in
  // the order found (the filling's sums run in that order).
  for (const std::uint32_t l : cl_link_) root_mark_[find(l)] = solve_epoch_;
  std::size_t kept = 0;
  std::uint32_t out = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const std::uint32_t begin = cf_route_[c];
    const std::uint32_t end = cf_route_[c + 1];
    if (root_mark_[find(cr_link_[begin])] != solve_epoch_) continue;
    cf_flow_[kept] = cf_flow_[c];
    cf_weight_[kept] = cf_weight_[c];
    cf_old_fx_[kept] = cf_old_fx_[c];
    cf_old_rate_[kept] = cf_old_rate_[c];
    cf_old_group_[kept] = cf_old_group_[c];
    cf_route_[kept] = out;
    for (std::uint32_t j = begin; j < end; ++j) cr_link_[out++] = local_link(cr_link_[j]);
    ++kept;
  }
  cf_flow_.resize(kept);
  cf_weight_.resize(kept);
  cf_old_fx_.resize(kept);
  cf_old_rate_.resize(kept);
  cf_old_group_.resize(kept);
  cf_route_.resize(kept);  // solve() appends the end of the last route
  cr_link_.resize(out);
}

// Weighted progressive filling over the component. A link's level is the rate per unit weight
// its unfrozen flows would get if it were the bottleneck: residual capacity over unfrozen
// weight. The least level saturates first; its flows freeze at it. Freezing flows below
// another link's level raises that level, so a key in the heap is current or too low, never
// too high: the top's key is refreshed before it is taken. Ties break by link id.
// The capacity held by flows outside the component is the link's load less the component's.
void FlowNetwork::fill() {
  const auto links = static_cast<std::uint32_t>(cl_link_.size());
  const auto flows = static_cast<std::uint32_t>(cf_flow_.size());
  cl_weight_.assign(links, 0.0);
  cl_unfrozen_.assign(links, 0);
  cl_in_fx_.assign(links, 0);
  cl_residual_.resize(links);
  cl_level_.resize(links);
  cf_rate_.resize(flows);
  cf_group_.resize(flows);
  cf_frozen_.assign(flows, 0);
  for (std::uint32_t k = 0; k < flows; ++k) {
    const double w = cf_weight_[k];
    const std::int64_t fx = cf_old_fx_[k];
    for (std::uint32_t j = cf_route_[k]; j < cf_route_[k + 1]; ++j) {
      const std::uint32_t i = cr_link_[j];
      cl_weight_[i] += w;
      ++cl_unfrozen_[i];
      cl_in_fx_[i] += fx;
    }
  }
  // A component found breadth first holds every flow on its links that the filling needs (the
  // others are held), so the filling reads the links' own lists; one found through the groups
  // gets a compressed list of its flows per link, its links' lists being mostly held flows.
  if (!by_links_) {
    csr_begin_.resize(links + 1);
    csr_begin_[0] = 0;
    for (std::uint32_t i = 0; i < links; ++i) csr_begin_[i + 1] = csr_begin_[i] + cl_unfrozen_[i];
    csr_flows_.resize(csr_begin_[links]);
    csr_cursor_.assign(csr_begin_.begin(), csr_begin_.end() - 1);
    for (std::uint32_t k = 0; k < flows; ++k) {
      for (std::uint32_t j = cf_route_[k]; j < cf_route_[k + 1]; ++j) csr_flows_[csr_cursor_[cr_link_[j]]++] = k;
    }
  }

  const auto later = [](const Key& a, const Key& b) {
    return a.level > b.level || (a.level == b.level && a.link > b.link);
  };
  const auto level_of = [&](std::uint32_t i) { return std::max(cl_residual_[i], 0.0) / cl_weight_[i]; };
  heap_.clear();
  for (std::uint32_t i = 0; i < links; ++i) {
    const std::uint32_t l = cl_link_[i];
    cl_residual_[i] = capacity_[l] - static_cast<double>(load_fx_[l] - cl_in_fx_[i]) / kLoadScale;
    if (cl_unfrozen_[i] > 1) heap_.push_back({level_of(i), l, i});
  }
  // A link that only one flow of the component crosses keeps its level until that flow
  // freezes, so of a flow's such links only the least (by level, then id) can be its
  // bottleneck: one key per flow for them rather than one per link.
  for (std::uint32_t k = 0; k < flows; ++k) {
    Key best{0, kNone, 0};
    for (std::uint32_t j = cf_route_[k]; j < cf_route_[k + 1]; ++j) {
      const std::uint32_t i = cr_link_[j];
      if (cl_unfrozen_[i] != 1) continue;
      const Key key{level_of(i), cl_link_[i], i};
      if (best.link == kNone || later(best, key)) best = key;
    }
    if (best.link != kNone) heap_.push_back(best);
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Key& top = heap_.back();
    const std::uint32_t i = top.local;
    if (cl_unfrozen_[i] == 0) {  // its flows froze elsewhere: never a bottleneck
      heap_.pop_back();
      continue;
    }
    const double level = level_of(i);
    if (later(Key{level, top.link, i}, top)) {  // risen since keyed: back in with the new key
      top.level = level;
      std::push_heap(heap_.begin(), heap_.end(), later);
      continue;
    }
    const std::uint32_t link = top.link;
    heap_.pop_back();
    // Freeze every unfrozen flow of the bottleneck at its level; the links they also cross
    // lose capacity and weight.
    cl_level_[i] = level;
    const auto freeze = [&](std::uint32_t k) {
      if (cf_frozen_[k] != 0) return;
      cf_frozen_[k] = 1;
      const double w = cf_weight_[k];
      const double r = w * level;
      cf_rate_[k] = r;
      cf_group_[k] = i;
      for (std::uint32_t j = cf_route_[k]; j < cf_route_[k + 1]; ++j) {
        const std::uint32_t m = cr_link_[j];
        cl_residual_[m] -= r;
        cl_weight_[m] -= w;
        --cl_unfrozen_[m];
      }
    };
    if (by_links_) {
      const std::vector<std::uint32_t>& on = on_link_[link];
      const std::size_t n = on.size();
      for (std::size_t c = 0; c < std::min(n, kPrefetchAhead); ++c) prefetch(on[c]);
      for (std::size_t c = 0; c < n; ++c) {
        if (c + kPrefetchAhead < n) prefetch(on[c + kPrefetchAhead]);
        const FlowRecord& r = flows_[on[c]];
        if (r.mark == flow_epoch_) freeze(r.local);
      }
    } else {
      for (std::uint32_t c = csr_begin_[i]; c < csr_begin_[i + 1]; ++c) freeze(csr_flows_[c]);
    }
  }
}

// Moves the solved flows into their new groups, sets the groups' levels (each group's clock
// first advanced at its old level), moves the groups' completion events, and updates rates and
// link loads.
void FlowNetwork::apply() {
  const auto flows = static_cast<std::uint32_t>(cf_flow_.size());
  changed_groups_.clear();
  ++touched_epoch_;
  const auto involve = [&](std::uint32_t g) {
    if (g == kNone || touched_mark_[g] == touched_epoch_) return;
    touched_mark_[g] = touched_epoch_;
    changed_groups_.push_back(g);
    old_level_[g] = members_[g].empty() ? -1.0 : group_level_[g];
    if (!members_[g].empty()) advance(g);
  };
  for (std::uint32_t k = 0; k < flows; ++k) {
    involve(cf_old_group_[k]);
    involve(cl_link_[cf_group_[k]]);
  }
  const std::int64_t now = engine_.now().ns();
  for (std::uint32_t k = 0; k < flows; ++k) {
    const std::uint32_t f = cf_flow_[k];
    const std::uint32_t g = cf_old_group_[k];
    const std::uint32_t h = cl_link_[cf_group_[k]];
    if (g == h) continue;
    double left = remaining_[f];  // bytes; a flow new to sharing has sent nothing
    old_level_[h] = -1;           // membership changed: the next completion may have too
    if (g != kNone) {
      old_level_[g] = -1;
      left = std::max(0.0, finish_[f] - clock_[g]) * cf_weight_[k];
      group_erase(f);
    }
    if (members_[h].empty()) {
      clock_[h] = 0;
      clock_ns_[h] = now;
    }
    finish_[f] = clock_[h] + left / cf_weight_[k];
    group_insert(h, f);
  }
  for (const std::uint32_t g : changed_groups_) {
    if (members_[g].empty()) continue;
    const double level = cl_level_[local_[g]];
    ORRERY_CHECK(level > 0, "link {} got level {} from the max-min solve", g, level);
    if (old_level_[g] == level) continue;  // same members, same level: same event
    group_level_[g] = level;
    schedule_group(g);
  }
  bool changed = false;
  for (std::uint32_t k = 0; k < flows; ++k) {
    if (k + kPrefetchAhead < flows && cf_rate_[k + kPrefetchAhead] != cf_old_rate_[k + kPrefetchAhead]) {
      prefetch(cf_flow_[k + kPrefetchAhead]);
    }
    if (cf_rate_[k] != cf_old_rate_[k]) {
      set_rate(cf_flow_[k], cf_rate_[k]);
      changed = true;
    }
  }
  if (observer_ == nullptr) return;
  if (report_link_loads_) {
    for (const std::uint32_t l : cl_link_) {
      const double load = link_load(LinkId(l)).value();
      if (load != reported_load_[l]) {
        reported_load_[l] = load;
        observer_->on_link_load(LinkId(l), engine_.now(), BytesPerSecond(load));
      }
    }
  }
  if (changed) observer_->on_rates_changed(engine_.now());
}

}  // namespace orrery::sim
