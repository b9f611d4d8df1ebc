#include "parallel/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/limits.hpp"

namespace perfsweep {
namespace {

// The journal's version: J3's records carry the user's execution options alone (the runtime's
// mechanisms are the problem's, not the layout's); a journal of another version is refused whole.
constexpr char kMagic[8] = {'P', 'S', 'W', 'E', 'E', 'P', 'J', '3'};
constexpr std::uint32_t kRecordMagic = 0x52435350;  // "PSCR"
// magic, fingerprint hash, payload length | payload | checksum of fingerprint hash and payload
constexpr std::size_t kRecordOverhead = sizeof(std::uint32_t) + 3 * sizeof(std::uint64_t);

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
bool get(std::string_view in, std::size_t& pos, T& v) {
  if (in.size() < sizeof(T) || pos > in.size() - sizeof(T)) return false;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}

std::string header(const std::string& fingerprint) {
  std::string h(kMagic, sizeof kMagic);
  put(h, static_cast<std::uint64_t>(fingerprint.size()));
  h += fingerprint;
  put(h, fnv1a(fingerprint));
  return h;
}

std::uint64_t record_checksum(std::uint64_t fingerprint, std::string_view payload) {
  std::string bytes;
  put(bytes, fingerprint);
  bytes += payload;
  return fnv1a(bytes);
}

// An intact record at `pos`: its length, fingerprint hash and payload; nullopt-like false when
// the bytes there are not one.
struct RawRecord {
  std::size_t length = 0;
  std::uint64_t fingerprint = 0;
  std::string_view payload;
};

bool record_at(std::string_view data, std::size_t pos, RawRecord& r) {
  std::uint32_t magic = 0;
  std::uint64_t len = 0, sum = 0;
  std::size_t p = pos;
  if (!get(data, p, magic) || magic != kRecordMagic || !get(data, p, r.fingerprint) || !get(data, p, len)) return false;
  if (len > data.size() - p) return false;
  r.payload = data.substr(p, static_cast<std::size_t>(len));
  p += static_cast<std::size_t>(len);
  if (!get(data, p, sum) || sum != record_checksum(r.fingerprint, r.payload)) return false;
  r.length = p - pos;
  return true;
}

// A kept configuration from its bytes, decoded field by field: each enum and bool byte checked
// before it is loaded (a byte 2 loaded as a bool, or strategy 3 indexing the plans, is undefined
// behaviour), then every count, degree and number against its range. A record whose checksum was
// recomputed over altered bytes is thus refused unless its every field is one the search could
// have written.
static_assert(std::is_standard_layout_v<Candidate> && std::is_trivially_copyable_v<Candidate>);
static_assert(sizeof(Strategy) == 1 && sizeof(Recompute) == 1 && sizeof(ParamLayout) == 1 && sizeof(bool) == 1);

bool byte_at_most(std::string_view bytes, std::size_t offset, unsigned max) {
  return static_cast<unsigned char>(bytes[offset]) <= max;
}

bool decode_candidate(std::string_view bytes, Candidate& c) {
  if (bytes.size() != sizeof(Candidate)) return false;
  const bool enums_ok =
      byte_at_most(bytes, offsetof(Candidate, layout.strategy), static_cast<unsigned>(Strategy::TwoDSeqp)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.recompute), static_cast<unsigned>(Recompute::Full)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.params), static_cast<unsigned>(ParamLayout::Amp)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.precision), static_cast<unsigned>(kPrecisionNames.size() - 1)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.schedule), static_cast<unsigned>(PipelineSchedule::DualPipe)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.cp_comm), static_cast<unsigned>(std::size(kCpCommNames) - 1)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.offload), static_cast<unsigned>(Offload::Activations)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.rank_order),
                   static_cast<unsigned>(RankOrder::PipelineInnerDataOuter)) &&
      byte_at_most(bytes, offsetof(Candidate, layout.exec.moe_dispatcher),
                   static_cast<unsigned>(std::size(kMoeDispatcherNames) - 1));
  const std::size_t bools[] = {offsetof(Candidate, layout.attention.flash),
                               offsetof(Candidate, layout.attention.recompute),
                               offsetof(Candidate, layout.exec.sequence_parallel),
                               offsetof(Candidate, layout.exec.fp8_params),
                               offsetof(Candidate, layout.exec.tp_comm_overlap)};
  if (!enums_ok) return false;
  for (const std::size_t offset : bools) {
    if (!byte_at_most(bytes, offset, 1)) return false;
  }
  std::memcpy(&c, bytes.data(), sizeof c);
  const Layout& l = c.layout;
  const TensorSplit& t = l.tensor;
  for (const std::int64_t degree :
       {l.dp, l.pp, t.tp1, t.tp2, t.nv1, t.nv2, t.ep, t.nv_ep, t.cp, t.nv_cp, l.nv_dp, l.nv_pp}) {
    if (degree < 1 || degree > kMaxGpuCount) return false;
  }
  if (l.mbs < 1 || l.mbs > kMaxGlobalBatch || t.nb < 1 || t.nb > kMaxSummaBlocks) return false;
  // every execution option within what its flag takes (model/execution_options.hpp): zero, interleave
  // and ep within their bounds, a stage's blocks 0 (an even share) or a count within the degrees'
  for (const ExecutionOption& o : kExecutionOptions) {
    if (!option_code_possible(o, o.get(l.exec))) return false;
  }
  std::int64_t gpus = 1;
  for (const std::int64_t degree : {l.dp, l.pp, t.tp1, t.tp2, t.cp}) {
    if (__builtin_mul_overflow(gpus, degree, &gpus) || gpus > kMaxGpuCount) return false;
  }
  // Published numbers: finite and non-negative (times, memory, FLOPs, fractions), throughput > 0.
  if (!(std::isfinite(c.throughput) && c.throughput > 0 && std::isfinite(c.mem) && c.mem >= 0)) return false;
  for (const TotalsField& f : kAllTotalsFields) {
    const double v = c.totals.*(f.member);
    if (!(std::isfinite(v) && v >= 0)) return false;
  }
  return true;
}

