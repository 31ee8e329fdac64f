#include "sim/flow_network.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::sim {

LinkId FlowNetwork::add_link(BytesPerSecond capacity, Duration latency) {
  ORRERY_CHECK(capacity.value() > 0 && std::isfinite(capacity.value()), "link capacity {} B/s is not positive",
               capacity.value());
  ORRERY_CHECK(latency >= Duration::zero(), "negative link latency");
  capacity_.push_back(capacity.value());
  latency_ns_.push_back(latency.ns());
  on_link_.emplace_back();
  link_dirty_.push_back(0);
  link_mark_.push_back(0);
  touched_mark_.push_back(0);
  residual_.push_back(0);
  weight_left_.push_back(0);
  level_.push_back(0);
  unfrozen_.push_back(0);
  reported_load_.push_back(0);
  return LinkId(static_cast<std::uint32_t>(capacity_.size() - 1));
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
    state_.push_back(State::free);
    remaining_.push_back(0);
    rate_.push_back(0);
    weight_.push_back(0);
    updated_ns_.push_back(0);
    tag_.push_back(0);
    event_.emplace_back();
    route_begin_.push_back(0);
    route_size_.push_back(0);
    route_capacity_.push_back(0);
    flow_mark_.push_back(0);
    new_rate_.push_back(0);
  }
  // The route goes to the pool; a reused id keeps its old space when the new route fits.
  const auto n = static_cast<std::uint32_t>(route.size());
  if (route_capacity_[f] < n) {
    route_begin_[f] = static_cast<std::uint32_t>(route_pool_.size());
    route_capacity_[f] = n;
    route_pool_.resize(route_pool_.size() + n);
    slot_pool_.resize(slot_pool_.size() + n);
  }
  std::copy(route.begin(), route.end(), route_pool_.begin() + route_begin_[f]);
  route_size_[f] = n;

  state_[f] = State::latency;
  remaining_[f] = size.value();
  rate_[f] = 0;
  weight_[f] = weight;
  updated_ns_[f] = engine_.now().ns();
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
  return {route_pool_.data() + route_begin_[f], route_size_[f]};
}

Bytes FlowNetwork::remaining(FlowId flow) const {
  const std::uint32_t f = index_of(flow);
  const double elapsed_s = static_cast<double>(engine_.now().ns() - updated_ns_[f]) * 1e-9;
  return Bytes(std::max(0.0, remaining_[f] - rate_[f] * elapsed_s));
}

BytesPerSecond FlowNetwork::link_load(LinkId l) const {
  double sum = 0;
  for (const std::uint32_t f : on_link_[index_of(l)]) sum += rate_[f];
  return BytesPerSecond(sum);
}

void FlowNetwork::activate(std::uint32_t f) {
  updated_ns_[f] = engine_.now().ns();
  if (route_size_[f] == 0 || remaining_[f] == 0) {
    // Nothing to share: done as soon as the latency is over (as an event, so that observers
    // never run inside start()).
    state_[f] = State::finishing;
    event_[f] = engine_.schedule_after(Duration::zero(), [this, f] { complete(f); });
    return;
  }
  state_[f] = State::sharing;
  arrivals_ = true;
  const std::uint32_t begin = route_begin_[f];
  for (std::uint32_t i = 0; i < route_size_[f]; ++i) {
    const std::uint32_t l = index_of(route_pool_[begin + i]);
    slot_pool_[begin + i] = static_cast<std::uint32_t>(on_link_[l].size());
    on_link_[l].push_back(f);
    mark_dirty(l);
  }
  request_solve();
}

