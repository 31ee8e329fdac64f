// Name -> {description, documented parameters with defaults, factory}: how a policy family
// is picked by a string in a scenario. Unknown names and parameters fail with the valid ones.
//   Registry<Scheduler> schedulers("cluster scheduler");
//   schedulers.add({"fifo", "first come, first served", {}, [](const Params&) { return ...; }});
//   auto s = schedulers.create("fifo", given_params, {"scenario.json", "/policy"});
#pragma once

#include "sim/error.hpp"
#include "sim/unit_parse.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace orrery::sim {

using ParamValue = std::variant<bool, std::int64_t, double, std::string>;
enum class ParamType { boolean, integer, number, string };

std::string_view to_string(ParamType type);
ParamType type_of(const ParamValue& value);
std::string to_string(const ParamValue& value);

struct ParamSpec {
  std::string name;
  ParamType type;
  ParamValue default_value;  // of `type`
  std::string description;
};

// Parameters as given by the user, before checking against the specs.
using GivenParams = std::map<std::string, ParamValue, std::less<>>;

// A complete, checked set of parameters: every declared one, given or defaulted.
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, ParamValue, std::less<>> values) : values_(std::move(values)) {}
  bool get_bool(std::string_view name) const { return get<bool>(name); }
  std::int64_t get_int(std::string_view name) const { return get<std::int64_t>(name); }
  double get_number(std::string_view name) const { return get<double>(name); }
  const std::string& get_string(std::string_view name) const { return get<std::string>(name); }
  const std::map<std::string, ParamValue, std::less<>>& values() const { return values_; }

 private:
  template <class T>
  const T& get(std::string_view name) const {
    const auto it = values_.find(name);
    ORRERY_CHECK(it != values_.end(), "parameter \"{}\" was not declared", name);
    const T* value = std::get_if<T>(&it->second);
    ORRERY_CHECK(value != nullptr, "parameter \"{}\" read as the wrong type", name);
    return *value;
  }
  std::map<std::string, ParamValue, std::less<>> values_;
};

// Checks `given` against `specs` and fills in defaults. An integer is accepted where a number
// is expected, and a number with no fractional part where an integer is. `at.where` is the
// JSON pointer of the parameter object; errors name the parameter under it.
Params resolve_params(std::string_view owner, const std::vector<ParamSpec>& specs, const GivenParams& given,
                      InputLocation at);

template <class Interface>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Interface>(const Params&)>;
  struct Entry {
    std::string name;
    std::string description;
    std::vector<ParamSpec> params;
    Factory factory;
  };

  // `family` names the kind of thing registered, for messages: "pipeline schedule".
  explicit Registry(std::string family) : family_(std::move(family)) {}

  void add(Entry entry) {
    ORRERY_CHECK(!entries_.contains(entry.name), "{} \"{}\" registered twice", family_, entry.name);
    for (const ParamSpec& p : entry.params) {
      ORRERY_CHECK(type_of(p.default_value) == p.type, "default of parameter \"{}\" of {} has the wrong type",
                   p.name, entry.name);
    }
    std::string name = entry.name;
    entries_.emplace(std::move(name), std::move(entry));
  }

  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }

  const Entry& get(std::string_view name, InputLocation at = {}) const {
    const auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    const std::vector<std::string> valid = names();
    std::string listed;
    for (const auto& n : valid) listed += (listed.empty() ? "" : ", ") + n;
    throw InputError(std::string(at.source), std::string(at.where),
                     fmt::format("unknown {} {}{}; valid: {}", family_, quote(name), did_you_mean(name, valid),
                                 listed.empty() ? "(none registered)" : listed));
  }

  std::unique_ptr<Interface> create(std::string_view name, const GivenParams& given = {},
                                    InputLocation at = {}) const {
    const Entry& entry = get(name, at);
    return entry.factory(resolve_params(fmt::format("{} \"{}\"", family_, entry.name), entry.params, given, at));
  }

  // Sorted by name.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, entry] : entries_) out.push_back(name);
    return out;
  }
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  const std::string& family() const { return family_; }

 private:
  std::string family_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace orrery::sim
