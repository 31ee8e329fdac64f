#include "reports/html_report.hpp"

#include "sim/error.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace orrery::reports;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Data marks: elements of class "mark" (legend swatches are "key").
std::size_t marks(const std::string& svg) { return count(svg, "class=\"mark"); }

// The elements that open with `open` (e.g. `<rect class="mark`), each up to its '>'.
std::vector<std::string> elements(const std::string& svg, const std::string& open) {
  std::vector<std::string> out;
  for (std::size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + open.size())) {
    out.push_back(svg.substr(at, svg.find('>', at) - at));
  }
  return out;
}

// An attribute's value inside one element's text ("" when absent).
std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = element.find(key);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + key.size();
  return element.substr(begin, element.find('"', begin) - begin);
}

// Every data mark has a positive width and height, or a non-empty path, or a positive radius.
// (Scanned by hand: libstdc++'s <regex> trips GCC 12's -Wmaybe-uninitialized under ASan.)
void check_marks_have_geometry(const std::string& svg) {
  for (const std::string& rect : elements(svg, "<rect class=\"mark")) {
    CHECK(std::stod(attribute(rect, "width")) > 0);
    CHECK(std::stod(attribute(rect, "height")) > 0);
  }
  for (const std::string& path : elements(svg, "<path class=\"mark\"")) CHECK(attribute(path, "d").length() > 3);
  for (const std::string& circle : elements(svg, "<circle class=\"mark\"")) CHECK(std::stod(attribute(circle, "r")) > 0);
}

void check_plot(const Figure& f, const std::string& id) {
  CHECK(f.svg.find("<svg class=\"orrery-plot\" data-plot=\"" + id + "\"") == 0);
  CHECK(f.svg.find("</svg>") == f.svg.size() - 6);
  CHECK(marks(f.svg) > 0);
  check_marks_have_geometry(f.svg);
}

}  // namespace

