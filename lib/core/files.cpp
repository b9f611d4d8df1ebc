#include "core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/error.hpp"

namespace perfsweep {
namespace {

char g_partial_path[kPartialSlots][4096] = {};

const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

std::string parent_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

}  // namespace

void throw_errno(const std::string& what, const std::string& path) {
  const int err = errno;
  throw IoError(what + " " + path + ": " + std::strerror(err));
}

void require_regular_or_absent(const std::string& path, std::string_view role) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw_errno("cannot inspect " + std::string(role), path);
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(std::string(role) + " " + path + " is " + kind_of(st.st_mode) +
                     "; it must be a regular file (or not exist yet)");
  }
}

std::string read_input_file(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw InputError(path + ": no such file");
    throw InputError(path + ": cannot read: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t m = st.st_mode;
    ::close(fd);
    throw InputError(path + ": is " + kind_of(m) + "; an input must be a regular file");
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw InputError(path + ": " + std::to_string(st.st_size) + " bytes; an input of this kind is at most " +
                     std::to_string(max_bytes) + " bytes");
  }
  std::string data;
  data.reserve(static_cast<std::size_t>(st.st_size));
  if (!read_all(fd, data, max_bytes)) {
    const int err = errno;
    ::close(fd);
    throw InputError(path + ": cannot read: " + std::strerror(err));
  }
  ::close(fd);
  return data;
}

bool read_all(int fd, std::string& data, std::size_t max_bytes) {
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    if (data.size() + static_cast<std::size_t>(n) > max_bytes) {
      errno = EFBIG;
      return false;
    }
    data.append(buf, static_cast<std::size_t>(n));
  }
}

void require_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw InputError(path + ": is " + kind_of(st.st_mode) + "; an input must be a regular file");
  }
}

void refuse_output_over_input(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // a new file is none of the inputs
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      throw InputError(output + " is the input " + input +
                       "; an output never replaces an input: choose another name for the output");
    }
  }
}

int open_regular(const std::string& path, int flags, std::string_view role, mode_t mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENXIO || errno == EISDIR) require_regular_or_absent(path, role);
    throw_errno("cannot open " + std::string(role), path);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t m = st.st_mode;
    ::close(fd);
    throw InputError(std::string(role) + " " + path + " is " + kind_of(m) + "; it must be a regular file");
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    ::close(fd);
    throw_errno("cannot configure", path);
  }
  return fd;
}

void write_all(int fd, std::string_view bytes, const std::string& path) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path);
    }
    off += static_cast<std::size_t>(n);
  }
}

