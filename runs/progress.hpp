// A one-line progress report with an ETA, on stderr, for the runs that take more than a few
// seconds (sweeps, cluster replays, validation, plan confirmation, calibration).
//   Progress bar("validate", 8, "tables");
//   bar.note("steps");  ...;  bar.advance();
// Silent for the first 2 s, so short runs print nothing; then redrawn in place (at most every
// 100 ms) on a terminal, or one plain line every 10 s when stderr is a file or a pipe. It goes
// only where cli::run was told (the process's stderr from main), never into a test's captured
// output unless a test asks for it; stdout and the reports never see it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <thread>

namespace orrery::runs {

// One report, for a front end that shows progress its own way (the Python module's callback).
struct ProgressUpdate {
  std::string_view label, unit, note;
  std::int64_t done = 0, total = 0;  // total 0: unknown
  double elapsed_s = 0, eta_s = 0;   // eta NaN: not known yet
  bool last = false;                 // the run has finished
  std::string_view text;             // the line a terminal would show
};

struct ProgressSettings {
  std::ostream* stream = nullptr;  // null (and no on_update): no report at all
  std::function<void(const ProgressUpdate&)> on_update;  // called with each report, beside the stream
  bool terminal = false;           // redraw one line in place; else append a line now and then
  double delay_s = 2;              // nothing before this much time has passed
  double redraw_s = 0.1;           // on a terminal, at most this often
  double log_every_s = 10;         // elsewhere, at most this often
  bool ticker = true;              // a thread keeps the elapsed time current while one unit runs long
  std::function<double()> clock;   // seconds; empty: the steady clock
};

// The settings of the command that runs now: set by cli::run (ProgressTarget) for the process's
// stderr; by default none, so a command run from a test prints no progress.
ProgressSettings current_progress_settings();

// While alive, commands report progress on `stream` (a terminal or not).
class ProgressTarget {
 public:
  ProgressTarget(std::ostream* stream, bool terminal);
  explicit ProgressTarget(ProgressSettings settings);
  ~ProgressTarget();
  ProgressTarget(const ProgressTarget&) = delete;
  ProgressTarget& operator=(const ProgressTarget&) = delete;

 private:
  ProgressSettings previous_;
};

class Progress {
 public:
  // `total` units of `unit` ("points", "policies"); 0: unknown (no bar, no ETA). `done`: already
  // done before this run (a resumed sweep), not counted in the rate.
  Progress(std::string label, std::int64_t total, std::string unit, std::int64_t done = 0);
  Progress(std::string label, std::int64_t total, std::string unit, std::int64_t done, ProgressSettings settings);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(std::int64_t units = 1);  // thread-safe
  void set_total(std::int64_t total);
  void set_total(std::int64_t total, std::string unit);  // and what is counted ("steps", "jobs")
  void note(std::string text);           // what runs now ("tiresias"); shown after the ETA
  // Clears the line (on a terminal) or writes a last line with the total time (elsewhere), if
  // anything was shown. The destructor calls it.
  void finish();
  // For a caller (a test) that drives the clock: redraws if it is time.
  void poll();
  // On a terminal, erases the line (it is drawn again at the next redraw): before other output.
  void clear();
  bool on_terminal() const;

  // The text of one report: "label [#####.....] 3/8 tables  1m02s elapsed  ETA 1m43s  (note)".
  static std::string format(std::string_view label, std::int64_t done, std::int64_t total, std::string_view unit, double elapsed_s,
                            double eta_s, std::string_view note);
  // 59 s -> "59s", 62 s -> "1m02s", 3725 s -> "1h02m", 2 days -> "2d00h"; negative or NaN: "?".
  static std::string duration(double seconds);

 private:
  double now() const;
  bool reporting() const { return settings_.stream != nullptr || settings_.on_update != nullptr; }
  void draw_locked(bool last);
  void maybe_draw_locked();

  std::string label_, unit_, note_;
  std::int64_t total_, done_, start_done_, drawn_done_ = -1;
  ProgressSettings settings_;
  double start_ = 0, last_draw_ = -1e300, last_done_at_ = 0;
  bool shown_ = false, finished_ = false, counted_ = false;
  std::size_t drawn_width_ = 0;
  mutable std::mutex lock_;
  std::condition_variable wake_;
  std::thread ticker_;
};

// A stream onto `target` that clears the progress line before each write, so that a command's
// own lines, printed while the bar runs, start on a clean line; flushed at once while a bar is on
// a terminal.
//   ProgressStream lines(out, progress);  lines << "network: ...\n";
class ProgressStream : public std::ostream {
 public:
  ProgressStream(std::ostream& target, Progress& progress);

 private:
  class Buffer : public std::streambuf {
   public:
    Buffer(std::ostream& target, Progress& progress) : target_(target), progress_(progress) {}

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    std::ostream& target_;
    Progress& progress_;
  };
  Buffer buffer_;
};

}  // namespace orrery::runs