TEST_CASE("html_escape escapes markup and quotes") {
  CHECK(html_escape("a<b> & \"c\" 'd'") == "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  CHECK(html_escape("plain") == "plain");
  // A policy named like markup cannot inject an element into the page.
  BarChart c;
  c.id = "x";
  c.title = "<script>alert(1)</script>";
  c.categories = {"<b>fifo</b>"};
  c.series = {{"p50 & p99", {1.0}, {}}};
  const Figure f = bar_chart(c);
  CHECK(f.svg.find("<script>") == std::string::npos);
  CHECK(f.svg.find("<b>") == std::string::npos);
  CHECK(f.svg.find("&lt;b&gt;fifo&lt;/b&gt;") != std::string::npos);
}

TEST_CASE("nice ticks: steps of 1, 2 or 5 x 10^k covering the range") {
  CHECK(nice_ticks(0, 10) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(nice_ticks(0, 1) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  const auto t = nice_ticks(3.2, 97.1);
  CHECK(t.front() <= 3.2);
  CHECK(t.back() >= 97.1);
  CHECK(t[1] - t[0] == orrery::testing::Approx(20));
  // A single value gets a range around it; never fewer than two ticks.
  CHECK(nice_ticks(5, 5).size() >= 2);
  CHECK(nice_ticks(0, 0).size() >= 2);
  CHECK(nice_ticks(-7, 3).front() <= -7);
  CHECK(format_tick(0.6000000000000001, 0.2) == "0.6");
  CHECK(format_tick(20000, 5000) == "20k");
  CHECK(format_tick(1.5e6, 5e5) == "1.5M");
  CHECK(format_tick(0, 0.25) == "0");
  CHECK(format_tick(-0.0, 1) == "0");
  CHECK(format_value(1234567) == "1.235M");
  CHECK(format_value(0.5) == "0.5");
  CHECK(format_value(std::nan("")) == "n/a");
}

TEST_CASE("every chart type writes an svg with data marks") {
  BarChart bars;
  bars.id = "bars";
  bars.title = "step time";
  bars.y_label = "s";
  bars.categories = {"packing", "wlb-llm", "libra"};
  bars.series = {{"p50", {1.0, 0.8, 0.7}, {1.5, 1.1, 0.9}}};
  const Figure b = bar_chart(bars);
  check_plot(b, "bars");
  CHECK(marks(b.svg) == 6);  // three bars, three whiskers
  CHECK(b.svg.find("<title>packing — p50: 1 (p99 1.5)</title>") != std::string::npos);

  StackedBarChart st;
  st.id = "stack";
  st.title = "breakdown";
  st.categories = {"stage 0", "stage 1"};
  st.segments = {{"compute", {3, 2}, {}}, {"bubble", {1, 0}, {}}, {"idle", {0.5, 0.5}, {}}};
  for (const bool horizontal : {false, true}) {
    st.horizontal = horizontal;
    const Figure f = stacked_bar_chart(st);
    check_plot(f, "stack");
    CHECK(marks(f.svg) == 5);  // a zero segment draws nothing
  }

  LineChart lines;
  lines.id = "lines";
  lines.title = "scaling";
  lines.series = {{"a", {8, 16, 32, 64}, {1, 1.9, 3.5, 6}, false}, {"b", {8, 16, 32}, {1, 2, 4}, false}};
  lines.log_x = true;
  lines.markers = true;
  const Figure l = line_chart(lines);
  check_plot(l, "lines");
  CHECK(count(l.svg, "<path class=\"mark\"") == 2);
  CHECK(count(l.svg, "<circle class=\"mark\"") == 7);

  LineChart cdf;
  cdf.id = "cdf";
  cdf.title = "JCT";
  cdf.series = {cdf_series("fifo", {3, 1, 2, 2, 10})};
  const Figure cf = line_chart(cdf);
  check_plot(cf, "cdf");
  CHECK(cdf.series[0].x == std::vector<double>{1, 2, 3, 10});
  CHECK(cdf.series[0].y == std::vector<double>{0.2, 0.6, 0.8, 1.0});

  Timeline tl;
  tl.id = "tl";
  tl.title = "timeline";
  tl.lanes = {"gpu0 compute", "gpu0 comm"};
  tl.spans = {{0, 0, 1, "forward", "F0"}, {0, 1, 2, "backward", "B0"}, {1, 0.5, 1.5, "all-reduce", "AR"}};
  const Figure t = timeline_chart(tl);
  check_plot(t, "tl");
  CHECK(marks(t.svg) == 3);
  CHECK(t.caption.empty());

  Heatmap hm;
  hm.id = "hm";
  hm.title = "tokens/s";
  hm.x_label = "tp";
  hm.y_label = "pp";
  hm.x_labels = {"1", "2", "4"};
  hm.y_labels = {"1", "2"};
  hm.values = {1, 2, 3, 4, 5, 6};
  check_plot(heatmap_chart(hm), "hm");
}

TEST_CASE("a heatmap draws cells with no value hatched, with their note as tooltip") {
  Heatmap hm;
  hm.id = "grid";
  hm.title = "sweep";
  hm.x_label = "tp";
  hm.y_label = "pp";
  hm.x_labels = {"1", "2"};
  hm.y_labels = {"1", "2"};
  hm.values = {1.0, kNoValue, 3.0, kNoValue};
  hm.notes = {"", "out of memory", "", "invalid plan"};
  const Figure f = heatmap_chart(hm);
  check_plot(f, "grid");
  CHECK(marks(f.svg) == 4);
  CHECK(count(f.svg, "class=\"mark missing\"") == 2);
  CHECK(f.svg.find("fill=\"url(#hatch-grid)\"") != std::string::npos);
  CHECK(f.svg.find("tp 2, pp 1: no value (out of memory)") != std::string::npos);
  CHECK(f.svg.find("invalid plan") != std::string::npos);
  // All cells missing: still a grid, no color scale.
  hm.values = {kNoValue, kNoValue, kNoValue, kNoValue};
  CHECK(marks(heatmap_chart(hm).svg) == 4);
}

TEST_CASE("a chart with no data says so") {
  LineChart c;
  c.id = "none";
  c.title = "nothing";
  const Figure f = line_chart(c);
  CHECK(f.svg.find("data-empty=\"1\"") != std::string::npos);
  CHECK(f.svg.find("no data") != std::string::npos);
  CHECK(marks(f.svg) == 0);
}

TEST_CASE("the timeline merges spans to stay under its mark budget") {
  Timeline tl;
  tl.id = "big";
  tl.title = "many spans";
  tl.lanes = {"a", "b", "c", "d"};
  // 4 lanes x 5000 alternating spans of two categories: 20000 spans, never adjacent in category.
  for (int lane = 0; lane < 4; ++lane) {
    for (int i = 0; i < 5000; ++i) {
      tl.spans.push_back({lane, i * 1e-3, i * 1e-3 + 0.8e-3, i % 2 == 0 ? "forward" : "backward", "op"});
    }
  }
  tl.max_marks = 1000;
  const Figure f = timeline_chart(tl);
  check_plot(f, "big");
  CHECK(marks(f.svg) <= 1000);
  CHECK(marks(f.svg) >= 4);
  CHECK(f.caption.find("20000 spans drawn as") == 0);
  CHECK(f.svg.size() < 300000);
  // Under the budget every span is its own mark.
  tl.spans.resize(100);
  CHECK(marks(timeline_chart(tl).svg) == 100);
}

TEST_CASE("cdf_series keeps at most max_points steps, ending at 1") {
  std::vector<double> samples;
  for (int i = 0; i < 100000; ++i) samples.push_back(static_cast<double>((i * 7919) % 100003));
  const LineSeries s = cdf_series("x", samples, 300);
  CHECK(s.x.size() == 300);
  CHECK(s.y.back() == 1.0);
  CHECK(std::is_sorted(s.x.begin(), s.x.end()));
  CHECK(std::is_sorted(s.y.begin(), s.y.end()));
}

TEST_CASE("a report is byte-identical when built twice, and written atomically") {
  const auto build = [] {
    HtmlReport r("Report <1>", "sub & title");
    r.section("Key figures");
    r.key_values({{"step time", "1.2 s"}, {"MFU", "41%"}});
    r.table({"policy", "p50"}, {{"fifo", "1"}, {"sjf", "2"}});
    BarChart c;
    c.id = "b";
    c.title = "t";
    c.categories = {"x", "y"};
    c.series = {{"a", {1, 2}, {}}, {"b", {2, 1}, {}}};
    r.figure(bar_chart(c));
    LineChart l;
    l.id = "l";
    l.title = "cdf";
    l.series = {cdf_series("s", {0.3, 0.1, 0.2})};
    r.figure(line_chart(l));
    return r;
  };
  const std::string a = build().html(), b = build().html();
  CHECK(a == b);
  CHECK(a.find("<!DOCTYPE html>") == 0);
  CHECK(count(a, "class=\"orrery-plot\"") == 2);
  CHECK(a.find("<title>Report &lt;1&gt;</title>") != std::string::npos);
  CHECK(count(a, "http://") == count(a, "http://www.w3.org/2000/svg"));  // the SVG namespace only: nothing to fetch
  CHECK(a.find("https://") == std::string::npos);
  build().write("report.html");
  std::ifstream in("report.html", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  CHECK(s.str() == a);
  CHECK_THROWS_AS(build().write("no-such-dir/report.html"), orrery::sim::InputError);
  CHECK(!std::filesystem::exists("no-such-dir"));
}
