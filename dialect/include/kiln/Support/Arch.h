//===- Arch.h - The GPU archs kiln compiles for -----------------*- C++ -*-===//
//
// One type for a target arch and what it has, so that passes ask "does the
// target have wgmma" rather than compare arch names.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_ARCH_H
#define KILN_SUPPORT_ARCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

/// A target arch (the arch-specific feature sets `sm_90a`, `sm_100a`,
/// `sm_103a`) and its instructions.
class Arch {
public:
  enum Kind : uint8_t { SM90a, SM100a, SM103a };

  /// Every arch kiln compiles for, by name, in order.
  static llvm::ArrayRef<llvm::StringRef> names() {
    static const llvm::StringRef archs[] = {"sm_90a", "sm_100a", "sm_103a"};
    return archs;
  }

  /// The arch named `name`, or nullopt for a name kiln does not compile for.
  static std::optional<Arch> get(llvm::StringRef name) {
    const auto *it = llvm::find(names(), name);
    if (it == names().end())
      return std::nullopt;
    return Arch(static_cast<Kind>(it - names().begin()));
  }

  Kind kind() const { return archKind; }
  llvm::StringRef name() const { return names()[archKind]; }

  /// wgmma.mma_async, the warpgroup MMA on shared-memory descriptors: Hopper.
  bool hasWgmma() const { return archKind == SM90a; }
  /// tcgen05.mma and Tensor Memory (tcgen05.alloc/ld/st): Blackwell.
  bool hasTcgen05() const { return archKind == SM100a || archKind == SM103a; }
  /// setmaxnreg, the register split of a warp-specialized kernel: every arch.
  bool hasSetmaxnreg() const { return true; }

  /// A capability query, e.g. `&Arch::hasWgmma`.
  using Capability = bool (Arch::*)() const;
  /// The archs with `has`, as messages name them: "sm_90a", "sm_100a or
  /// sm_103a", "sm_90a, sm_100a or sm_103a".
  static std::string namesWith(Capability has) {
    llvm::SmallVector<llvm::StringRef> with;
    for (llvm::StringRef name : names())
      if ((get(name).value().*has)())
        with.push_back(name);
    std::string text;
    for (size_t i = 0; i < with.size(); ++i)
      text += (i == 0 ? "" : i + 1 == with.size() ? " or " : ", ") + with[i].str();
    return text;
  }

  bool operator==(Arch other) const { return archKind == other.archKind; }
  bool operator!=(Arch other) const { return archKind != other.archKind; }

private:
  explicit Arch(Kind kind) : archKind(kind) {}
  Kind archKind;
};

} // namespace kiln

#endif // KILN_SUPPORT_ARCH_H