// Counts the search could have made: none negative, no more infeasible configurations than
// evaluated ones.
bool counters_possible(const SearchCounters& k) {
  for (const std::int64_t v : {k.tensor_splits, k.tensor_splits_too_thin, k.pipelines_rejected_dp, k.candidates,
                               k.infeasible_memory, k.module_evaluations}) {
    if (v < 0) return false;
  }
  return k.infeasible_memory <= k.candidates;
}

bool parse_payload(std::string_view payload, std::size_t n_gpu_counts, std::size_t top_n, std::size_t& target,
                   TargetResult& r) {
  std::size_t q = 0;
  std::uint64_t id = 0, n_tops = 0;
  if (!get(payload, q, id) || !get(payload, q, r.counters) || !counters_possible(r.counters) || !get(payload, q, n_tops) ||
      n_tops != n_gpu_counts) {
    return false;
  }
  for (std::uint64_t i = 0; i < n_tops; ++i) {
    std::uint64_t count = 0;
    if (!get(payload, q, count) || count > top_n) return false;
    TopN top(top_n);
    for (std::uint64_t k = 0; k < count; ++k) {
      Candidate c;
      if (payload.size() - q < sizeof c || !decode_candidate(payload.substr(q, sizeof c), c)) return false;
      q += sizeof c;
      top.push(c);
    }
    r.tops.push_back(std::move(top));
  }
  if (q != payload.size()) return false;
  target = static_cast<std::size_t>(id);
  r.units_done = r.units_total = 0;
  return true;
}

std::string read_regular(const std::string& path) {
  const int fd = open_regular(path, O_RDONLY, "journal");
  std::string data;
  if (!read_all(fd, data, std::string().max_size())) {
    const int err = errno;
    ::close(fd);
    errno = err;
    throw_errno("cannot read journal", path);
  }
  ::close(fd);
  return data;
}

bool exists_no_follow(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string host_and_pid() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown host");
  return std::string("host ") + host + ", pid " + std::to_string(::getpid());
}

}  // namespace

std::string fingerprint_hash(const std::string& text) { return fnv1a_hex(text); }

RunLock::RunLock(const std::string& path) : path_(path) {
  // Lock, then check that the locked file is still the one at `path` (a finishing run removes
  // it): otherwise two runs could each hold a lock on a different file.
  for (int attempt = 0; attempt < 16; ++attempt) {
    fd_ = open_regular(path, O_RDWR | O_CREAT, "lock file");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      std::string owner(256, '\0');
      const ssize_t n = ::pread(fd_, owner.data(), owner.size(), 0);
      owner.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
      while (!owner.empty() && (owner.back() == '\n' || owner.back() == '\0')) owner.pop_back();
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK) {
        throw LockedError("output in use: " + path + " is locked by another run (" +
                          (owner.empty() ? std::string("owner unknown") : owner) +
                          "); wait for it to finish or choose another output (-o)");
      }
      errno = err;
      throw_errno("cannot lock", path);
    }
    struct stat held {}, now {};
    if (::fstat(fd_, &held) == 0 && ::lstat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      const std::string me = host_and_pid() + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        errno = err;
        throw_errno("cannot write", path);
      }
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
  throw IoError("cannot lock " + path + ": it keeps being replaced");
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);
}

void RunLock::remove() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

