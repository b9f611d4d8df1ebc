#include "parallel/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/hash.hpp"

#include "core/error.hpp"

namespace perfsweep {
namespace {

constexpr char kMagic[8] = {'P', 'S', 'W', 'E', 'E', 'P', 'J', '1'};
constexpr std::uint32_t kRecordMagic = 0x52435350;  // "PSCR"

std::uint64_t fnv1a(const char* p, std::size_t n) { return perfsweep::fnv1a(std::string_view(p, n)); }

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
bool get(const std::string& in, std::size_t& pos, T& v) {
  if (pos + sizeof(T) > in.size()) return false;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}

std::string header(const std::string& fingerprint) {
  std::string h(kMagic, sizeof kMagic);
  put(h, static_cast<std::uint64_t>(fingerprint.size()));
  h += fingerprint;
  put(h, fnv1a(fingerprint.data(), fingerprint.size()));
  return h;
}

[[noreturn]] void io_error(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

std::string fingerprint_hash(const std::string& text) { return fnv1a_hex(text); }

Journal::Journal(const std::string& path, const std::string& fingerprint) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd_ < 0) io_error("cannot create journal", path);
  write_all(header(fingerprint));
}

Journal::Journal(const std::string& path, const std::string& fingerprint, std::size_t n_gpu_counts, std::size_t top_n,
                 std::map<std::size_t, TargetResult>& done)
    : path_(path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the journal to resume from");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  std::size_t pos = 0;
  std::uint64_t len = 0, sum = 0;
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
    throw InputError(path + ": not a perfsweep journal");
  }
  pos = sizeof kMagic;
  if (!get(data, pos, len) || pos + len > data.size()) throw InputError(path + ": truncated journal header");
  const std::string theirs = data.substr(pos, len);
  pos += len;
  if (!get(data, pos, sum) || sum != fnv1a(theirs.data(), theirs.size())) throw InputError(path + ": corrupt journal header");
  if (theirs != fingerprint) {
    throw InputError(path + ": this journal was written by a run with other inputs or another perfsweep version\n"
                     "  journal: " + theirs + "\n  this run: " + fingerprint +
                     "\nremove it, or run without --resume to start over");
  }
  std::size_t good = pos;
  while (true) {
    std::uint32_t magic = 0;
    std::uint64_t payload_len = 0, checksum = 0;
    std::size_t p = good;
    if (!get(data, p, magic) || magic != kRecordMagic || !get(data, p, payload_len) || p + payload_len > data.size()) break;
    const std::string payload = data.substr(p, payload_len);
    p += payload_len;
    if (!get(data, p, checksum) || checksum != fnv1a(payload.data(), payload.size())) break;
    std::size_t q = 0;
    std::uint64_t target = 0, n_tops = 0;
    TargetResult r;
    bool ok = get(payload, q, target) && get(payload, q, r.counters) && get(payload, q, n_tops) && n_tops == n_gpu_counts;
    for (std::uint64_t i = 0; ok && i < n_tops; ++i) {
      std::uint64_t count = 0;
      ok = get(payload, q, count);
      TopN top(top_n);
      for (std::uint64_t k = 0; ok && k < count; ++k) {
        Candidate c;
        ok = get(payload, q, c);
        if (ok) top.push(c);
      }
      r.tops.push_back(std::move(top));
    }
    if (!ok) break;
    r.units_done = r.units_total = 0;
    done[static_cast<std::size_t>(target)] = std::move(r);
    good = p;
  }
  fd_ = ::open(path.c_str(), O_WRONLY);
  if (fd_ < 0) io_error("cannot reopen journal", path);
  if (::ftruncate(fd_, static_cast<off_t>(good)) != 0) io_error("cannot truncate journal", path);
  if (::lseek(fd_, 0, SEEK_END) < 0) io_error("cannot seek journal", path);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::write_all(const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_error("cannot write journal", path_);
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0) io_error("cannot sync journal", path_);
}

void Journal::append(std::size_t target, const TargetResult& r) {
  std::string payload;
  put(payload, static_cast<std::uint64_t>(target));
  put(payload, r.counters);
  put(payload, static_cast<std::uint64_t>(r.tops.size()));
  for (const TopN& t : r.tops) {
    put(payload, static_cast<std::uint64_t>(t.items().size()));
    for (const Candidate& c : t.items()) put(payload, c);
  }
  std::string rec;
  put(rec, kRecordMagic);
  put(rec, static_cast<std::uint64_t>(payload.size()));
  rec += payload;
  put(rec, fnv1a(payload.data(), payload.size()));
  write_all(rec);
}

void Journal::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

}  // namespace perfsweep
