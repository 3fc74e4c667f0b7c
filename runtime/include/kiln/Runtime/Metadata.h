//===- Metadata.h - Kernel metadata: params, dtypes, images -----*- C++ -*-===//
//
// The decoded form of one kernel entry of a bundle manifest (see
// docs/bundle-format.md), and the validation shared by the writer, the reader
// and the JIT path.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_METADATA_H
#define KILN_RUNTIME_METADATA_H

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Element / scalar types of kernel parameters.
enum class DType : uint8_t {
  I1,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  F16,
  BF16,
  F32,
  F64,
  F8E4M3,
  F8E5M2,
};

/// The manifest spelling of `dtype` ("bf16", "i32", ...).
std::string_view dtypeName(DType dtype);
/// Parses a manifest dtype name; std::nullopt if unknown.
std::optional<DType> parseDType(std::string_view name);
/// Size in bytes of one value of `dtype` as passed by value (i1 is one byte).
unsigned dtypeBytes(DType dtype);
bool isFloatDType(DType dtype);
bool isSignedIntDType(DType dtype);
bool isUnsignedIntDType(DType dtype);

/// Whether a parameter is a device pointer or a by-value scalar.
/// Pointer and Scalar params are 8 bytes or less; a TensorMap param is a
/// 128-byte CUtensorMap passed by value (a `tensordesc` kernel parameter).
enum class ParamKind : uint8_t { Pointer, Scalar, TensorMap };

/// One kernel parameter, in ABI order. Constexprs are not parameters.
struct ParamInfo {
  std::string name;
  ParamKind kind = ParamKind::Scalar;
  /// Element type for pointers, value type for scalars.
  DType dtype = DType::I32;
  /// Pointers: required byte alignment of the address. Scalars: the value is
  /// a multiple of it (informational; the launcher checks pointers only).
  uint64_t divisibility = 1;
  /// TensorMap params: the box the kernel was compiled for (elements,
  /// outermost dimension first) and the shared-memory swizzle in bytes.
  std::vector<uint32_t> box;
  unsigned swizzle = 0;

  /// "x: ptr<bf16> (div 16)" / "n: i32" / "d: tensordesc<bf16, 64x128>".
  std::string describe() const;
  /// "ptr<bf16>" / "i32" / "tensordesc<bf16, 64x128>" (the type alone).
  std::string describeType() const;
};

/// One image of a kernel: where it lies in the bundle and its checksum.
struct ImageInfo {
  /// "sm_90a", "sm_100a", "sm_103a", "sm_90", ...
  std::string arch;
  /// "cubin" or "ptx".
  std::string kind;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t xxh64 = 0;
};

/// What one arch's image of a kernel uses and costs (manifest "targets"
/// object, recorded by the compiler; every field is optional: -1 or empty
/// when the compiler did not record it).
struct TargetInfo {
  std::string arch;
  /// Hardware features the code uses: "tma", "wgmma", "tcgen05", "elect",
  /// "pdl", "sys_atomics", "vector16", "mbarrier", "setmaxnreg".
  std::vector<std::string> features;
  int64_t registers = -1;
  int64_t stackBytes = -1;
  int64_t spillStoreBytes = -1;
  int64_t spillLoadBytes = -1;
  int64_t sharedStaticBytes = -1;
  /// PTX ISA version of the source ("8.8").
  std::string ptxIsa;
  /// "nvJitLink" or "ptxas", and its version ("13.0.88").
  std::string assembler;
  std::string assemblerVersion;
};

/// The feature names kiln's compiler records.
const std::vector<std::string> &knownFeatures();

/// A decoded, validated kernel entry.
struct KernelEntry {
  /// User-facing name; several entries may share it (specializations).
  std::string name;
  /// Entry function name inside the cubin.
  std::string symbol;
  std::vector<ParamInfo> params;
  /// JSON object: constexpr name -> value.
  nlohmann::json constexprs = nlohmann::json::object();
  unsigned threadsPerBlock = 0;
  /// Dynamic shared memory per block, bytes.
  unsigned sharedBytes = 0;
  /// Launch with programmatic stream serialization (PDL).
  bool pdl = false;
  std::array<unsigned, 3> cluster = {1, 1, 1};
  std::vector<std::string> features;
  std::string sourceHash;
  std::string specialization;
  /// Version of the compiler that built this entry (may differ per entry
  /// when bundles are merged); empty if not recorded.
  std::string compilerVersion;
  /// Per-arch facts, sorted by arch.
  std::vector<TargetInfo> targets;
  std::vector<ImageInfo> images;

  /// The facts recorded for `arch`, or nullptr.
  const TargetInfo *target(const std::string &arch) const;
  /// The entry exactly as stored (with defaults filled in).
  nlohmann::json meta;

  /// Archs of the images, in manifest order; PTX images carry a " (ptx)" suffix.
  std::vector<std::string> archList() const;
  /// True if every key of `subset` (a JSON object, or null for "any") is a
  /// constexpr of this entry with an equal value.
  bool matchesConstexprs(const nlohmann::json &subset) const;
  /// "BLOCK=1024, HAS_LINEAR_BETA=true".
  std::string describeConstexprs() const;
};

/// Validates a kernel JSON object and decodes it. `where` names the entry in
/// error messages (e.g. "bundle 'x.kbundle': kernel 3"). If `withImages`, the
/// "images" array is required and decoded; otherwise it is ignored. Throws
/// kiln::Error naming the field that is missing or has the wrong type.
KernelEntry parseKernelEntry(const nlohmann::json &meta, const std::string &where, bool withImages);

/// Returns `meta` without "images" and with every optional field present
/// (constexprs, pdl, cluster, features, source_hash, specialization).
/// Validates it like parseKernelEntry.
nlohmann::json normalizeKernelMeta(const nlohmann::json &meta, const std::string &where);

/// True for "sm_<digits>" optionally followed by 'a' or 'f'.
bool isValidArch(std::string_view arch);
/// The numeric part of an arch name ("sm_103a" -> 103); -1 if invalid.
int archNumber(std::string_view arch);

/// The arch name kiln compiles for a compute capability: (9,0) -> "sm_90a",
/// (10,0) -> "sm_100a", (10,3) -> "sm_103a", otherwise "sm_<major><minor>".
std::string archForComputeCapability(int major, int minor);

/// Picks the image to load on a device of arch `deviceArch` (as returned by
/// archForComputeCapability): a cubin of that exact arch; else a cubin of the
/// same arch without the 'a'/'f' suffix; else PTX of that exact arch; else
/// the newest plain (suffix-less) PTX not newer than the device. Returns the
/// index into entry.images. Throws kiln::Error naming the device and listing
/// the archs the entry holds. Pure: needs no GPU.
size_t selectImage(const KernelEntry &entry, const std::string &deviceArch,
                   const std::string &deviceName);

/// Formats a 64-bit checksum as 16 lowercase hex digits.
std::string hex64(uint64_t value);

} // namespace kiln

#endif // KILN_RUNTIME_METADATA_H
