#include "parallel/work_queue.hpp"

#include <algorithm>
#include <chrono>

namespace perfsweep {
namespace {
constexpr int kTagRequest = 7101;
constexpr int kTagReply = 7102;
// Units are milliseconds of work at most; a few per chunk keep messages cheap and results flowing.
constexpr std::size_t kMaxChunk = 8;

// Waits for a request by polling with short sleeps: MPI's blocking calls spin at full speed,
// which on a shared machine takes a core from the ranks that compute.
void wait_politely(MPI_Request& request) {
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}
}  // namespace

WorkQueue::WorkQueue(MPI_Comm comm, std::size_t n_units, int thread_level, ResultSink sink)
    : comm_(comm), n_units_(n_units), sink_(std::move(sink)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // Rank 0 computes too when a helper thread may call MPI while its main thread does not.
  rank0_works_ = size_ == 1 || thread_level >= MPI_THREAD_SERIALIZED;
  if (rank_ == 0 && size_ > 1 && rank0_works_) server_ = std::thread([this] { serve(); });
}

WorkQueue::~WorkQueue() {
  if (server_.joinable()) server_.join();
}

std::pair<std::size_t, std::size_t> WorkQueue::take() {
  std::size_t first = cursor_.load();
  while (true) {
    if (first >= n_units_) return {n_units_, n_units_};
    const std::size_t remaining = n_units_ - first;
    // Guided, but capped: a chunk's results reach rank 0 (and the journal) only when it is done.
    const std::size_t chunk =
        std::clamp<std::size_t>(remaining / (4 * static_cast<std::size_t>(size_)), 1, kMaxChunk);
    if (cursor_.compare_exchange_weak(first, first + chunk)) return {first, first + chunk};
  }
}

void WorkQueue::deliver(std::span<const char> results) {
  if (results.empty()) return;
  std::lock_guard<std::mutex> lock(sink_mutex_);
  sink_(results);
}

void WorkQueue::serve() {
  int workers_left = size_ - 1;
  std::vector<char> buffer;
  while (workers_left > 0) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, comm_, &flag, &status);
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    buffer.resize(static_cast<std::size_t>(bytes));
    MPI_Recv(buffer.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kTagRequest, comm_, MPI_STATUS_IGNORE);
    // The next chunk goes out before the results are absorbed (journal writes and fsyncs): the
    // worker computes instead of waiting for rank 0's bookkeeping.
    const auto [first, last] = take();
    const std::uint64_t reply[2] = {first, last};
    MPI_Send(reply, 2, MPI_UINT64_T, status.MPI_SOURCE, kTagReply, comm_);
    deliver(buffer);
    if (first == last) --workers_left;
  }
}

std::pair<std::size_t, std::size_t> WorkQueue::next(std::span<const char> results) {
  if (rank_ == 0) {
    deliver(results);
    if (!rank0_works_) {
      serve();
      return {n_units_, n_units_};
    }
    return take();
  }
  std::uint64_t reply[2] = {0, 0};
  MPI_Request requests[2];
  MPI_Irecv(reply, 2, MPI_UINT64_T, 0, kTagReply, comm_, &requests[1]);
  MPI_Isend(results.data(), static_cast<int>(results.size()), MPI_BYTE, 0, kTagRequest, comm_, &requests[0]);
  wait_politely(requests[0]);
  wait_politely(requests[1]);
  return {static_cast<std::size_t>(reply[0]), static_cast<std::size_t>(reply[1])};
}

void WorkQueue::finish() {
  if (server_.joinable()) server_.join();
  MPI_Request barrier;
  MPI_Ibarrier(comm_, &barrier);
  wait_politely(barrier);
}

}  // namespace perfsweep
