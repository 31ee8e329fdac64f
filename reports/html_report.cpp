#include "reports/html_report.hpp"

#include "traces/atomic_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>

namespace orrery::reports {

namespace {

constexpr double kWidth = 760;
constexpr double kFont = 11;  // axis and legend text, px

// Tableau 10: distinct, readable on white, colorblind-tolerant in its first few entries.
constexpr std::array<const char*, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

const char* palette(std::size_t i) { return kPalette[i % kPalette.size()]; }

bool finite(double v) { return std::isfinite(v); }

std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

// Rough width of a label in px (sans-serif averages ~0.6 em per character).
double text_width(std::string_view s, double font = kFont) { return static_cast<double>(code_points(s)) * font * 0.6; }

// At most `max` characters (code points), with an ellipsis when cut.
std::string shorten(std::string_view s, std::size_t max) {
  if (code_points(s) <= max) return std::string(s);
  std::string out;
  std::size_t n = 0;
  for (const char c : s) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80 && ++n > max - 1) break;
    out += c;
  }
  return out + "\u2026";
}

// Coordinates with one decimal; no "-0.0".
std::string num(double v) {
  if (std::fabs(v) < 0.05) return "0";
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

// A mapping from data to pixels, linear or log10.
struct Scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  bool log = false;
  double t(double v) const { return log ? std::log10(v) : v; }
  double operator()(double v) const {
    const double a = t(d0), b = t(d1);
    if (log && !(v > 0)) return r0;
    return b == a ? (r0 + r1) / 2 : r0 + (t(v) - a) / (b - a) * (r1 - r0);
  }
};

std::vector<double> log_ticks(double lo, double hi) {
  const int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 <= e0) e1 = e0 + 1;
  const int decades = e1 - e0;
  std::vector<double> mantissas = decades <= 2 ? std::vector<double>{1, 2, 5} : std::vector<double>{1};
  const int every = std::max(1, (decades + 6) / 7);  // at most ~7 labels
  std::vector<double> all;
  for (int e = e0; e <= e1; ++e) {
    if ((e - e0) % every != 0) continue;
    for (const double m : mantissas) all.push_back(m * std::pow(10.0, e));
  }
  // Trim to the smallest range of ticks that covers [lo, hi].
  std::vector<double> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool below_needed = i + 1 < all.size() && all[i + 1] <= lo * (1 + 1e-12);
    const bool above_needed = i > 0 && all[i - 1] >= hi * (1 - 1e-12);
    if (!below_needed && !above_needed) out.push_back(all[i]);
  }
  return out;
}

struct LegendItem {
  std::string name;
  std::string color;
  int kind = 0;  // 0 swatch, 1 line, 2 whisker, 3 hatched
};

// One SVG document under construction.
class Svg {
 public:
  Svg(std::string_view id, double height, std::string_view title) : height_(height) {
    out_ = fmt::format(R"(<svg class="orrery-plot" data-plot="{}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)",
                       html_escape(id), num(kWidth), num(height), num(kWidth), num(height));
    out_ += "\n<title>" + html_escape(title) + "</title>\n";
    text(kWidth / 2, 18, title, "middle", "ttl");
  }
  void text(double x, double y, std::string_view s, std::string_view anchor = "start", std::string_view cls = "", double rotate = 0,
            std::string_view tooltip = "") {
    fmt::format_to(std::back_inserter(out_), R"(<text x="{}" y="{}")", num(x), num(y));
    if (anchor != "start") fmt::format_to(std::back_inserter(out_), R"( text-anchor="{}")", anchor);
    if (!cls.empty()) fmt::format_to(std::back_inserter(out_), R"( class="{}")", cls);
    if (rotate != 0) fmt::format_to(std::back_inserter(out_), R"~( transform="rotate({} {} {})")~", num(rotate), num(x), num(y));
    out_ += '>';
    if (!tooltip.empty()) out_ += "<title>" + html_escape(tooltip) + "</title>";
    out_ += html_escape(s) + "</text>\n";
  }
  void line(double x1, double y1, double x2, double y2, std::string_view cls) {
    fmt::format_to(std::back_inserter(out_), R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="{}"/>)", num(x1), num(y1), num(x2), num(y2), cls);
    out_ += '\n';
  }
  // A rectangle at least a fraction of a pixel in each direction, so that it has geometry.
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip, std::string_view cls = "mark") {
    w = std::max(w, 0.3);
    h = std::max(h, 0.3);
    fmt::format_to(std::back_inserter(out_), R"(<rect class="{}" x="{}" y="{}" width="{}" height="{}" fill="{}")", cls, num(x), num(y), num(w), num(h), fill);
    close("rect", tooltip);
  }
  void path(std::string_view d, std::string_view stroke, double width, std::string_view tooltip, std::string_view cls = "mark") {
    fmt::format_to(std::back_inserter(out_), R"(<path class="{}" d="{}" fill="none" stroke="{}" stroke-width="{}")", cls, d, stroke, num(width));
    close("path", tooltip);
  }
  void circle(double x, double y, double r, std::string_view fill, std::string_view tooltip) {
    fmt::format_to(std::back_inserter(out_), R"(<circle class="mark" cx="{}" cy="{}" r="{}" fill="{}")", num(x), num(y), num(r), fill);
    close("circle", tooltip);
  }
  void raw(std::string_view s) { out_ += s; }

  // Legend items in rows from (x, y) within `width`; returns the height used.
  static double legend_height(const std::vector<LegendItem>& items, double width) {
    if (items.size() < 2) return items.empty() ? 0 : 18;
    double x = 0, rows = 1;
    for (const LegendItem& it : items) {
      const double w = 20 + text_width(it.name) + 16;
      if (x > 0 && x + w > width) {
        ++rows;
        x = 0;
      }
      x += w;
    }
    return rows * 18;
  }
  void legend(const std::vector<LegendItem>& items, double x0, double y0, double width) {
    double x = 0, y = y0;
    for (const LegendItem& it : items) {
      const double w = 20 + text_width(it.name) + 16;
      if (x > 0 && x + w > width) {
        x = 0;
        y += 18;
      }
      const double cx = x0 + x, cy = y + 9;
      if (it.kind == 0) {
        rect(cx, cy - 5, 14, 10, it.color, "", "key");
      } else if (it.kind == 1) {
        path(fmt::format("M{} {}H{}", num(cx), num(cy), num(cx + 14)), it.color, 2.5, "", "key");
      } else if (it.kind == 2) {
        path(fmt::format("M{} {}V{}M{} {}H{}", num(cx + 7), num(cy - 6), num(cy + 6), num(cx + 3), num(cy - 6), num(cx + 11)), it.color, 1.5, "", "key");
      } else {
        rect(cx, cy - 5, 14, 10, it.color, "", "key");
      }
      text(cx + 20, cy + 4, it.name, "start", "lg");
      x += w;
    }
  }

  std::string finish(bool empty = false) {
    if (empty) out_.replace(out_.find(" role=\"img\">"), 12, " role=\"img\" data-empty=\"1\">");
    out_ += "</svg>";
    return std::move(out_);
  }
  double height() const { return height_; }

 private:
  void close(std::string_view tag, std::string_view tooltip) {
    if (tooltip.empty()) {
      out_ += "/>\n";
    } else {
      out_ += "><title>" + html_escape(tooltip) + "</title></" + std::string(tag) + ">\n";
    }
  }
  std::string out_;
  double height_;
};

