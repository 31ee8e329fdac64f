// `orrery sweep --html`: the points' status, the best points, a heatmap over two axes and
// scaling curves over the numeric axes, each of the plan's metric (studies/sweep.hpp).
#include "reports/html_pages.hpp"

#include "reports/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace orrery::reports {


namespace {

using nlohmann::json;

// Distinct values of a column among the rows, in order of first appearance (a grid's order).
std::vector<json> distinct(const json& rows, const std::string& column) {
  std::vector<json> out;
  for (const json& r : rows) {
    const json& v = r.contains(column) ? r.at(column) : json();
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

std::string label(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

double metric_of(const json& row, const std::string& metric) {
  if (row.at("status") != "ok" || !row.contains(metric) || !row.at(metric).is_number()) return kNoValue;
  return row.at(metric).get<double>();
}

bool better(double a, double b, bool maximize) { return std::isnan(b) || (maximize ? a > b : a < b); }

// Why a cell has no value: the statuses of its points ("2 out of memory, 1 invalid").
std::string why_empty(const std::map<std::string, int>& statuses) {
  std::string text;
  for (const auto& [status, n] : statuses) {
    const std::string what = status == "oom" ? "out of memory" : status == "ok" ? "ok without the metric" : status;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", n, what);
  }
  return text.empty() ? "no point" : text;
}

}  // namespace

void write_sweep_html(const std::string& path, const SweepPage& plan, const std::vector<std::string>& columns, const json& rows) {
  HtmlReport page(fmt::format("Sweep: {}", plan.source), fmt::format("{} points of `orrery {}`, {} design", rows.size(), plan.command, plan.design));
  std::map<std::string, int> statuses;
  for (const json& r : rows) ++statuses[r.at("status").get<std::string>()];
  std::vector<std::pair<std::string, std::string>> summary;
  for (const auto& [status, n] : statuses) summary.push_back({status == "oom" ? "out of memory" : status, std::to_string(n)});
  page.section("Points");
  page.key_values(summary);

  // The metric: the plan's objective, else the first numeric metric column.
  std::string metric = plan.objective;
  bool maximize = plan.maximize;
  std::vector<std::string> axis_names;
  for (const std::string& a : plan.axes) axis_names.push_back(a);
  if (metric.empty()) {
    for (std::size_t c = 3 + axis_names.size(); c < columns.size() && metric.empty(); ++c) {
      for (const json& r : rows) {
        if (r.contains(columns[c]) && r.at(columns[c]).is_number()) {
          metric = columns[c];
          break;
        }
      }
    }
    maximize = true;
  }
  if (metric.empty()) {
    page.paragraph("No point reported a numeric metric, so there is nothing to plot.");
    page.write(path);
    return;
  }
  page.paragraph(fmt::format("Plotted metric: {} ({} is better){}.", metric, maximize ? "higher" : "lower",
                             plan.objective.empty() ? "; the plan names no objective, so this is its first numeric metric" : ""));

  // The best points.
  std::vector<std::pair<double, std::size_t>> ranked;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double v = metric_of(rows[i], metric);
    if (!std::isnan(v)) ranked.push_back({v, i});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) { return maximize ? a.first > b.first : a.first < b.first; });
  std::vector<std::string> header = {"point"};
  header.insert(header.end(), axis_names.begin(), axis_names.end());
  header.push_back(metric);
  std::vector<std::vector<std::string>> best;
  for (std::size_t k = 0; k < std::min<std::size_t>(10, ranked.size()); ++k) {
    const json& r = rows[ranked[k].second];
    std::vector<std::string> cells = {r.at("point").dump()};
    for (const std::string& a : axis_names) cells.push_back(label(r.at(a)));
    cells.push_back(format_value(ranked[k].first));
    best.push_back(std::move(cells));
  }
  page.section(fmt::format("Best points by {}", metric));
  page.table(header, best);

  // Axes that vary (more than one value), and those with few enough values for a grid.
  std::vector<std::string> varied, categorical, numeric;
  for (const std::string& a : axis_names) {
    const std::vector<json> values = distinct(rows, a);
    if (values.size() < 2) continue;
    varied.push_back(a);
    if (values.size() <= 40) categorical.push_back(a);
    if (std::all_of(values.begin(), values.end(), [](const json& v) { return v.is_number(); })) numeric.push_back(a);
  }
  const std::string others = varied.size() > 2 ? fmt::format(" (each cell: the {} over the other axes)", maximize ? "highest" : "lowest") : "";

  if (categorical.size() >= 2) {
    const std::string& x = categorical[0];
    const std::string& y = categorical[1];
    const std::vector<json> xs = distinct(rows, x), ys = distinct(rows, y);
    Heatmap h;
    h.id = "sweep-heatmap";
    h.title = fmt::format("{} by {} and {}{}", metric, x, y, others);
    h.x_label = x;
    h.y_label = y;
    h.value_label = metric;
    for (const json& v : xs) h.x_labels.push_back(label(v));
    for (const json& v : ys) h.y_labels.push_back(label(v));
    h.values.assign(xs.size() * ys.size(), kNoValue);
    std::vector<std::map<std::string, int>> cell_statuses(h.values.size());
    for (const json& r : rows) {
      const auto xi = static_cast<std::size_t>(std::find(xs.begin(), xs.end(), r.at(x)) - xs.begin());
      const auto yi = static_cast<std::size_t>(std::find(ys.begin(), ys.end(), r.at(y)) - ys.begin());
      const std::size_t cell = yi * xs.size() + xi;
      const double v = metric_of(r, metric);
      if (!std::isnan(v) && better(v, h.values[cell], maximize)) h.values[cell] = v;
      ++cell_statuses[cell][r.at("status").get<std::string>()];
    }
    h.notes.resize(h.values.size());
    for (std::size_t c = 0; c < h.values.size(); ++c) {
      if (std::isnan(h.values[c])) h.notes[c] = why_empty(cell_statuses[c]);
    }
    page.section("Heatmap");
    page.figure(heatmap_chart(h));
  }

  // Scaling curves: the metric against each numeric axis, one line per value of another axis
  // with a few values.
  int curves = 0;
  for (const std::string& x : numeric) {
    if (curves == 3) break;
    std::string by;
    for (const std::string& a : categorical) {
      if (a != x && distinct(rows, a).size() <= 8) {
        by = a;
        break;
      }
    }
    const std::vector<json> groups = by.empty() ? std::vector<json>{json()} : distinct(rows, by);
    LineChart chart;
    chart.id = fmt::format("sweep-curve-{}", curves);
    chart.title = fmt::format("{} against {}{}{}", metric, x, by.empty() ? "" : fmt::format(", one line per {}", by), varied.size() > (by.empty() ? 1u : 2u)
                                                                                                                       ? fmt::format(" ({} over the other axes)", maximize ? "highest" : "lowest")
                                                                                                                       : "");
    chart.x_label = x;
    chart.y_label = metric;
    chart.markers = true;
    const std::vector<json> xs = distinct(rows, x);
    std::vector<double> sorted_x;
    for (const json& v : xs) sorted_x.push_back(v.get<double>());
    std::sort(sorted_x.begin(), sorted_x.end());
    chart.log_x = sorted_x.front() > 0 && sorted_x.back() / sorted_x.front() >= 16;
    for (const json& g : groups) {
      LineSeries s;
      s.name = by.empty() ? metric : fmt::format("{} = {}", by, label(g));
      std::map<double, double> best_at;
      for (const json& r : rows) {
        if (!by.empty() && r.at(by) != g) continue;
        const double v = metric_of(r, metric);
        if (std::isnan(v)) continue;
        const double xv = r.at(x).get<double>();
        const auto it = best_at.find(xv);
        if (it == best_at.end() || better(v, it->second, maximize)) best_at[xv] = v;
      }
      for (const auto& [xv, v] : best_at) {
        s.x.push_back(xv);
        s.y.push_back(v);
      }
      if (!s.x.empty()) chart.series.push_back(std::move(s));
    }
    if (chart.series.empty()) continue;
    if (curves == 0) page.section("Scaling curves");
    page.figure(line_chart(chart));
    ++curves;
  }
  page.write(path);
}

}  // namespace orrery::reports
