#include "sim/registry.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::sim {

std::string_view to_string(ParamType type) {
  switch (type) {
    case ParamType::boolean: return "boolean";
    case ParamType::integer: return "integer";
    case ParamType::number: return "number";
    case ParamType::string: return "string";
  }
  return "?";
}

ParamType type_of(const ParamValue& value) {
  switch (value.index()) {
    case 0: return ParamType::boolean;
    case 1: return ParamType::integer;
    case 2: return ParamType::number;
    default: return ParamType::string;
  }
}

namespace {
std::string_view article(ParamType type) { return type == ParamType::integer ? "an" : "a"; }
}  // namespace

std::string to_string(const ParamValue& value) {
  switch (type_of(value)) {
    case ParamType::boolean: return std::get<bool>(value) ? "true" : "false";
    case ParamType::integer: return std::to_string(std::get<std::int64_t>(value));
    case ParamType::number: return fmt::format("{}", std::get<double>(value));
    case ParamType::string: return quote(std::get<std::string>(value));
  }
  return "?";
}

Params resolve_params(std::string_view owner, const std::vector<ParamSpec>& specs, const GivenParams& given,
                      InputLocation at) {
  std::map<std::string, ParamValue, std::less<>> values;
  for (const ParamSpec& spec : specs) values.emplace(spec.name, spec.default_value);

  for (const auto& [name, value] : given) {
    const std::string where = fmt::format("{}/{}", at.where, name);
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      std::vector<std::string> valid;
      for (const ParamSpec& s : specs) valid.push_back(s.name);
      std::string listed;
      for (const auto& n : valid) listed += (listed.empty() ? "" : ", ") + n;
      throw InputError(std::string(at.source), where,
                       fmt::format("unknown parameter {} of {}{}; valid: {}", quote(name), owner,
                                   did_you_mean(name, valid), listed.empty() ? "(it takes none)" : listed));
    }
    ParamValue accepted = value;
    const ParamType found = type_of(value);
    if (spec->type == ParamType::number && found == ParamType::integer) {
      accepted = static_cast<double>(std::get<std::int64_t>(value));
    } else if (spec->type == ParamType::integer && found == ParamType::number) {
      const double d = std::get<double>(value);
      if (d == std::trunc(d) && std::fabs(d) < 9.0e15) accepted = static_cast<std::int64_t>(d);
    }
    if (type_of(accepted) != spec->type) {
      throw InputError(std::string(at.source), where,
                       fmt::format("parameter {} of {}: found {} {} {}, expected {} {}", quote(name), owner,
                                   article(found), to_string(found), to_string(value), article(spec->type),
                                   to_string(spec->type)));
    }
    values[name] = std::move(accepted);
  }
  return Params(std::move(values));
}

}  // namespace orrery::sim
