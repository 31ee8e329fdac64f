// Sweeps over MPI ranks (studies/sweep.hpp): a master/worker split. Rank 0 owns the queue of
// points, runs some itself, and answers each worker's request with the next point; a worker's
// request carries the row of the point it just finished. Only rank 0's main thread calls MPI
// (MPI_THREAD_FUNNELED); its local workers share the queue through an atomic counter.
#include "studies/sweep.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#ifdef ORRERY_HAVE_MPI
#include <mpi.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#endif

namespace orrery::studies {


bool sweep_mpi_launched() {
  // Set by the launchers of Open MPI, MPICH/Hydra and PMIx-based ones (Slurm's srun among them).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

#ifndef ORRERY_HAVE_MPI

bool sweep_mpi_built() { return false; }

bool sweep_run_mpi(const std::function<std::vector<int>()>&, int, const SweepEvaluate&, const SweepRecord&, std::vector<int>&) {
  throw sim::InputError("<command line>", "",
                        "this orrery was built without MPI (libopenmpi-dev was missing when it was configured); run the sweep without mpirun, "
                        "or install libopenmpi-dev openmpi-bin (scripts/install-deps.sh) and rebuild");
}

#else

bool sweep_mpi_built() { return true; }

namespace {

constexpr int kTagWork = 1;    // master -> worker: a point index, or -1: stop
constexpr int kTagResult = 2;  // worker -> master: "" (first request) or "<index>\n<row JSON>"

// MPI_Init_thread on construction, MPI_Finalize on destruction; an exception leaving a rank
// aborts the job, so the others do not wait for it forever.
class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    if (std::uncaught_exceptions() > 0 && size_ > 1 && !clean_) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  void mark_clean() { clean_ = true; }  // the other ranks were told to stop: no need to abort

 private:
  int rank_ = 0, size_ = 1;
  bool clean_ = false;
};

void send_text(const std::string& text, int to, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

std::string receive_text(int from, int tag, int* source) {
  MPI_Status status;
  MPI_Probe(from, tag, MPI_COMM_WORLD, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (source != nullptr) *source = status.MPI_SOURCE;
  return text;
}

void worker(const SweepEvaluate& evaluate) {
  std::string message;  // the first request carries no row
  while (true) {
    send_text(message, 0, kTagResult);
    int index = -1;
    MPI_Recv(&index, 1, MPI_INT, 0, kTagWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (index < 0) return;
    message = fmt::format("{}\n{}", index, evaluate(index));
  }
}

}  // namespace

bool sweep_run_mpi(const std::function<std::vector<int>()>& prepare, int threads, const SweepEvaluate& evaluate, const SweepRecord& record,
                   std::vector<int>& per_rank) {
  MpiSession mpi;
  if (mpi.rank() != 0) {
    worker(evaluate);
    return false;
  }
  // Rank 0: prepare (a bad journal throws); the workers are then told to stop before it rethrows.
  std::exception_ptr failure;
  std::vector<int> pending;
  try {
    pending = prepare();
  } catch (...) {
    failure = std::current_exception();
  }
  std::atomic<std::size_t> next{failure ? pending.size() : 0};
  std::mutex failure_lock;
  const auto take = [&]() -> int {
    const std::size_t k = next++;
    return k < pending.size() ? pending[k] : -1;
  };
  // Local workers on rank 0 (none when the job has other ranks and asked for one thread: the
  // main thread serves them instead).
  const int local = mpi.size() > 1 ? threads - 1 : threads;
  per_rank.assign(static_cast<std::size_t>(mpi.size()), 0);
  std::atomic<int> local_points{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < local; ++t) {
    pool.emplace_back([&] {
      try {
        for (int i = take(); i >= 0; i = take()) {
          record(i, evaluate(i));
          ++local_points;
        }
      } catch (...) {
        const std::lock_guard<std::mutex> guard(failure_lock);
        if (!failure) failure = std::current_exception();
        next = pending.size();
      }
    });
  }
  for (int stopped = 0; stopped < mpi.size() - 1;) {
    int from = 0;
    const std::string message = receive_text(MPI_ANY_SOURCE, kTagResult, &from);
    if (!message.empty()) {
      const std::size_t newline = message.find('\n');
      const int index = std::stoi(message.substr(0, newline));
      ++per_rank[static_cast<std::size_t>(from)];
      try {
        record(index, message.substr(newline + 1));
      } catch (...) {
        const std::lock_guard<std::mutex> guard(failure_lock);
        if (!failure) failure = std::current_exception();
        next = pending.size();
      }
    }
    const int index = take();
    MPI_Send(&index, 1, MPI_INT, from, kTagWork, MPI_COMM_WORLD);
    if (index < 0) ++stopped;
  }
  for (std::thread& t : pool) t.join();
  per_rank[0] = local_points;
  mpi.mark_clean();
  if (failure) std::rethrow_exception(failure);
  return true;
}

#endif

}  // namespace orrery::studies
