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

/// The accumulator layouts of `#tile.mma` for an [m, n] tile.
///
/// Version 2 (mma.sync m16n8k16, WN = warpsN warps along N, WM = warps / WN
/// along M, Nw = n / WN columns a warp, g = lane / 4, t = lane mod 4): warp w
/// at (wM, wN) = (w mod WM, w / WM) holds in register
/// reg = rM * Nw/2 + 4j + 2h + e (rM < max(1, m / (16 WM)))
///   row  = (16 (WM rM + wM) + g + 8h) mod m,
///   col  = wN * Nw + 8j + 2t + e;
/// with n = 1 (the column of a row vector) register 2 rM + h holds that row.
/// m is a power of two: rows wrap where m < 16 WM (warps holding copies) and,
/// for m <= 8, both halves h hold row g mod m. With WN = 1 and m a multiple of
/// 64 * warps / 4 these are version 3's registers.
///
/// Version 3 (wgmma, GN = warpsN warpgroups along N, GM = warpgroups / GN
/// along M, Ng = n / GN columns a warpgroup): warpgroup g = thread / 128 at
/// (gM, gN) = (g mod GM, g / GM) holds the 64-row slabs gM, gM + GM, ... of
/// its columns gN * Ng .. (gN + 1) * Ng - 1; element (row, col) of register
/// `reg` of thread `thread` is
///   slab = rep * GM + gM, rep = reg / (Ng / 2),
///   row  = 64 slab + 16 (thread / 32 mod 4) + lane / 4 + 8 (reg / 2 mod 2),
///   col  = gN * Ng + 8 (reg mod Ng/2) / 4 + 2 (lane mod 4) + reg mod 2,
/// each warpgroup's registers those of a wgmma of N = Ng into its columns.
/// With m = 64 * GM these are version 2's of WN = GN (warps w and w + 4 GM
/// hold the same rows).
/// Version 5 (tcgen05.ld.32x32b of a TMEM accumulator, m = 128):
///   row  = thread mod 128,
///   col  = (thread / 128) * n / warpgroups + reg.
/// Version 3 with n = 1 (a row vector [m, 1], and the `#tile.slice` [m] of
/// any version 3 tile, whose row-major indices are the same): register
/// reg = 2 rep + h holds the row above of column 0, one register a row:
///   row  = 64 slab + 16 (thread / 32 mod 4) + lane / 4 + 8 h.
/// Either way its row-major index is a per-thread base plus a per-register
/// offset.
struct MmaLayout {
  int64_t m, n;
  int64_t warps;
  int64_t version = 3;
  int64_t warpsN = 1;

  int64_t warpgroups() const { return warps / 4; }
  /// Version 3: the warpgroups along M (the 64-row slabs in turn).
  int64_t warpgroupsM() const { return warpgroups() / warpsN; }
  /// Version 2: the warps along M, and the columns of a warp (version 3: of
  /// a warpgroup).
  int64_t warpsM() const { return warps / warpsN; }
  int64_t columnsPerWarp() const { return n == 1 ? 1 : n / warpsN; }
  /// The 16-row blocks (version 2) or 64-row slabs (version 3) each warp holds.
  int64_t reps() const {
    return version == 2 ? std::max<int64_t>(1, m / (16 * warpsM())) : m / (64 * warpgroupsM());
  }
  /// Version 5: the columns each thread holds.
  int64_t columnsPerThread() const { return n / warpgroups(); }
  int64_t regsPerThread() const {
    return version == 5 ? columnsPerThread() : reps() * regsPerSlab();
  }
  /// Versions 2 and 3: the registers of one 16-row block or 64-row slab.
  int64_t regsPerSlab() const { return n == 1 ? 2 : columnsPerWarp() / 2; }
  /// Version 2: the rows between a block's two halves (0 where m <= 8 wraps them).
  int64_t halfRows() const { return version == 2 && m <= 8 ? 0 : 8; }
  /// Consecutive elements of a row in consecutive registers.
  int64_t run() const { return version == 5 ? columnsPerThread() : n == 1 ? 1 : 2; }
  /// The row-major index of the element of `thread`'s register 0.
  int64_t baseOf(int64_t thread) const {
    if (version == 5)
      return (thread % 128) * n + (thread / 128) * columnsPerThread();
    if (version == 2) {
      int64_t warp = thread / 32 % warps, lane = thread % 32;
      int64_t row = (16 * (warp % warpsM()) + lane / 4) & (m - 1);
      if (n == 1)
        return row;
      return row * n + (warp / warpsM()) * columnsPerWarp() + 2 * (lane % 4);
    }
    int64_t lane = thread % 32, group = thread / 128 % warpgroups();
    int64_t row = (group % warpgroupsM()) * 64 + (thread / 32 % 4) * 16 + lane / 4;
    if (n == 1)
      return row;
    return row * n + (group / warpgroupsM()) * columnsPerWarp() + 2 * (lane % 4);
  }
  /// The index of register `reg`'s element minus the thread's base.
  int64_t offsetOf(int64_t reg) const {
    if (version == 5)
      return reg;
    if (version == 2) {
      int64_t rep = reg / regsPerSlab(), q = reg % regsPerSlab();
      if (n == 1)
        return rep * 16 * warpsM() + q * halfRows();
      return (rep * 16 * warpsM() + (q / 2 % 2) * halfRows()) * n + (q / 4) * 8 + q % 2;
    }
    int64_t rep = reg / regsPerSlab(), q = reg % regsPerSlab();
    if (n == 1)
      return rep * warpgroupsM() * 64 + q * 8;
    return rep * warpgroupsM() * 64 * n + (q / 2 % 2) * 8 * n + (q / 4) * 8 + q % 2;
  }
  /// The row-major index of register `reg`'s element in `thread`.
  int64_t elementOf(int64_t thread, int64_t reg) const { return baseOf(thread) + offsetOf(reg); }
};

} // namespace kiln::tile

#endif // KILN_DIALECT_TILE_IR_LAYOUT_H