void sync_parent_directory(const std::string& path) {
  const std::string dir = parent_of(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open directory", dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL); the rename is still in place.
  if (rc != 0 && err != EINVAL && err != EROFS) {
    errno = err;
    throw_errno("cannot sync directory", dir);
  }
}

void sync_file(const std::string& path) {
  const int fd = open_regular(path, O_RDONLY, "temporary file");
  const int rc = ::fsync(fd);
  const int err = errno;
  if (::close(fd) != 0 && rc == 0) throw_errno("cannot close", path);
  if (rc != 0) {
    errno = err;
    throw_errno("cannot sync", path);
  }
}

void publish_file(const std::string& tmp, const std::string& path) {
  sync_file(tmp);
  require_regular_or_absent(path, "output");
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw_errno("cannot rename " + tmp + " to", path);
  sync_parent_directory(path);
}

std::string previous_path_for(const std::string& path) {
  std::string previous = path;
  previous += ".previous";
  return previous;
}

void publish_pair(const std::string& tmp, const std::string& path, const std::string& sidecar_tmp,
                  const std::string& sidecar) {
  // Both temporaries reach the disk before either name changes: a failure up to here changes nothing.
  sync_file(tmp);
  sync_file(sidecar_tmp);
  require_regular_or_absent(path, "output");
  require_regular_or_absent(sidecar, "output");
  const std::string previous = previous_path_for(path);
  require_regular_or_absent(previous, "temporary file");
  if (::unlink(previous.c_str()) != 0 && errno != ENOENT) throw_errno("cannot remove stale", previous);
  // A second name for the earlier file, so that it can be put back if the sidecar cannot follow.
  // Without one (a file system without hard links) a failed sidecar rename leaves a mismatch
  // that readers detect by the sidecar's hash and a rerun with --resume repairs.
  bool had_earlier = true, kept = false;
  if (::link(path.c_str(), previous.c_str()) == 0) {
    kept = true;
  } else if (errno == ENOENT) {
    had_earlier = false;
  } else if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK) {
    throw_errno("cannot link " + path + " to", previous);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    if (kept) ::unlink(previous.c_str());
    errno = err;
    throw_errno("cannot rename " + tmp + " to", path);
  }
  if (::rename(sidecar_tmp.c_str(), sidecar.c_str()) != 0) {
    const int err = errno;
    bool restored = false;
    if (kept) {
      restored = ::rename(previous.c_str(), path.c_str()) == 0;
    } else if (!had_earlier) {
      restored = ::unlink(path.c_str()) == 0;
    }
    if (restored) {
      try {
        sync_parent_directory(path);
      } catch (const IoError&) {
        // the earlier pair is in place; only its durability is unknown, and the run fails anyway
      }
    }
    std::string message = "cannot rename ";
    message += sidecar_tmp;
    message += " to ";
    message += sidecar;
    message += ": ";
    message += std::strerror(err);
    if (restored) {
      message += had_earlier ? "; the earlier " : "; no ";
      message += path;
      message += had_earlier ? " is back in place" : " was published";
    } else {
      message += "; ";
      message += path;
      message += " is the new file, ";
      message += sidecar;
      message += " the earlier one (its recorded hash tells them apart)";
    }
    throw IoError(message);
  }
  try {
    sync_parent_directory(path);
  } catch (...) {
    if (kept) ::unlink(previous.c_str());
    throw;
  }
  // Left behind only if this fails; the next publication removes it.
  if (kept) ::unlink(previous.c_str());
}

std::string partial_path_for(const std::string& path, Temporary kind) {
  std::string tmp = path + ".partial";
  if (kind == Temporary::kUnique) {
    tmp += '.';
    tmp += std::to_string(::getpid());
  }
  return tmp;
}

std::string begin_partial(const std::string& path, Temporary kind) {
  require_regular_or_absent(path, "output");
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) throw IoError("cannot create directory " + target.parent_path().string() + ": " + ec.message());
  }
  const std::string tmp = partial_path_for(path, kind);
  require_regular_or_absent(tmp, "temporary file");
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) throw_errno("cannot remove stale", tmp);
  return tmp;
}

void write_atomically_impl(const std::string& path, void (*fill)(const std::string&, void*), void* ctx,
                           Temporary kind) {
  const std::string tmp = begin_partial(path, kind);
  track_partial(tmp, 0);
  try {
    fill(tmp, ctx);
    publish_file(tmp, path);
  } catch (const IoError& e) {
    ::unlink(tmp.c_str());
    untrack_partial(0);
    throw IoError("cannot write " + path + ": " + e.what());
  } catch (...) {
    ::unlink(tmp.c_str());
    untrack_partial(0);
    throw;
  }
  untrack_partial(0);
}

void write_new_file(const std::string& path, std::string_view text) {
  const int fd = open_regular(path, O_WRONLY | O_CREAT | O_EXCL, "temporary file");
  try {
    write_all(fd, text, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw_errno("cannot close", path);
}

void write_text_atomically(const std::string& path, std::string_view text) {
  write_atomically(path, [&](const std::string& tmp) { write_new_file(tmp, text); });
}

const char* partial_output_path(int slot) { return g_partial_path[slot][0] ? g_partial_path[slot] : nullptr; }

void track_partial(const std::string& path, int slot) {
  std::snprintf(g_partial_path[slot], sizeof g_partial_path[slot], "%s", path.c_str());
}

void untrack_partial(int slot) { g_partial_path[slot][0] = 0; }

void flush_stdout() {
  std::cout.flush();
  const bool stream_ok = static_cast<bool>(std::cout);
  const int earlier = errno;  // set by the write that failed, if one did
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int cause = errno ? errno : earlier;
  if (!flushed || std::ferror(stdout) || !stream_ok) {
    throw IoError(std::string("cannot write to standard output") + (cause ? std::string(": ") + std::strerror(cause) : ""));
  }
}

}  // namespace perfsweep
