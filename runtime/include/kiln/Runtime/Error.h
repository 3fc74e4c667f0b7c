//===- Error.h - The runtime's one exception type ---------------*- C++ -*-===//
//
// Every failure of the kiln runtime (a malformed bundle, a missing image, a bad
// argument, a CUDA driver error) is reported as a kiln::Error whose message
// starts with "kiln: " and names what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ERROR_H
#define KILN_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace kiln {

/// The exception thrown by every part of the runtime. The message is complete
/// and user-facing; it always starts with "kiln: ".
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message)
      : std::runtime_error(message.rfind("kiln: ", 0) == 0 ? message : "kiln: " + message) {}
};

} // namespace kiln

#endif // KILN_RUNTIME_ERROR_H
