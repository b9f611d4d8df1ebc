#pragma once
// A durable record of finished sweep targets, so that an interrupted sweep resumes without
// computing them again. One run owns a journal at a time (an flock on `<journal>.lock`, whose
// text names the owner's host and pid). Each record carries the run's fingerprint, is
// checksummed and fsync'ed before it counts. On resume, damaged or foreign records anywhere in
// the file are dropped and counted, the intact ones kept, and the journal rewritten without them.
// The journal and its lock must be regular files: symlinks, FIFOs and devices are refused.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "search/sweep_target.hpp"

namespace perfsweep {

// An exclusive lock on `path` (created if absent) for the lifetime of the object; released by the
// kernel if the process dies, so a lock is never stale. LockedError names the holder.
class RunLock {
 public:
  explicit RunLock(const std::string& path);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  // Removes the lock file (the run's output is complete), then releases the lock.
  void remove();

 private:
  std::string path_;
  int fd_ = -1;
};

enum class JournalMode {
  kNew,      // no journal may exist (one left by an earlier run is refused, never truncated)
  kResume,   // continue the journal if there is one
  kRestart,  // discard an existing journal
};

// What reading a journal found.
struct JournalScan {
  bool existed = false;
  std::size_t kept = 0;           // records accepted
  std::size_t damaged = 0;        // records that failed their checksum or did not parse
  std::size_t foreign = 0;        // intact records of another fingerprint
  std::size_t dropped_bytes = 0;  // bytes not part of an accepted record (a torn tail included)
};

class Journal {
 public:
  // Opens the journal at path for a run identified by fingerprint. With kResume and an existing
  // journal, its finished targets go into `done`. Throws InputError when the journal belongs to
  // other inputs, or exists and mode is kNew (the message gives --resume and --restart).
  Journal(const std::string& path, const std::string& fingerprint, JournalMode mode, std::size_t n_gpu_counts,
          std::size_t top_n, std::map<std::size_t, TargetResult>& done);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Writes the record at once (a killed process loses nothing written); flushes it to the disk
  // when the last flush is kSyncInterval old, so a sweep of many quick targets does not wait on
  // one fsync each (a power failure loses at most that interval's records, which a resumed run
  // searches again; a torn record fails its checksum).
  void append(std::size_t target, const TargetResult& result);
  // Flushes what was appended to the disk.
  void sync();
  static constexpr std::chrono::milliseconds kSyncInterval{500};
  // Closes and deletes the journal (the run's output is complete).
  void remove();

  const std::string& path() const { return path_; }
  const JournalScan& scan() const { return scan_; }

 private:
  void create(const std::string& fingerprint);
  std::string path_;
  std::uint64_t fingerprint_hash_ = 0;
  int fd_ = -1;
  bool unsynced_ = false;
  std::chrono::steady_clock::time_point last_sync_{};
  JournalScan scan_;
};

// 64-bit FNV-1a of a byte string, as hex (fingerprints of run inputs).
std::string fingerprint_hash(const std::string& text);

}  // namespace perfsweep