void FlowNetwork::detach(std::uint32_t f) {
  const std::uint32_t begin = route_begin_[f];
  for (std::uint32_t i = 0; i < route_size_[f]; ++i) {
    const std::uint32_t l = index_of(route_pool_[begin + i]);
    std::vector<std::uint32_t>& flows = on_link_[l];
    const std::uint32_t slot = slot_pool_[begin + i];
    const std::uint32_t moved = flows.back();
    flows[slot] = moved;
    flows.pop_back();
    if (moved != f) {
      // Tell the moved flow where it now sits on this link.
      const std::uint32_t mb = route_begin_[moved];
      for (std::uint32_t j = 0; j < route_size_[moved]; ++j) {
        if (index_of(route_pool_[mb + j]) == l) {
          slot_pool_[mb + j] = slot;
          break;
        }
      }
    }
    mark_dirty(l);
  }
}

void FlowNetwork::complete(std::uint32_t f) {
  if (state_[f] == State::sharing) {
    const double level = rate_[f] / weight_[f];
    departure_floor_ = departures_ ? std::min(departure_floor_, level) : level;
    departures_ = true;
    detach(f);
    request_solve();
  }
  state_[f] = State::free;
  remaining_[f] = 0;
  rate_[f] = 0;
  updated_ns_[f] = engine_.now().ns();
  --active_count_;
  free_flows_.push_back(f);
  if (observer_ != nullptr) observer_->on_flow_complete(FlowId(f), tag_[f], engine_.now());
}

void FlowNetwork::mark_dirty(std::uint32_t link) {
  if (link_dirty_[link] == 0) {
    link_dirty_[link] = 1;
    dirty_links_.push_back(link);
  }
}

void FlowNetwork::request_solve() {
  // One re-solve per instant: it runs after the events already due now, which batches the
  // arrivals and departures of flows that start or end together.
  if (solve_pending_) return;
  solve_pending_ = true;
  engine_.schedule_after(Duration::zero(), [this] {
    solve_pending_ = false;
    solve();
  });
}

