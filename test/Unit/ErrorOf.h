//===- ErrorOf.h - The message of the kiln::Error a call throws -*- C++ -*-===//

#ifndef KILN_TEST_UNIT_ERROROF_H
#define KILN_TEST_UNIT_ERROROF_H

#include "kiln/Runtime/Error.h"

#include <functional>
#include <string>

namespace kiln::test {

/// What `fn` throws as a kiln::Error, or "(no error)".
inline std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace kiln::test

#endif // KILN_TEST_UNIT_ERROROF_H
