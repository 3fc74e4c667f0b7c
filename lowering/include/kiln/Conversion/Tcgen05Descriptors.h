//===- Tcgen05Descriptors.h - the descriptors tcgen05.mma reads -*- C++ -*-===//
//
// Bit packing of the two descriptors of `tcgen05.mma` (PTX ISA, "Tensorcore
// 5th Generation Family Instructions"): the 64-bit shared memory descriptor
// of an operand and the 32-bit instruction descriptor of kind::f16. Plain
// C++ (no MLIR), so that unit tests check the fields directly.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_TCGEN05DESCRIPTORS_H
#define KILN_CONVERSION_TCGEN05DESCRIPTORS_H

#include <cstdint>

namespace kiln::tcgen05 {

/// Bits 61-63 of the shared memory descriptor.
enum class Swizzle : uint64_t {
  None = 0,
  Bytes128Atom32 = 1, ///< 128-byte swizzle with 32-byte atomicity
  Bytes128 = 2,
  Bytes64 = 4,
  Bytes32 = 6,
};

/// The start address field (bits 0-13): the shared-memory byte address >> 4.
constexpr uint64_t smemDescriptorAddress(uint32_t sharedAddress) {
  return (sharedAddress >> 4) & 0x3FFF;
}

/// Every other field of a shared memory descriptor: the leading dimension
/// byte offset >> 4 in bits 16-29 (relative mode: bit 52 = 0), the stride
/// dimension byte offset >> 4 in bits 32-45, the fixed constant 0b001 in
/// bits 46-48, matrix base offset 0 in bits 49-51 (the pattern starts at a
/// 1024-byte boundary), 0 in bits 53-60 and the swizzle mode in bits 61-63.
constexpr uint64_t smemDescriptorFields(uint64_t leadingBytes, uint64_t strideBytes,
                                        Swizzle swizzle) {
  return (((leadingBytes >> 4) & 0x3FFF) << 16) | (((strideBytes >> 4) & 0x3FFF) << 32) |
         (uint64_t(1) << 46) | (uint64_t(swizzle) << 61);
}

/// A K-major box written by TMA with the 128-byte swizzle (rows of 128
/// bytes): the leading byte offset is unused (1, i.e. 16 bytes), the stride
/// byte offset is 8 rows (1024 bytes), swizzle mode 2. A K step of 16 2-byte
/// elements adds 32 bytes (2 in the address field) to the start address.
constexpr uint64_t kKMajorSwizzled128Fields =
    smemDescriptorFields(/*leadingBytes=*/16, /*strideBytes=*/1024, Swizzle::Bytes128);

/// An MN-major [K, N] operand in the 128-byte swizzle's canonical layout:
/// 64 elements of N in a 128-byte row, 8 K rows to a 1024-byte atom, the
/// 64-column chunks of N `chunkBytes` apart (the leading byte offset; K * 128
/// for a dense [K, N] tile), the stride byte offset 8 K rows (1024 bytes). A
/// k16 step adds 16 rows: 2048 bytes (128 in the address field).
constexpr uint64_t mnMajorSwizzled128Fields(uint64_t chunkBytes) {
  return smemDescriptorFields(chunkBytes, /*strideBytes=*/1024, Swizzle::Bytes128);
}

/// The A/B type field of a kind::f16 instruction descriptor.
enum class F16Kind : uint32_t { F16 = 0, BF16 = 1 };

/// The instruction descriptor of a dense `tcgen05.mma ... .kind::f16` with
/// an f32 D (bits 4-5 = 1), A and B of `ab` (bits 7-9 and 10-12), neither
/// negated (bits 13, 14), A K-major (bit 15 = 0), B K-major or, with
/// `bMnMajor`, MN-major (bit 16: transposed), N >> 3 in bits 17-22 and M >> 4
/// in bits 24-28 (bits 23 and 29 reserved, 30-31 only for .ws).
constexpr uint32_t instrDescriptorF16(F16Kind ab, uint32_t m, uint32_t n, bool bMnMajor = false) {
  return (1u << 4) | (uint32_t(ab) << 7) | (uint32_t(ab) << 10) | (uint32_t(bMnMajor) << 16) |
         ((n >> 3) << 17) | ((m >> 4) << 24);
}

} // namespace kiln::tcgen05

#endif // KILN_CONVERSION_TCGEN05DESCRIPTORS_H