void FlowNetwork::solve() {
  ++solves_;
  ++solve_epoch_;
  const std::uint64_t in_component = 2 * solve_epoch_;
  const std::uint64_t frozen = in_component + 1;

  // When flows only left, the flows whose level (rate / weight) is below the lowest level of
  // those that left keep their rates: in progressive filling every link a departed flow
  // crossed saturated at or above its level, so nothing that froze below it can change. Only
  // flows at or above that floor are re-solved, with the others' rates held on their links,
  // and changes do not propagate through the held flows. An arrival re-solves everything
  // connected to it (its level is not known in advance).
  // The floor is lowered by a millionth: a flow that shared the departed flow's bottleneck has
  // level (w x level) / w, which rounding can put a hair below it; re-solving a flow that did
  // not need it is only work, never an error.
  const double floor = (arrivals_ || !departures_ || always_full_) ? 0.0 : departure_floor_ * (1 - 1e-6);
  arrivals_ = false;
  departures_ = false;
  const auto held = [&](std::uint32_t f) { return rate_[f] < floor * weight_[f]; };

  // The affected part: every link and flow connected to a changed link through shared flows
  // (that are not held). Flows outside it keep their rates.
  component_links_.clear();
  component_flows_.clear();
  for (const std::uint32_t l : dirty_links_) {
    link_dirty_[l] = 0;
    if (link_mark_[l] != solve_epoch_) {
      link_mark_[l] = solve_epoch_;
      component_links_.push_back(l);
    }
  }
  dirty_links_.clear();
  // One pass over each link's flows gathers what the filling needs: the rate of the held flows
  // (their capacity is taken), and the weight and count of the others (all in the component).
  for (std::size_t next = 0; next < component_links_.size(); ++next) {
    const std::uint32_t l = component_links_[next];
    double weight = 0, held_rate = 0;
    std::uint32_t count = 0;
    for (const std::uint32_t f : on_link_[l]) {
      if (held(f)) {
        held_rate += rate_[f];
        continue;
      }
      weight += weight_[f];
      ++count;
      if (flow_mark_[f] >= in_component) continue;
      flow_mark_[f] = in_component;
      component_flows_.push_back(f);
      const std::uint32_t begin = route_begin_[f];
      for (std::uint32_t i = 0; i < route_size_[f]; ++i) {
        const std::uint32_t m = index_of(route_pool_[begin + i]);
        if (link_mark_[m] != solve_epoch_) {
          link_mark_[m] = solve_epoch_;
          component_links_.push_back(m);
        }
      }
    }
    solve_work_ += on_link_[l].size();
    residual_[l] = capacity_[l] - held_rate;
    weight_left_[l] = weight;
    unfrozen_[l] = count;
  }

  // Weighted progressive filling. A link's level is the rate per unit weight its unfrozen
  // flows would get if it were the bottleneck: residual capacity over unfrozen weight. The
  // least level saturates first; its flows freeze at it. Freezing flows below another link's
  // level raises that level, so a pushed key is either current or stale, never too high:
  // stale keys (level_ differs) are skipped. Ties break by link index: deterministic.
  heap_.clear();
  const auto later = [](const Level& a, const Level& b) {
    return a.level > b.level || (a.level == b.level && a.link > b.link);
  };
  for (const std::uint32_t l : component_links_) {
    if (unfrozen_[l] == 0) continue;
    level_[l] = std::max(residual_[l], 0.0) / weight_left_[l];
    heap_.push_back({level_[l], l});
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Level top = heap_.back();
    heap_.pop_back();
    const std::uint32_t l = top.link;
    if (unfrozen_[l] == 0 || top.level != level_[l]) continue;  // done, or a stale key
    // Freeze every unfrozen flow of the bottleneck at its level; the links they also cross
    // lose capacity and weight. Each touched link gets one new key per round, not one per flow.
    touched_.clear();
    for (const std::uint32_t f : on_link_[l]) {
      if (flow_mark_[f] != in_component) continue;  // frozen already, or held outside the solve
      flow_mark_[f] = frozen;
      const double r = weight_[f] * top.level;
      new_rate_[f] = r;
      const std::uint32_t begin = route_begin_[f];
      for (std::uint32_t i = 0; i < route_size_[f]; ++i) {
        const std::uint32_t m = index_of(route_pool_[begin + i]);
        residual_[m] -= r;
        weight_left_[m] -= weight_[f];
        --unfrozen_[m];
        if (m != l && touched_mark_[m] != touched_epoch_) {
          touched_mark_[m] = touched_epoch_;
          touched_.push_back(m);
        }
      }
    }
    ++touched_epoch_;
    for (const std::uint32_t m : touched_) {
      if (unfrozen_[m] == 0) continue;
      level_[m] = std::max(residual_[m], 0.0) / weight_left_[m];
      heap_.push_back({level_[m], m});
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
  }

  bool changed = false;
  for (const std::uint32_t f : component_flows_) {
    if (new_rate_[f] != rate_[f]) {
      reschedule(f, new_rate_[f]);
      changed = true;
    }
  }
  if (observer_ == nullptr) return;
  if (report_link_loads_) {
    for (const std::uint32_t l : component_links_) {
      const double load = link_load(LinkId(l)).value();
      if (load != reported_load_[l]) {
        reported_load_[l] = load;
        observer_->on_link_load(LinkId(l), engine_.now(), BytesPerSecond(load));
      }
    }
  }
  if (changed) observer_->on_rates_changed(engine_.now());
}

void FlowNetwork::reschedule(std::uint32_t f, double new_rate) {
  ORRERY_CHECK(new_rate > 0, "flow {} got rate {} from the max-min solve", f, new_rate);
  const std::int64_t now = engine_.now().ns();
  remaining_[f] = std::max(0.0, remaining_[f] - rate_[f] * static_cast<double>(now - updated_ns_[f]) * 1e-9);
  updated_ns_[f] = now;
  rate_[f] = new_rate;
  engine_.cancel(event_[f]);
  event_[f] = engine_.schedule_after(ceil_duration_ns(remaining_[f] / new_rate * 1e9), [this, f] { complete(f); });
}

}  // namespace orrery::sim
