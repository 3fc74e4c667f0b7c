//===- Layout.h - blocked layout of tiles over threads ----------*- C++ -*-===//
//
// The one distributed layout of the walking skeleton: in row-major element
// order each thread owns runs of `vec` consecutive elements; thread t owns run
// t, t + T, t + 2T, ... A tile of fewer than T * vec elements is replicated:
// thread t holds the run (t mod runs) and is a duplicate if t >= runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TILE_IR_LAYOUT_H
#define KILN_DIALECT_TILE_IR_LAYOUT_H

#include <algorithm>
#include <cstdint>

namespace kiln::tile {

struct BlockedLayout {
  int64_t numel;   ///< elements of the tile (a power of two)
  int64_t threads; ///< threads per block (a power of two)
  int64_t vec;     ///< consecutive elements per run (clamped to numel)

  static BlockedLayout get(int64_t numel, int64_t threads, int64_t elemsPerThread) {
    return {numel, threads, std::min<int64_t>(elemsPerThread, numel)};
  }
  /// Number of runs in the tile.
  int64_t runs() const { return numel / vec; }
  /// Whether every thread holds distinct elements (no replication).
  bool isReplicated() const { return runs() < threads; }
  /// Registers (elements) per thread.
  int64_t regsPerThread() const { return isReplicated() ? vec : numel / threads; }
  /// Element index held in register `reg` by thread `thread`.
  int64_t elementOf(int64_t thread, int64_t reg) const {
    if (isReplicated())
      return (thread % runs()) * vec + reg;
    return ((reg / vec) * threads + thread) * vec + reg % vec;
  }
};

} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_IR_LAYOUT_H