Journal::Journal(const std::string& path, const std::string& fingerprint, JournalMode mode, std::size_t n_gpu_counts,
                 std::size_t top_n, std::map<std::size_t, TargetResult>& done)
    : path_(path), fingerprint_hash_(fnv1a(fingerprint)) {
  require_regular_or_absent(path, "journal");
  if (!exists_no_follow(path)) {
    create(fingerprint);
    return;
  }
  scan_.existed = true;
  if (mode == JournalMode::kRestart) {
    if (::unlink(path.c_str()) != 0) throw_errno("cannot remove journal", path);
    sync_parent_directory(path);
    create(fingerprint);
    return;
  }
  const std::string data = read_regular(path);
  const std::string_view view(data);
  std::size_t pos = sizeof kMagic;
  std::uint64_t len = 0, sum = 0;
  if (data.empty()) {
    throw InputError(path + ": the journal is empty (its run was stopped before it wrote its header, e.g. on a full "
                            "disk); nothing of it can be resumed: rerun with --restart");
  }
  if (data.size() < sizeof kMagic && std::memcmp(data.data(), kMagic, data.size()) == 0) {
    throw InputError(path + ": the journal is truncated within its header (" + std::to_string(data.size()) +
                     " bytes); nothing of it can be resumed: rerun with --restart");
  }
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
    throw InputError(path + ": not a journal of this perfsweep version; remove it or run with --restart");
  }
  if (!get(view, pos, len) || len > data.size() - pos) {
    throw InputError(path + ": the journal is truncated within its header (" + std::to_string(data.size()) +
                     " bytes); nothing of it can be resumed: rerun with --restart");
  }
  const std::string theirs = data.substr(pos, static_cast<std::size_t>(len));
  pos += static_cast<std::size_t>(len);
  if (!get(view, pos, sum)) {
    throw InputError(path + ": the journal is truncated within its header (" + std::to_string(data.size()) +
                     " bytes); nothing of it can be resumed: rerun with --restart");
  }
  if (sum != fnv1a(theirs)) throw InputError(path + ": corrupt journal header; rerun with --restart");
  if (theirs != fingerprint) {
    throw InputError(path + ": this journal was written by a run with other inputs or another perfsweep version\n"
                     "  journal: " + theirs + "\n  this run: " + fingerprint +
                     "\nrun with --restart to discard it and start over, or choose another output (-o)");
  }

  std::map<std::size_t, TargetResult> found;
  std::string kept_bytes = data.substr(0, pos);
  while (pos < data.size()) {
    RawRecord rec;
    if (record_at(view, pos, rec)) {
      std::size_t target = 0;
      TargetResult r;
      if (rec.fingerprint != fingerprint_hash_) {
        ++scan_.foreign;
        scan_.dropped_bytes += rec.length;
      } else if (parse_payload(rec.payload, n_gpu_counts, top_n, target, r)) {
        ++scan_.kept;
        found[target] = std::move(r);
        kept_bytes.append(data, pos, rec.length);
      } else {
        ++scan_.damaged;
        scan_.dropped_bytes += rec.length;
      }
      pos += rec.length;
      continue;
    }
    // Damage: skip to the next intact record, if any (a torn last record has none after it).
    std::size_t next = pos + 1;
    while (next + kRecordOverhead <= data.size() && !record_at(view, next, rec)) ++next;
    if (next + kRecordOverhead > data.size()) next = data.size();
    if (next < data.size()) ++scan_.damaged;
    scan_.dropped_bytes += next - pos;
    pos = next;
  }

  if (mode == JournalMode::kNew) {
    throw InputError(path + " holds " + std::to_string(scan_.kept) +
                     " finished targets of this same run, interrupted earlier; nothing was overwritten.\n"
                     "  continue it:       rerun the same command with --resume\n"
                     "  discard it:        rerun the same command with --restart");
  }
  done = std::move(found);
  if (scan_.dropped_bytes > 0) {
    // Keep only the accepted records, so later appends follow an intact one.
    write_atomically(path, [&](const std::string& tmp) { write_new_file(tmp, kept_bytes); }, Temporary::kLockHeld);
  }
  fd_ = open_regular(path, O_WRONLY | O_APPEND, "journal");
}

void Journal::create(const std::string& fingerprint) {
  fd_ = open_regular(path_, O_WRONLY | O_CREAT | O_EXCL, "journal");
  write_all(fd_, header(fingerprint), path_);
  if (::fsync(fd_) != 0) throw_errno("cannot sync journal", path_);
  sync_parent_directory(path_);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
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
  put(rec, fingerprint_hash_);
  put(rec, static_cast<std::uint64_t>(payload.size()));
  rec += payload;
  put(rec, record_checksum(fingerprint_hash_, payload));
  write_all(fd_, rec, path_);
  unsynced_ = true;
  if (std::chrono::steady_clock::now() - last_sync_ >= kSyncInterval) sync();
}

void Journal::sync() {
  if (!unsynced_ || fd_ < 0) return;
  if (::fsync(fd_) != 0) throw_errno("cannot sync journal", path_);
  unsynced_ = false;
  last_sync_ = std::chrono::steady_clock::now();
}

void Journal::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) throw_errno("cannot remove journal", path_);
}

}  // namespace perfsweep
