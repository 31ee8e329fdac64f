#include "runs/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <ostream>

namespace orrery::runs {

namespace {

// Set by cli::run before a command starts and restored after; the sweep clears it while its
// points run, so that a point's own command reports nothing under the sweep's bar.
ProgressSettings& settings_now() {
  static ProgressSettings settings;
  return settings;
}

// How many reports are shown now: one inside another (a plan search inside `validate`) stays
// silent, so that two lines never fight over the terminal.
std::atomic<int> shown_reports{0};

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressSettings current_progress_settings() { return settings_now(); }

ProgressTarget::ProgressTarget(std::ostream* stream, bool terminal) : previous_(settings_now()) {
  settings_now().stream = stream;
  settings_now().terminal = terminal;
}

ProgressTarget::ProgressTarget(ProgressSettings settings) : previous_(settings_now()) { settings_now() = std::move(settings); }

ProgressTarget::~ProgressTarget() { settings_now() = previous_; }

Progress::Progress(std::string label, std::int64_t total, std::string unit, std::int64_t done)
    : Progress(std::move(label), total, std::move(unit), done, current_progress_settings()) {}

Progress::Progress(std::string label, std::int64_t total, std::string unit, std::int64_t done, ProgressSettings settings)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), done_(done), start_done_(done), settings_(std::move(settings)) {
  start_ = now();
  last_done_at_ = start_;
  if (reporting()) {
    if (shown_reports++ > 0) {
      --shown_reports;
      settings_.stream = nullptr;
      settings_.on_update = nullptr;
    } else {
      counted_ = true;
    }
  }
  if (reporting() && settings_.ticker) {
    // Keeps the line current while one long unit runs (a cluster replay of a minute).
    ticker_ = std::thread([this] {
      std::unique_lock<std::mutex> guard(lock_);
      const auto period = std::chrono::duration<double>(settings_.terminal ? 1.0 : std::min(1.0, settings_.log_every_s));
      while (!finished_) {
        wake_.wait_for(guard, period);
        if (!finished_) maybe_draw_locked();
      }
    });
  }
}

Progress::~Progress() { finish(); }

double Progress::now() const { return settings_.clock ? settings_.clock() : steady_seconds(); }

void Progress::advance(std::int64_t units) {
  const std::lock_guard<std::mutex> guard(lock_);
  done_ += units;
  last_done_at_ = now();
  maybe_draw_locked();
}

void Progress::set_total(std::int64_t total) {
  const std::lock_guard<std::mutex> guard(lock_);
  total_ = total;
}

void Progress::set_total(std::int64_t total, std::string unit) {
  const std::lock_guard<std::mutex> guard(lock_);
  total_ = total;
  unit_ = std::move(unit);
}

void Progress::note(std::string text) {
  const std::lock_guard<std::mutex> guard(lock_);
  note_ = std::move(text);
}

void Progress::poll() {
  const std::lock_guard<std::mutex> guard(lock_);
  maybe_draw_locked();
}

void Progress::finish() {
  {
    const std::lock_guard<std::mutex> guard(lock_);
    if (finished_) return;
    finished_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  const std::lock_guard<std::mutex> guard(lock_);
  // A terminal gets its line back for what the command prints next; a log gets the total.
  if (shown_ && settings_.terminal && drawn_width_ > 0 && settings_.stream != nullptr) {
    *settings_.stream << '\r' << std::string(drawn_width_, ' ') << '\r';
    settings_.stream->flush();
    drawn_width_ = 0;
  } else if (shown_ && !settings_.terminal && drawn_done_ != done_) {
    draw_locked(true);
  }
  if (counted_) --shown_reports;
  counted_ = false;
}

void Progress::maybe_draw_locked() {
  if (!reporting()) return;
  const double t = now();
  if (t - start_ < settings_.delay_s) return;
  if (t - last_draw_ < (settings_.terminal ? settings_.redraw_s : settings_.log_every_s)) return;
  draw_locked(false);
}

void Progress::draw_locked(bool last) {
  const double t = now();
  last_draw_ = t;
  shown_ = true;
  drawn_done_ = done_;
  const double elapsed = t - start_;
  // The time per unit from the units done so far, less the time the current unit has run.
  double eta = std::numeric_limits<double>::quiet_NaN();
  if (total_ > 0 && done_ > start_done_) {
    const double per_unit = (last_done_at_ - start_) / static_cast<double>(done_ - start_done_);
    eta = std::max(0.0, per_unit * static_cast<double>(total_ - start_done_) - elapsed);
  }
  std::string text = format(label_, done_, total_, unit_, elapsed, last ? 0.0 : eta, last ? "" : note_);
  if (settings_.on_update) {
    settings_.on_update({label_, unit_, last ? std::string_view() : std::string_view(note_), done_, total_, elapsed, last ? 0.0 : eta, last, text});
  }
  if (settings_.stream == nullptr) return;
  std::ostream& out = *settings_.stream;
  if (settings_.terminal) {
    const std::size_t width = text.size();
    if (text.size() < drawn_width_) text.append(drawn_width_ - text.size(), ' ');
    drawn_width_ = width;
    out << '\r' << text << (last ? "\n" : "");
  } else {
    out << text << '\n';
  }
  out.flush();
}

void Progress::clear() {
  const std::lock_guard<std::mutex> guard(lock_);
  if (settings_.stream == nullptr || !settings_.terminal || drawn_width_ == 0) return;
  *settings_.stream << '\r' << std::string(drawn_width_, ' ') << '\r';
  settings_.stream->flush();
  drawn_width_ = 0;
  last_draw_ = -1e300;  // redrawn at the next chance
}

bool Progress::on_terminal() const { return settings_.stream != nullptr && settings_.terminal; }

ProgressStream::ProgressStream(std::ostream& target, Progress& progress) : std::ostream(nullptr), buffer_(target, progress) { rdbuf(&buffer_); }

ProgressStream::Buffer::int_type ProgressStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

std::streamsize ProgressStream::Buffer::xsputn(const char* s, std::streamsize n) {
  progress_.clear();
  target_.write(s, n);
  if (progress_.on_terminal()) target_.flush();
  return target_ ? n : 0;
}

int ProgressStream::Buffer::sync() {
  target_.flush();
  return target_ ? 0 : -1;
}

std::string Progress::duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<std::int64_t>(std::llround(s));
  if (total >= 86400) return fmt::format("{}d{:02}h", total / 86400, (total % 86400) / 3600);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

std::string Progress::format(std::string_view label, std::int64_t done, std::int64_t total, std::string_view unit, double elapsed_s, double eta_s,
                             std::string_view note) {
  std::string text(label);
  if (total > 0) {
    constexpr std::int64_t kWidth = 20;
    const std::int64_t filled = std::clamp<std::int64_t>(kWidth * done / total, 0, kWidth);
    text += fmt::format(" [{}{}] {}/{} {}", std::string(static_cast<std::size_t>(filled), '#'), std::string(static_cast<std::size_t>(kWidth - filled), '.'),
                        done, total, unit);
  } else {
    text += fmt::format(" {} {}", done, unit);
  }
  text += fmt::format("  {} elapsed", duration(elapsed_s));
  if (total > 0 && done < total) text += fmt::format("  ETA {}", duration(eta_s));
  if (!note.empty()) text += fmt::format("  ({})", note);
  return text;
}

}  // namespace orrery::runs
