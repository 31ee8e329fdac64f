// Self-contained HTML reports with inline SVG charts: no script library, no network, no
// timestamps (the same inputs give a byte-identical file).
//   HtmlReport page("Schedulers");
//   page.section("Job completion time");
//   page.figure(bar_chart({.id = "jct", .title = "JCT", .y_label = "s", .categories = {"fifo", "sjf"},
//                          .series = {{.name = "p50", .values = {10, 8}, .high = {40, 30}}}}));
//   page.figure(heatmap_chart({.id = "tp-pp", .title = "tokens/s", .x_label = "tp", .y_label = "pp", .x_labels = {"1", "2"},
//                              .y_labels = {"1"}, .values = {9.5e4, kNoValue}, .notes = {"", "out of memory"}}));
//   page.figure(line_chart({.id = "scaling", .title = "Throughput vs GPUs", .x_label = "GPUs", .y_label = "tokens/s",
//                           .series = {{.name = "1f1b", .x = {8, 16, 32}, .y = {1e4, 1.9e4, 3.6e4}}}, .log_x = true, .markers = true}));
//   page.write("report.html");   // atomically; an impossible path is an InputError
// (Designated initializers as above compile warning-free: every field has a default.)
//
// Every chart is a `Figure`: one <svg class="orrery-plot" data-plot="ID"> with a title, axes
// with nice ticks and labels, a legend when it has several series, and a <title> tooltip on
// each bar and cell. Every data mark is a <path>, <rect> or <circle> with non-empty geometry.
// All text is escaped. Missing values (NaN) are skipped by every chart, and a chart with no
// data says so instead of drawing axes.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orrery::reports {

// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view text);

// Round tick values covering [lo, hi] at a step of 1, 2 or 5 x 10^k, about `target` of them
// (the first <= lo, the last >= hi). lo == hi gets a range around the value.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);
// A tick label: as many decimals as the step needs; k, M, G suffixes by the step ("20k", "1.5M").
std::string format_tick(double value, double step);
// A value for a table or tooltip: 4 significant digits, k/M/G suffixes from 10^4 up.
std::string format_value(double value);

// A rendered chart. `svg` is the markup; `caption` (optional) is printed under it.
struct Figure {
  std::string id{};
  std::string svg{};
  std::string caption{};
};

// --- bars ---------------------------------------------------------------------------------

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct BarSeries {
  std::string name{};
  std::vector<double> values{};  // one per category; NaN: no bar
  std::vector<double> high{};    // optional, one per category: a whisker from the bar's top to here (a p99)
};

// Grouped bars: one group per category, one bar per series (policy comparisons).
struct BarChart {
  std::string id{}, title{}, x_label{}, y_label{};
  std::vector<std::string> categories{};
  std::vector<BarSeries> series{};
  std::string high_label = "p99";  // the whiskers' name in tooltips and the legend
};
Figure bar_chart(const BarChart& chart);

// Stacked bars: one bar per category, a segment per series (the step breakdown per stage).
// Horizontal: categories down the left, values along the bottom.
struct StackedBarChart {
  std::string id{}, title{}, category_label{}, value_label{};
  std::vector<std::string> categories{};
  std::vector<BarSeries> segments{};  // `high` is ignored
  bool horizontal = false;
};
Figure stacked_bar_chart(const StackedBarChart& chart);

// --- timeline -----------------------------------------------------------------------------

struct TimelineSpan {
  int lane = 0;  // index into Timeline::lanes
  double start = 0, end = 0;
  std::string category{};  // one color per category, in order of first appearance
  std::string label{};     // tooltip
};

// Gantt lanes. With more than `max_marks` spans, neighbouring spans of a category in a lane are
// merged (then, if still too many, each lane is cut into pixel-wide bins painted with their
// busiest category) so that the chart holds at most `max_marks` rectangles.
struct Timeline {
  std::string id{}, title{}, x_label = "time (s)";
  std::vector<std::string> lanes{};
  std::vector<TimelineSpan> spans{};
  std::size_t max_marks = 3000;
  std::vector<std::string> category_order{};  // optional: these categories take the first colors, in this order
};
Figure timeline_chart(const Timeline& chart);

// --- lines --------------------------------------------------------------------------------

struct LineSeries {
  std::string name{};
  std::vector<double> x{}, y{};  // same length; points with a NaN are left out
  bool step = false;         // horizontal then vertical segments (an empirical CDF)
};

// Several series on shared axes (scaling curves, utilisation over time, CDFs). Log axes take
// positive values only; ticks at 1, 2, 5 x 10^k. y_min/y_max pin the value axis (NaN: from the data,
// including 0 for a linear axis).
struct LineChart {
  std::string id{}, title{}, x_label{}, y_label{};
  std::vector<LineSeries> series{};
  bool log_x = false, log_y = false;
  bool markers = false;  // a circle on every point (up to 60 points per series)
  std::vector<double> x_ticks{};  // optional: the x ticks to label (e.g. a sweep's GPU counts); empty: nice ticks
  double y_min = kNoValue, y_max = kNoValue;
};
Figure line_chart(const LineChart& chart);

// The empirical CDF of `samples` (NaNs dropped) as a step series: y = fraction of samples <= x,
// at most `max_points` steps (quantiles of the sorted samples beyond that).
LineSeries cdf_series(std::string name, std::vector<double> samples, std::size_t max_points = 400);

// --- heatmap ------------------------------------------------------------------------------

// A grid of values (a sweep over two parameters): rows are y_labels top to bottom, columns
// x_labels left to right; values row-major, NaN for a point with no value, drawn hatched grey with
// its `notes` entry (e.g. "out of memory") as tooltip. The color scale runs from the lowest to the
// highest value; higher_is_better only flips which end is labeled "better" (nothing when unset).
struct Heatmap {
  std::string id{}, title{}, x_label{}, y_label{}, value_label{};
  std::vector<std::string> x_labels{}, y_labels{};
  std::vector<double> values{};      // y_labels.size() x x_labels.size()
  std::vector<std::string> notes{};  // optional, same size: a tooltip line per cell
  bool show_values = true;         // print each value in its cell when cells are wide enough
};
Figure heatmap_chart(const Heatmap& chart);

// --- the document -------------------------------------------------------------------------

class HtmlReport {
 public:
  explicit HtmlReport(std::string title, std::string subtitle = "");

  void section(std::string_view heading);
  void paragraph(std::string_view text);
  // A two-column table of (name, value).
  void key_values(const std::vector<std::pair<std::string, std::string>>& rows);
  // A table with a header row; cells are text.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  void figure(const Figure& f);

  // The whole page: inline CSS, the figures, and a tiny script that marks each plot with its
  // rendered size (data-rendered) for the browser test; the page needs no script to display.
  std::string html() const;
  void write(const std::string& path) const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace orrery::reports