Figure empty_figure(std::string_view id, std::string_view title) {
  Svg svg(id, 80, title);
  svg.text(kWidth / 2, 52, "no data", "middle", "note");
  return {std::string(id), svg.finish(true), ""};
}

// Horizontal gridlines and labels of a value axis on the left.
void value_axis_left(Svg& svg, const Scale& s, const std::vector<double>& ticks, double x0, double x1, std::string_view label, double label_x) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double t : ticks) {
    const double y = s(t);
    svg.line(x0, y, x1, y, "grid");
    svg.text(x0 - 6, y + 4, s.log ? format_value(t) : format_tick(t, step), "end", "tick");
  }
  svg.line(x0, s.r0, x0, s.r1, "axis");
  const double mid = (s.r0 + s.r1) / 2;
  if (!label.empty()) svg.text(label_x, mid, label, "middle", "lbl", -90);
}

// Vertical gridlines and labels of a value axis at the bottom.
void value_axis_bottom(Svg& svg, const Scale& s, const std::vector<double>& ticks, double y0, double y1, std::string_view label) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double t : ticks) {
    const double x = s(t);
    svg.line(x, y0, x, y1, "grid");
    svg.text(x, y1 + 15, s.log ? format_value(t) : format_tick(t, step), "middle", "tick");
  }
  svg.line(s.r0, y1, s.r1, y1, "axis");
  if (!label.empty()) svg.text((s.r0 + s.r1) / 2, y1 + 33, label, "middle", "lbl");
}

double max_tick_width(const std::vector<double>& ticks, bool log) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  double w = 0;
  for (const double t : ticks) w = std::max(w, text_width(log ? format_value(t) : format_tick(t, step)));
  return w;
}

// Category labels under bands (rotated when they do not fit); returns the height they take.
double band_labels_height(const std::vector<std::string>& cats, double band) {
  double w = 0;
  for (const auto& c : cats) w = std::max(w, text_width(shorten(c, 28)));
  return w + 6 > band ? std::min(w * 0.6, 140.0) + 16 : 18;
}
void band_labels(Svg& svg, const std::vector<std::string>& cats, double x0, double band, double y) {
  double w = 0;
  for (const auto& c : cats) w = std::max(w, text_width(shorten(c, 28)));
  const bool rotate = w + 6 > band;
  for (std::size_t i = 0; i < cats.size(); ++i) {
    const double x = x0 + band * (static_cast<double>(i) + 0.5);
    const std::string s = shorten(cats[i], 28);
    if (rotate) {
      svg.text(x + 4, y + 12, s, "end", "tick", -35, s != cats[i] ? cats[i] : "");
    } else {
      svg.text(x, y + 15, s, "middle", "tick", 0, s != cats[i] ? cats[i] : "");
    }
  }
}

std::vector<double> value_ticks(double lo, double hi) {
  if (!(hi > lo)) {
    if (lo == 0) return nice_ticks(0, 1);
    return nice_ticks(std::min(0.0, lo), std::max(0.0, hi));
  }
  return nice_ticks(lo, hi);
}

std::string series_color(const std::string& given, std::size_t i) { return given.empty() ? palette(i) : given; }

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and newline are not allowed in HTML text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!finite(lo) || !finite(hi)) return {0, 1};
  if (lo > hi) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> out;
  for (double k = first; k <= last; ++k) {
    const double v = k * step;
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  if (out.size() < 2) out.push_back(out.back() + step);
  return out;
}

