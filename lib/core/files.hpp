#pragma once
// Files that are never half-written and never something other than files: outputs are written
// to a temporary (`<path>.partial`, or one per process: Temporary below), synced, renamed into place and the directory synced; inputs and outputs
// that must be regular files are checked without following symlinks or blocking on FIFOs.
// Failures throw IoError naming the file and the operating system's reason.
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace perfsweep {

// IoError "<what> <path>: <strerror(errno)>".
[[noreturn]] void throw_errno(const std::string& what, const std::string& path);

// InputError unless `path` is absent or a regular file (not a symlink, directory, FIFO, socket or
// device). `role` names it in the message ("output", "journal").
void require_regular_or_absent(const std::string& path, std::string_view role);

// The whole of an input file (a model, a system, a runtime, a sweep): InputError "PATH: no such
// file", "PATH: is a FIFO; an input must be a regular file" (a FIFO is never read: it would block),
// "PATH: N bytes; an input of this kind is at most MAX bytes", or one with the operating system's
// reason. Symlinks are followed (a Hugging Face cache links config.json to its blob).
std::string read_input_file(const std::string& path, std::size_t max_bytes);

// For readers that stream a file (measurement tables), which report a missing one themselves:
// InputError "PATH: is a FIFO; an input must be a regular file" when `path` names something other
// than a regular file (following symlinks), which a stream would block on or misread.
void require_input_file(const std::string& path);

// InputError "OUTPUT is the input INPUT; an output never replaces an input: choose another name"
// when `output` exists and is one of `inputs` (the same file by device and inode, whatever the
// paths that name it: a link, "./x", "../d/x"). Inputs that do not exist are skipped.
void refuse_output_over_input(const std::string& output, const std::vector<std::string>& inputs);

// open(2) that neither follows a final symlink nor blocks on a FIFO, and refuses (InputError)
// anything but a regular file. Returns a blocking descriptor.
int open_regular(const std::string& path, int flags, std::string_view role, mode_t mode = 0644);

// Appends what is left to read of fd to `data`, retrying interrupted reads; false with errno set
// when a read fails, or EFBIG once `data` would pass max_bytes.
bool read_all(int fd, std::string& data, std::size_t max_bytes);

// Writes all of `bytes` to fd (retrying short writes); IoError naming `path` on failure.
void write_all(int fd, std::string_view bytes, const std::string& path);

// fsync(2) of the directory holding `path` (so a rename in it is durable).
void sync_parent_directory(const std::string& path);

// fsync(2) of a finished temporary file; IoError naming it on failure.
void sync_file(const std::string& path);

// Syncs the finished temporary file `tmp`, renames it to `path` (replacing an earlier file
// only now) and syncs the directory.
void publish_file(const std::string& tmp, const std::string& path);

// Publishes a file and its sidecar as one unit: syncs both temporaries, keeps a second name
// (previous_path_for(path)) for an earlier `path`, renames `tmp` over `path`, then `sidecar_tmp`
// over `sidecar`, syncs the directory and drops the second name. A failure of any step leaves
// the earlier pair (a failed sidecar rename puts the earlier file back) or, once both renames are
// done, the new pair; IoError says which. Only a kill between the two renames leaves the new file
// beside the earlier sidecar; the sidecar records its file's hash, so readers detect that, and
// the next run republishes both.
void publish_pair(const std::string& tmp, const std::string& path, const std::string& sidecar_tmp,
                  const std::string& sidecar);
// `<path>.previous`: the earlier file's second name while a pair is published.
std::string previous_path_for(const std::string& path);

// Whose temporary a write uses. A writer that holds the output's lock (sweep: its journal's flock,
// parallel/journal.hpp) is the only one that can write it: its temporary is `<path>.partial`, a
// name tests and tools can watch, and a stale one left by a killed run is removed. Any other
// writer (report, configs -o, comm fit, validate) may run beside another on the same output: its
// temporary is its own, `<path>.partial.<pid>`, so that neither removes or renames the other's
// half-written file (the last to finish publishes; each output is whole).
enum class Temporary { kUnique, kLockHeld };

// The temporary's name for `path` (`<path>.partial`, or `<path>.partial.<pid>` of this process).
std::string partial_path_for(const std::string& path, Temporary kind);

// Prepares the temporary of `path` for writing: creates the parent directory, refuses an output
// or temporary that is not a regular file, removes a stale temporary of that name. Returns the
// temporary's path.
std::string begin_partial(const std::string& path, Temporary kind);

// Writes `fill(tmp)` to a temporary and publishes it as `path`. On any failure the temporary is
// removed, an earlier file at `path` is left as it was, and the error propagates.
void write_atomically_impl(const std::string& path, void (*fill)(const std::string&, void*), void* ctx,
                           Temporary kind);
template <typename F>
void write_atomically(const std::string& path, F&& fill, Temporary kind = Temporary::kUnique) {
  write_atomically_impl(
      path, [](const std::string& tmp, void* ctx) { (*static_cast<std::remove_reference_t<F>*>(ctx))(tmp); },
      const_cast<void*>(static_cast<const void*>(&fill)), kind);
}

// Creates `path` (which must not exist) holding `text`; not synced (publish_file syncs).
void write_new_file(const std::string& path, std::string_view text);

// A text file, atomically as above.
void write_text_atomically(const std::string& path, std::string_view text);

// Temporary files being written, for a signal handler to remove (async-signal-safe to read):
// slot 0 is write_atomically's, slot 1 a second temporary published along with it (a sidecar).
inline constexpr int kPartialSlots = 2;
const char* partial_output_path(int slot = 0);
void track_partial(const std::string& path, int slot);
void untrack_partial(int slot);

// Flushes std::cout and stdout; IoError when what was written did not reach its destination
// (a full disk, a closed pipe, /dev/full).
void flush_stdout();

}  // namespace perfsweep
