#include "reports/report.hpp"

#include "sim/error.hpp"
#include "traces/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace orrery::reports {

struct Report::Impl {
  nlohmann::json root = nlohmann::json::object();  // std::map underneath: keys sorted
};

Report::Report() : impl_(std::make_unique<Impl>()) {}
Report::~Report() = default;
Report::Report(Report&&) noexcept = default;
Report& Report::operator=(Report&&) noexcept = default;

namespace {
nlohmann::json& at(nlohmann::json& root, std::string_view pointer) {
  ORRERY_CHECK(!pointer.empty() && pointer.front() == '/', "report key {} is not a JSON pointer", pointer);
  return root[nlohmann::json::json_pointer(std::string(pointer))];
}
}  // namespace

void Report::set(std::string_view pointer, std::int64_t value) { at(impl_->root, pointer) = value; }
void Report::set(std::string_view pointer, bool value) { at(impl_->root, pointer) = value; }
void Report::set(std::string_view pointer, std::string_view value) { at(impl_->root, pointer) = std::string(value); }
void Report::set(std::string_view pointer, double value) {
  // JSON has no NaN or infinity; a metric that is one is our bug.
  ORRERY_CHECK(std::isfinite(value), "report metric {} is not finite", pointer);
  at(impl_->root, pointer) = value;
}

std::string Report::to_json() const { return impl_->root.dump(2) + "\n"; }

void Report::write(const std::string& path) const { traces::write_file_atomically(path, to_json()); }

}  // namespace orrery::reports