std::string format_tick(double value, double step) {
  step = std::fabs(step);
  const double scale = step >= 5e8 ? 1e9 : step >= 5e5 ? 1e6 : step >= 1e3 ? 1e3 : 1;
  const char* suffix = scale == 1e9 ? "G" : scale == 1e6 ? "M" : scale == 1e3 ? "k" : "";
  const double s = step / scale;
  const int decimals = s > 0 ? std::max(0, static_cast<int>(std::ceil(-std::log10(s) - 1e-9))) : 0;
  std::string out = fmt::format("{:.{}f}", value / scale, std::min(decimals, 9));
  if (out.find_first_not_of("-0.") == std::string::npos) out = "0";  // no "-0" or "0.00"
  return out == "0" ? out : out + suffix;
}

std::string format_value(double value) {
  if (!finite(value)) return "n/a";
  const double a = std::fabs(value);
  if (a >= 1e9) return fmt::format("{:.4g}G", value / 1e9);
  if (a >= 1e6) return fmt::format("{:.4g}M", value / 1e6);
  if (a >= 1e4) return fmt::format("{:.4g}k", value / 1e3);
  if (a < 1e-12) return "0";
  return fmt::format("{:.4g}", value);
}

// --- bars ------------------------------------------------------------------------------------

Figure bar_chart(const BarChart& c) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const BarSeries& s : c.series) {
    for (std::size_t i = 0; i < c.categories.size(); ++i) {
      for (const double v : {i < s.values.size() ? s.values[i] : kNoValue, i < s.high.size() ? s.high[i] : kNoValue}) {
        if (!finite(v)) continue;
        any = true;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (!any) return empty_figure(c.id, c.title);
  const std::vector<double> ticks = value_ticks(lo, hi);
  std::vector<LegendItem> legend;
  bool whiskers = false;
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    if (!c.series[k].name.empty()) legend.push_back({c.series[k].name, series_color("", k), 0});
    whiskers = whiskers || !c.series[k].high.empty();
  }
  if (c.series.size() < 2 && !whiskers) legend.clear();  // one series alone: the title names it
  if (whiskers) legend.push_back({c.high_label, "#333", 2});
  const double left = 18 + 8 + max_tick_width(ticks, false) + 8, right = 16;
  const double band = (kWidth - left - right) / static_cast<double>(std::max<std::size_t>(1, c.categories.size()));
  const double legend_h = Svg::legend_height(legend, kWidth - left - right);
  const double top = 32 + legend_h, bottom = band_labels_height(c.categories, band) + (c.x_label.empty() ? 8 : 24);
  const double plot_h = 240, height = top + plot_h + bottom;
  Svg svg(c.id, height, c.title);
  if (!legend.empty()) svg.legend(legend, left, 26, kWidth - left - right);
  const Scale y{ticks.front(), ticks.back(), top + plot_h, top, false};
  value_axis_left(svg, y, ticks, left, kWidth - right, c.y_label, 14);
  band_labels(svg, c.categories, left, band, top + plot_h);
  if (!c.x_label.empty()) svg.text((left + kWidth - right) / 2, height - 8, c.x_label, "middle", "lbl");
  const double n = static_cast<double>(std::max<std::size_t>(1, c.series.size()));
  const double bar_w = band * 0.8 / n;
  for (std::size_t i = 0; i < c.categories.size(); ++i) {
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      const BarSeries& s = c.series[k];
      const double v = i < s.values.size() ? s.values[i] : kNoValue;
      if (!finite(v)) continue;
      const double x = left + band * static_cast<double>(i) + band * 0.1 + bar_w * static_cast<double>(k);
      const double hv = i < s.high.size() ? s.high[i] : kNoValue;
      std::string tip = c.categories[i] + (s.name.empty() ? "" : " \u2014 " + s.name) + ": " + format_value(v);
      if (finite(hv)) tip += fmt::format(" ({} {})", c.high_label, format_value(hv));
      if (v != 0) svg.rect(x, std::min(y(v), y(0)), bar_w - 1, std::fabs(y(v) - y(0)), series_color("", k), tip);
      if (finite(hv) && hv != v) {
        const double cx = x + (bar_w - 1) / 2, q = std::min(6.0, bar_w / 4);
        svg.path(fmt::format("M{} {}V{}M{} {}H{}", num(cx), num(y(v)), num(y(hv)), num(cx - q), num(y(hv)), num(cx + q)), "#333", 1.5, tip);
      }
    }
  }
  svg.line(left, y(0), kWidth - right, y(0), "axis");
  return {c.id, svg.finish(), ""};
}

