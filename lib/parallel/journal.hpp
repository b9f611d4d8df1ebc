#pragma once
// A durable record of finished sweep targets, so that an interrupted sweep resumes without
// computing them again. Each record is appended, checksummed and fsync'ed before it counts; a
// torn last record (a kill mid-write) is ignored and overwritten.
#include <cstdint>
#include <map>
#include <string>

#include "parallel/sweep_run.hpp"

namespace perfsweep {

class Journal {
 public:
  // Starts a new journal at path (truncating any old one) for a run identified by fingerprint.
  Journal(const std::string& path, const std::string& fingerprint);
  // Continues the journal at path: reads its finished targets into `done` and appends after the
  // last intact record. Throws InputError if it was written for another fingerprint.
  Journal(const std::string& path, const std::string& fingerprint, std::size_t n_gpu_counts, std::size_t top_n,
          std::map<std::size_t, TargetResult>& done);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(std::size_t target, const TargetResult& result);
  // Closes and deletes the journal (the run's output is complete).
  void remove();

  const std::string& path() const { return path_; }

 private:
  void write_all(const std::string& bytes);
  std::string path_;
  int fd_ = -1;
};

// 64-bit FNV-1a of a byte string, as hex (fingerprints of run inputs).
std::string fingerprint_hash(const std::string& text);

}  // namespace perfsweep
