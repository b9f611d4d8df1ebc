#pragma once
// Typed errors thrown by the library. Only apps/ catch them, log, and exit non-zero.
#include <stdexcept>
#include <string>

namespace perfsweep {

// Bad user input: a file, a key and a value that do not make sense. Exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration the cost model cannot express (e.g. tp does not divide the heads). Exit code 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file could not be read, written, synced, renamed or locked; the message names the file and
// the operating system's reason (e.g. "No space left on device"). Exit code 1.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An HDF5 call failed; the message names the object and the innermost cause HDF5 reported.
class H5Error : public IoError {
 public:
  using IoError::IoError;
};

// Another run holds the output (its journal lock). Exit code 1.
class LockedError : public IoError {
 public:
  using IoError::IoError;
};

}  // namespace perfsweep