Figure stacked_bar_chart(const StackedBarChart& c) {
  const std::size_t n = c.categories.size();
  std::vector<double> total(n, 0);
  bool any = false;
  for (const BarSeries& s : c.segments) {
    for (std::size_t i = 0; i < n && i < s.values.size(); ++i) {
      if (finite(s.values[i]) && s.values[i] > 0) {
        total[i] += s.values[i];
        any = true;
      }
    }
  }
  if (!any) return empty_figure(c.id, c.title);
  const std::vector<double> ticks = value_ticks(0, *std::max_element(total.begin(), total.end()));
  std::vector<LegendItem> legend;
  for (std::size_t k = 0; k < c.segments.size(); ++k) {
    // A segment that is zero everywhere has nothing to point at.
    const auto& v = c.segments[k].values;
    if (std::any_of(v.begin(), v.end(), [](double x) { return finite(x) && x > 0; })) legend.push_back({c.segments[k].name, series_color("", k), 0});
  }
  const double right = 16;
  const auto color = [&](std::size_t k) { return series_color("", k); };
  const auto tip = [&](std::size_t i, std::size_t k, double v) {
    return fmt::format("{} \u2014 {}: {} ({:.1f}% of {})", c.categories[i], c.segments[k].name, format_value(v), total[i] > 0 ? 100 * v / total[i] : 0.0,
                       format_value(total[i]));
  };
  if (c.horizontal) {
    double label_w = 0;
    for (const auto& cat : c.categories) label_w = std::max(label_w, text_width(shorten(cat, 28)));
    const double left = (c.category_label.empty() ? 8 : 24) + label_w + 8;
    const double legend_h = Svg::legend_height(legend, kWidth - left - right);
    const double top = 32 + legend_h;
    const double band = std::clamp(360.0 / static_cast<double>(std::max<std::size_t>(1, n)), 10.0, 34.0);
    const double plot_h = band * static_cast<double>(n), height = top + plot_h + 44;
    Svg svg(c.id, height, c.title);
    if (legend.size() > 1) svg.legend(legend, left, 26, kWidth - left - right);
    const Scale x{ticks.front(), ticks.back(), left, kWidth - right, false};
    value_axis_bottom(svg, x, ticks, top, top + plot_h, c.value_label);
    for (std::size_t i = 0; i < n; ++i) {
      const double yc = top + band * (static_cast<double>(i) + 0.5);
      const std::string s = shorten(c.categories[i], 28);
      svg.text(left - 6, yc + 4, s, "end", "tick", 0, s != c.categories[i] ? c.categories[i] : "");
      double at = 0;
      for (std::size_t k = 0; k < c.segments.size(); ++k) {
        const double v = i < c.segments[k].values.size() ? c.segments[k].values[i] : kNoValue;
        if (!finite(v) || v <= 0) continue;
        svg.rect(x(at), yc - band * 0.4, x(at + v) - x(at), band * 0.8, color(k), tip(i, k, v));
        at += v;
      }
    }
    if (!c.category_label.empty()) svg.text(14, top + plot_h / 2, c.category_label, "middle", "lbl", -90);
    return {c.id, svg.finish(), ""};
  }
  const double left = 18 + 8 + max_tick_width(ticks, false) + 8;
  const double band = (kWidth - left - right) / static_cast<double>(std::max<std::size_t>(1, n));
  const double legend_h = Svg::legend_height(legend, kWidth - left - right);
  const double top = 32 + legend_h, bottom = band_labels_height(c.categories, band) + (c.category_label.empty() ? 8 : 24);
  const double plot_h = 240, height = top + plot_h + bottom;
  Svg svg(c.id, height, c.title);
  if (legend.size() > 1) svg.legend(legend, left, 26, kWidth - left - right);
  const Scale y{ticks.front(), ticks.back(), top + plot_h, top, false};
  value_axis_left(svg, y, ticks, left, kWidth - right, c.value_label, 14);
  band_labels(svg, c.categories, left, band, top + plot_h);
  if (!c.category_label.empty()) svg.text((left + kWidth - right) / 2, height - 8, c.category_label, "middle", "lbl");
  for (std::size_t i = 0; i < n; ++i) {
    double at = 0;
    const double x = left + band * static_cast<double>(i) + band * 0.15;
    for (std::size_t k = 0; k < c.segments.size(); ++k) {
      const double v = i < c.segments[k].values.size() ? c.segments[k].values[i] : kNoValue;
      if (!finite(v) || v <= 0) continue;
      svg.rect(x, y(at + v), band * 0.7, y(at) - y(at + v), color(k), tip(i, k, v));
      at += v;
    }
  }
  return {c.id, svg.finish(), ""};
}

// --- timeline --------------------------------------------------------------------------------

