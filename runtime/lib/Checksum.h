//===- Checksum.h - XXH64 and little-endian helpers (private) ---*- C++ -*-===//
#ifndef KILN_RUNTIME_LIB_CHECKSUM_H
#define KILN_RUNTIME_LIB_CHECKSUM_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::detail {

inline uint64_t xxh64(std::string_view bytes) {
  return XXH64(bytes.data(), bytes.size(), /*seed=*/0);
}

inline uint32_t loadU32(const char *p) {
  const auto *b = reinterpret_cast<const unsigned char *>(p);
  return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
}
inline uint64_t loadU64(const char *p) {
  return uint64_t(loadU32(p)) | uint64_t(loadU32(p + 4)) << 32;
}
inline void storeU32(char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline void storeU64(char *p, uint64_t v) {
  storeU32(p, static_cast<uint32_t>(v));
  storeU32(p + 4, static_cast<uint32_t>(v >> 32));
}

/// Byte offsets of the version-1 header fields.
namespace header {
constexpr size_t kMagic = 0;
constexpr size_t kVersion = 8;
constexpr size_t kHeaderSize = 12;
constexpr size_t kFileSize = 16;
constexpr size_t kManifestOffset = 24;
constexpr size_t kManifestSize = 32;
constexpr size_t kManifestXXH64 = 40;
constexpr size_t kReserved = 48;
constexpr size_t kHeaderXXH64 = 56;
} // namespace header

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

} // namespace kiln::detail

#endif // KILN_RUNTIME_LIB_CHECKSUM_H
