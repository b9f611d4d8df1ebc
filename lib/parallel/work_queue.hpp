#pragma once
// Dynamic hand-out of work-unit indices [0, n) across the ranks of an MPI communicator, with the
// results of each chunk sent back to rank 0 along with the request for the next one.
// Rank 0 serves requests from a helper thread while it works through units itself; chunks shrink (up to a cap)
// as the queue empties (guided scheduling), so uneven units do not leave ranks idle.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

namespace perfsweep {

class WorkQueue {
 public:
  // Receives, on rank 0, the serialized results of finished chunks (any rank's), one at a time.
  using ResultSink = std::function<void(std::span<const char>)>;

  // Collective over comm. thread_level: what MPI_Init_thread provided.
  WorkQueue(MPI_Comm comm, std::size_t n_units, int thread_level, ResultSink sink);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Hands in the results of this rank's previous chunk and returns the next chunk [first, last);
  // first == last when the queue is empty (then the results have been delivered and the rank is
  // done). On rank 0 with a single-threaded MPI, rank 0 only serves and returns empty.
  std::pair<std::size_t, std::size_t> next(std::span<const char> results);

  // Blocks until every rank has finished and all results reached the sink (rank 0).
  void finish();

 private:
  std::pair<std::size_t, std::size_t> take();
  void deliver(std::span<const char> results);
  void serve();

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::size_t n_units_;
  bool rank0_works_ = true;
  ResultSink sink_;
  std::mutex sink_mutex_;
  std::atomic<std::size_t> cursor_{0};
  std::thread server_;
};

}  // namespace perfsweep