Figure timeline_chart(const Timeline& c) {
  constexpr std::size_t kMaxLanes = 200;
  const std::size_t lanes = std::min(c.lanes.size(), kMaxLanes);
  double t0 = 0, t1 = 0;
  bool any = false;
  std::vector<std::string> categories;  // in order of first appearance
  std::map<std::string, std::size_t, std::less<>> category_index;
  for (const std::string& cat : c.category_order) {
    if (category_index.try_emplace(cat, categories.size()).second) categories.push_back(cat);
  }
  std::vector<bool> used(categories.size(), false);
  std::vector<std::vector<std::size_t>> by_lane(lanes);
  for (std::size_t i = 0; i < c.spans.size(); ++i) {
    const TimelineSpan& s = c.spans[i];
    if (s.lane < 0 || static_cast<std::size_t>(s.lane) >= lanes || !finite(s.start) || !finite(s.end) || s.end < s.start) continue;
    t0 = any ? std::min(t0, s.start) : s.start;
    t1 = any ? std::max(t1, s.end) : s.end;
    any = true;
    const auto [cat, added] = category_index.try_emplace(s.category, categories.size());
    if (added) {
      categories.push_back(s.category);
      used.push_back(false);
    }
    used[cat->second] = true;
    by_lane[static_cast<std::size_t>(s.lane)].push_back(i);
  }
  if (!any) return empty_figure(c.id, c.title);
  std::vector<LegendItem> legend;
  for (std::size_t k = 0; k < categories.size(); ++k) {
    if (used[k]) legend.push_back({categories[k], palette(k), 0});
  }
  const std::vector<double> ticks = nice_ticks(t0, t1 > t0 ? t1 : t0 + 1);
  double label_w = 0;
  for (std::size_t l = 0; l < lanes; ++l) label_w = std::max(label_w, text_width(shorten(c.lanes[l], 30)));
  const double left = label_w + 14, right = 16;
  const double plot_w = kWidth - left - right;
  const double legend_h = Svg::legend_height(legend, plot_w);
  const double top = 32 + legend_h;
  const double lane_h = std::clamp(420.0 / static_cast<double>(std::max<std::size_t>(1, lanes)), 6.0, 22.0);
  const double plot_h = lane_h * static_cast<double>(lanes), height = top + plot_h + 44;
  Svg svg(c.id, height, c.title);
  if (!legend.empty()) svg.legend(legend, left, 26, plot_w);
  const Scale x{ticks.front(), ticks.back(), left, kWidth - right, false};
  value_axis_bottom(svg, x, ticks, top, top + plot_h, c.x_label);

  // The marks: each span, or merged runs when there are too many.
  struct Mark {
    std::size_t lane, category;
    double start, end;
    std::size_t count;  // spans it stands for
    std::size_t span;   // the span, when count == 1
  };
  std::vector<Mark> marks;
  const auto exact = [&](double gap) {
    marks.clear();
    for (std::size_t l = 0; l < lanes; ++l) {
      // In time order; a span joins the mark before it when of the same category and within
      // `gap` of its end (another category in between breaks the run).
      std::vector<std::size_t> idx = by_lane[l];
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return c.spans[a].start < c.spans[b].start; });
      for (const std::size_t i : idx) {
        const TimelineSpan& s = c.spans[i];
        const std::size_t cat = category_index.find(s.category)->second;
        if (gap >= 0 && !marks.empty() && marks.back().lane == l && marks.back().category == cat && s.start <= marks.back().end + gap) {
          marks.back().end = std::max(marks.back().end, s.end);
          ++marks.back().count;
        } else {
          marks.push_back({l, cat, s.start, s.end, 1, i});
        }
      }
    }
  };
  std::size_t total = 0;
  for (const auto& v : by_lane) total += v.size();
  const double pixel = (ticks.back() - ticks.front()) / plot_w;
  std::string how;
  if (total <= c.max_marks) {
    exact(-1);
  } else {
    for (double gap = pixel / 2; gap <= pixel * 2; gap *= 2) {
      exact(gap);
      if (marks.size() <= c.max_marks) break;
    }
    how = "neighbouring spans of a category less than two pixels apart merged";
    if (marks.size() > c.max_marks) {
      // Pixel bins, each painted with the category busiest in it.
      const std::size_t bins = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(plot_w), c.max_marks / std::max<std::size_t>(1, lanes)));
      const double bin_t = (ticks.back() - ticks.front()) / static_cast<double>(bins);
      marks.clear();
      std::vector<double> busy(bins * categories.size());
      std::vector<std::size_t> counts(bins);
      for (std::size_t l = 0; l < lanes; ++l) {
        std::fill(busy.begin(), busy.end(), 0.0);
        std::fill(counts.begin(), counts.end(), 0);
        for (const std::size_t i : by_lane[l]) {
          const TimelineSpan& s = c.spans[i];
          const std::size_t cat = category_index.find(s.category)->second;
          const double a = (s.start - ticks.front()) / bin_t, b = (s.end - ticks.front()) / bin_t;
          const auto first = static_cast<std::size_t>(std::clamp(std::floor(a), 0.0, static_cast<double>(bins - 1)));
          const auto last = static_cast<std::size_t>(std::clamp(std::floor(b), 0.0, static_cast<double>(bins - 1)));
          ++counts[first];
          for (std::size_t k = first; k <= last; ++k) {
            const double lo = std::max(a, static_cast<double>(k)), hi = std::min(b, static_cast<double>(k + 1));
            busy[k * categories.size() + cat] += std::max(hi - lo, 1e-6);
          }
        }
        for (std::size_t k = 0; k < bins; ++k) {
          std::size_t best = 0;
          double most = 0;
          for (std::size_t cat = 0; cat < categories.size(); ++cat) {
            if (busy[k * categories.size() + cat] > most) {
              most = busy[k * categories.size() + cat];
              best = cat;
            }
          }
          if (most <= 0) continue;
          const double a = ticks.front() + bin_t * static_cast<double>(k), b = a + bin_t;
          if (!marks.empty() && marks.back().lane == l && marks.back().category == best && marks.back().end >= a - bin_t * 1e-9) {
            marks.back().end = b;
            marks.back().count += counts[k];
          } else {
            marks.push_back({l, best, a, b, counts[k], 0});
          }
        }
      }
      how = fmt::format("each lane cut into {} bins painted with their busiest category", bins);
    }
  }
  for (std::size_t l = 0; l < lanes; ++l) {
    const double yc = top + lane_h * (static_cast<double>(l) + 0.5);
    if (lane_h >= 9 || l % static_cast<std::size_t>(std::ceil(9 / lane_h)) == 0) {
      const std::string s = shorten(c.lanes[l], 30);
      svg.text(left - 6, yc + 4, s, "end", "tick", 0, s != c.lanes[l] ? c.lanes[l] : "");
    }
  }
  for (const Mark& m : marks) {
    const double y = top + lane_h * static_cast<double>(m.lane) + lane_h * 0.1;
    const std::string tip = m.count == 1 && how.empty()
                                ? fmt::format("{} ({}): {} \u2013 {}", c.spans[m.span].label, categories[m.category], format_value(m.start), format_value(m.end))
                                : fmt::format("{}: {} spans, {} \u2013 {}", categories[m.category], m.count, format_value(m.start), format_value(m.end));
    svg.rect(x(m.start), y, x(m.end) - x(m.start), lane_h * 0.8, palette(m.category), tip);
  }
  std::string caption;
  if (!how.empty()) caption = fmt::format("{} spans drawn as {} marks ({}).", total, marks.size(), how);
  if (c.lanes.size() > lanes) caption += fmt::format(" The first {} of {} lanes.", lanes, c.lanes.size());
  return {c.id, svg.finish(), caption};
}

// --- lines -----------------------------------------------------------------------------------

LineSeries cdf_series(std::string name, std::vector<double> samples, std::size_t max_points) {
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](double v) { return !finite(v); }), samples.end());
  std::sort(samples.begin(), samples.end());
  LineSeries s;
  s.name = std::move(name);
  s.step = true;
  const std::size_t n = samples.size();
  if (n == 0) return s;
  const std::size_t points = std::min(n, std::max<std::size_t>(2, max_points));
  // Point k is the sample at rank r_k (the last one at each distinct value when all fit).
  for (std::size_t k = 0; k < points; ++k) {
    std::size_t r = points == n ? k : (k + 1) * n / points - 1;
    if (points == n) {
      while (r + 1 < n && samples[r + 1] == samples[r]) ++r;
      if (!s.x.empty() && s.x.back() == samples[r]) continue;
    }
    s.x.push_back(samples[r]);
    s.y.push_back(static_cast<double>(r + 1) / static_cast<double>(n));
  }
  return s;
}

Figure line_chart(const LineChart& c) {
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool any = false;
  const auto usable = [&](double x, double y) { return finite(x) && finite(y) && (!c.log_x || x > 0) && (!c.log_y || y > 0); };
  for (const LineSeries& s : c.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      x0 = any ? std::min(x0, s.x[i]) : s.x[i];
      x1 = any ? std::max(x1, s.x[i]) : s.x[i];
      y0 = any ? std::min(y0, s.y[i]) : s.y[i];
      y1 = any ? std::max(y1, s.y[i]) : s.y[i];
      any = true;
    }
  }
  if (!any) return empty_figure(c.id, c.title);
  if (!c.log_y) {
    y0 = std::min(y0, 0.0);
    y1 = std::max(y1, 0.0);
  }
  if (finite(c.y_min)) y0 = c.y_min;
  if (finite(c.y_max)) y1 = c.y_max;
  std::vector<double> xt;
  for (const double t : c.x_ticks) {
    if (finite(t) && (!c.log_x || t > 0)) xt.push_back(t);
  }
  std::sort(xt.begin(), xt.end());
  xt.erase(std::unique(xt.begin(), xt.end()), xt.end());
  double xlo = 0, xhi = 0;
  if (xt.empty()) {
    xt = c.log_x ? log_ticks(x0, x1) : nice_ticks(x0, x1);
    xlo = xt.front();
    xhi = xt.back();
  } else {
    // Given ticks (a sweep's GPU counts): the data and the ticks, with a margin for the markers.
    xlo = std::min(x0, xt.front());
    xhi = std::max(x1, xt.back());
    if (c.log_x) {
      const double pad = xhi > xlo ? std::pow(xhi / xlo, 0.03) : 2;
      xlo /= pad;
      xhi *= pad;
    } else {
      const double pad = xhi > xlo ? (xhi - xlo) * 0.03 : 1;
      xlo -= pad;
      xhi += pad;
    }
  }
  std::vector<double> yt = c.log_y ? log_ticks(y0, y1) : value_ticks(y0, y1);
  if (!c.log_y && finite(c.y_min) && finite(c.y_max) && c.y_max > c.y_min) {
    // Pinned: keep the ticks inside the range, and the range exactly as given.
    yt.erase(std::remove_if(yt.begin(), yt.end(), [&](double t) { return t < c.y_min - 1e-12 || t > c.y_max + 1e-12; }), yt.end());
  }
  std::vector<LegendItem> legend;
  for (std::size_t k = 0; k < c.series.size(); ++k) legend.push_back({c.series[k].name, palette(k), 1});
  const double left = 18 + 8 + max_tick_width(yt, c.log_y) + 8, right = 20;
  const double legend_h = c.series.size() > 1 ? Svg::legend_height(legend, kWidth - left - right) : 0;
  const double top = 32 + legend_h, plot_h = 260, height = top + plot_h + 44;
  Svg svg(c.id, height, c.title);
  if (c.series.size() > 1) svg.legend(legend, left, 26, kWidth - left - right);
  const double ylo = finite(c.y_min) && finite(c.y_max) && !c.log_y ? c.y_min : yt.front();
  const double yhi = finite(c.y_min) && finite(c.y_max) && !c.log_y ? c.y_max : yt.back();
  const Scale x{xlo, xhi, left, kWidth - right, c.log_x};
  const Scale y{ylo, yhi, top + plot_h, top, c.log_y};
  value_axis_left(svg, y, yt, left, kWidth - right, c.y_label, 14);
  value_axis_bottom(svg, x, xt, top, top + plot_h, c.x_label);
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const LineSeries& s = c.series[k];
    std::string d;
    std::size_t points = 0;
    std::vector<std::pair<double, double>> kept;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      const double cx = x(s.x[i]), cy = y(s.y[i]);
      if (points == 0) {
        // A CDF starts at zero left of its first sample.
        if (s.step) {
          d += fmt::format("M{} {}H{}V{}", num(cx), num(y(c.log_y ? ylo : 0)), num(cx), num(cy));
        } else {
          d += fmt::format("M{} {}", num(cx), num(cy));
        }
      } else if (s.step) {
        d += fmt::format("H{}V{}", num(cx), num(cy));
      } else {
        d += fmt::format("L{} {}", num(cx), num(cy));
      }
      ++points;
      kept.emplace_back(s.x[i], s.y[i]);
    }
    if (points == 0) continue;
    const std::string tip = fmt::format("{}: {} points, x {} \u2013 {}", s.name, points, format_value(kept.front().first), format_value(kept.back().first));
    if (points > 1 || s.step) svg.path(d, palette(k), 2, tip);
    if ((c.markers && points <= 60) || points == 1) {
      for (const auto& [vx, vy] : kept) {
        svg.circle(x(vx), y(vy), 3.2, palette(k), fmt::format("{}: {} \u2192 {}", s.name, format_value(vx), format_value(vy)));
      }
    }
  }
  return {c.id, svg.finish(), ""};
}

// --- heatmap ---------------------------------------------------------------------------------

namespace {

// Viridis at nine stops (matplotlib's colormap data).
std::string viridis(double t) {
  static constexpr std::array<std::array<double, 3>, 9> stops = {{{68, 1, 84},
                                                                  {71, 44, 122},
                                                                  {59, 81, 139},
                                                                  {44, 113, 142},
                                                                  {33, 144, 141},
                                                                  {39, 173, 129},
                                                                  {92, 200, 99},
                                                                  {170, 220, 50},
                                                                  {253, 231, 37}}};
  t = std::clamp(finite(t) ? t : 0.5, 0.0, 1.0) * 8;
  const auto i = static_cast<std::size_t>(std::min(7.0, std::floor(t)));
  const double f = t - static_cast<double>(i);
  std::array<int, 3> rgb{};
  for (std::size_t k = 0; k < 3; ++k) rgb[k] = static_cast<int>(std::lround(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

}  // namespace

Figure heatmap_chart(const Heatmap& c) {
  const std::size_t nx = c.x_labels.size(), ny = c.y_labels.size();
  if (nx == 0 || ny == 0) return empty_figure(c.id, c.title);
  double lo = 0, hi = 0;
  bool any = false;
  for (std::size_t i = 0; i < nx * ny && i < c.values.size(); ++i) {
    if (!finite(c.values[i])) continue;
    lo = any ? std::min(lo, c.values[i]) : c.values[i];
    hi = any ? std::max(hi, c.values[i]) : c.values[i];
    any = true;
  }
  double label_w = 0;
  for (const auto& l : c.y_labels) label_w = std::max(label_w, text_width(shorten(l, 20)));
  const double left = 24 + label_w + 8, right = 96;
  const double cell_w = (kWidth - left - right) / static_cast<double>(nx);
  const double cell_h = std::clamp(300.0 / static_cast<double>(ny), 14.0, 40.0);
  const double top = 34, plot_h = cell_h * static_cast<double>(ny);
  const double bottom = band_labels_height(c.x_labels, cell_w) + 24;
  const double height = std::max(top + plot_h + bottom, top + 200);
  Svg svg(c.id, height, c.title);
  const std::string hatch = "hatch-" + html_escape(c.id);
  svg.raw(fmt::format(R"~(<defs><pattern id="{}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">)~"
                      R"(<rect width="6" height="6" fill="#e4e4e4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="2"/></pattern></defs>)"
                      "\n",
                      hatch));
  for (std::size_t r = 0; r < ny; ++r) {
    const std::string s = shorten(c.y_labels[r], 20);
    svg.text(left - 6, top + cell_h * (static_cast<double>(r) + 0.5) + 4, s, "end", "tick", 0, s != c.y_labels[r] ? c.y_labels[r] : "");
  }
  band_labels(svg, c.x_labels, left, cell_w, top + plot_h);
  if (!c.y_label.empty()) svg.text(12, top + plot_h / 2, c.y_label, "middle", "lbl", -90);
  if (!c.x_label.empty()) svg.text(left + cell_w * static_cast<double>(nx) / 2, height - 8, c.x_label, "middle", "lbl");
  double widest = 0;
  for (std::size_t i = 0; i < nx * ny && i < c.values.size(); ++i) widest = std::max(widest, text_width(format_value(c.values[i]), 10));
  const bool values_fit = c.show_values && widest + 6 <= cell_w && cell_h >= 13;
  for (std::size_t r = 0; r < ny; ++r) {
    for (std::size_t k = 0; k < nx; ++k) {
      const std::size_t i = r * nx + k;
      const double v = i < c.values.size() ? c.values[i] : kNoValue;
      const std::string note = i < c.notes.size() ? c.notes[i] : "";
      const double x = left + cell_w * static_cast<double>(k), y = top + cell_h * static_cast<double>(r);
      std::string tip = fmt::format("{} {}, {} {}: {}", c.x_label.empty() ? "x" : c.x_label, c.x_labels[k], c.y_label.empty() ? "y" : c.y_label,
                                    c.y_labels[r], finite(v) ? format_value(v) + (c.value_label.empty() ? "" : " " + c.value_label) : "no value");
      if (!note.empty()) tip += " (" + note + ")";
      const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
      svg.rect(x + 0.5, y + 0.5, cell_w - 1, cell_h - 1, finite(v) ? viridis(t) : "url(#" + hatch + ")", tip, finite(v) ? "mark" : "mark missing");
      if (values_fit && finite(v)) {
        svg.raw(fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" class="cell" fill="{}">{}</text>)", num(x + cell_w / 2), num(y + cell_h / 2 + 3.5),
                            t > 0.55 ? "#111" : "#fff", html_escape(format_value(v))));
        svg.raw("\n");
      }
    }
  }
  // The color scale: 32 slices from the highest value (top) to the lowest.
  if (any) {
    const double bx = kWidth - right + 14, bh = std::min(plot_h, 180.0);
    for (int s = 0; s < 32; ++s) {
      const double f = static_cast<double>(s) / 32;
      svg.rect(bx, top + bh * f, 14, bh / 32 + 0.4, viridis(1 - f - 1.0 / 64), "", "key");
    }
    svg.text(bx + 18, top + 9, format_value(hi), "start", "tick");
    svg.text(bx + 18, top + bh, format_value(lo), "start", "tick");
    if (!c.value_label.empty()) svg.text(bx, top + bh + 16, shorten(c.value_label, 12), "start", "tick", 0, c.value_label);
    const bool missing = std::any_of(c.values.begin(), c.values.end(), [](double v) { return !finite(v); }) || c.values.size() < nx * ny;
    if (missing) {
      svg.rect(bx, top + bh + 24, 14, 10, "url(#" + hatch + ")", "", "key");
      svg.text(bx + 18, top + bh + 33, "no value", "start", "tick");
    }
  }
  return {c.id, svg.finish(), ""};
}

// --- the document ----------------------------------------------------------------------------

HtmlReport::HtmlReport(std::string title, std::string subtitle) : title_(std::move(title)) {
  body_ = "<h1>" + html_escape(title_) + "</h1>\n";
  if (!subtitle.empty()) body_ += "<p class=\"sub\">" + html_escape(subtitle) + "</p>\n";
}

void HtmlReport::section(std::string_view heading) { body_ += "<h2>" + html_escape(heading) + "</h2>\n"; }

void HtmlReport::paragraph(std::string_view text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }

void HtmlReport::key_values(const std::vector<std::pair<std::string, std::string>>& rows) {
  body_ += "<table class=\"kv\">\n";
  for (const auto& [k, v] : rows) body_ += "<tr><th>" + html_escape(k) + "</th><td>" + html_escape(v) + "</td></tr>\n";
  body_ += "</table>\n";
}

void HtmlReport::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table class=\"grid\">\n<tr>";
  for (const auto& h : header) body_ += "<th>" + html_escape(h) + "</th>";
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += "<td>" + html_escape(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlReport::figure(const Figure& f) {
  body_ += "<figure>\n" + f.svg + "\n";
  if (!f.caption.empty()) body_ += "<figcaption>" + html_escape(f.caption) + "</figcaption>\n";
  body_ += "</figure>\n";
}

std::string HtmlReport::html() const {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(title_) + "</title>\n";
  out += R"(<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #222; background: #fff; margin: 0; }
main { max-width: 800px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; }
td { white-space: nowrap; }
table.grid td { text-align: right; font-variant-numeric: tabular-nums; }
table.grid td:first-child { text-align: left; }
table.kv th { font-weight: 600; color: #444; }
figure { margin: 12px 0 20px; }
figcaption { font-size: 12px; color: #666; }
svg.orrery-plot { max-width: 100%; height: auto; display: block; font-family: inherit; }
svg .ttl { font-size: 14px; font-weight: 600; fill: #222; }
svg .tick, svg .lg, svg .note { font-size: 11px; fill: #444; }
svg .lbl { font-size: 12px; fill: #222; }
svg .cell { font-size: 10px; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .axis { stroke: #888; stroke-width: 1; }
svg rect.mark:hover, svg path.mark:hover, svg circle.mark:hover { opacity: 0.75; }
</style>
</head>
<body>
<main>
)";
  out += body_;
  out += "</main>\n";
  // For tests in a browser: each plot's laid-out size and how many marks have geometry.
  out += R"(<script>
(function () {
  var plots = document.querySelectorAll("svg.orrery-plot"), ok = 0;
  plots.forEach(function (svg) {
    var marks = svg.querySelectorAll(".mark"), drawn = 0;
    marks.forEach(function (m) { var b = m.getBBox(); if (b.width > 0 || b.height > 0) drawn++; });
    var r = svg.getBoundingClientRect();
    svg.setAttribute("data-rendered", Math.round(r.width) + "x" + Math.round(r.height) + " marks=" + drawn + "/" + marks.length);
    if (r.width > 0 && r.height > 0 && (svg.hasAttribute("data-empty") || (drawn > 0 && drawn === marks.length))) ok++;
  });
  document.title += " [rendered " + ok + "/" + plots.length + "]";
})();
</script>
</body>
</html>
)";
  return out;
}

void HtmlReport::write(const std::string& path) const { traces::write_file_atomically(path, html()); }

}  // namespace orrery::reports
