//===- Kernel.h - Launching kernels on the CUDA Driver API ------*- C++ -*-===//
//
// A Kernel is one kernel entry plus its images. Launching loads the right
// image for the current context's device (once per context, cached), checks
// the arguments against the parameters and calls cuLaunchKernelEx. libcuda is
// opened with dlopen on first use; nothing here links against it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_KERNEL_H
#define KILN_RUNTIME_KERNEL_H

#include "kiln/Runtime/Error.h"
#include "kiln/Runtime/Metadata.h"
#include "kiln/Runtime/TensorMap.h"

#include <cuda.h>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// A tagged kernel argument: a 64-bit device pointer or a scalar of a dtype,
/// stored as its little-endian bytes (the kernel ABI passes it by value).
class KernelArg {
public:
  static KernelArg pointer(uint64_t address);
  static KernelArg pointer(const void *address) {
    return pointer(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address)));
  }
  static KernelArg i1(bool v);
  static KernelArg i8(int8_t v);
  static KernelArg i16(int16_t v);
  static KernelArg i32(int32_t v);
  static KernelArg i64(int64_t v);
  static KernelArg u8(uint8_t v);
  static KernelArg u16(uint16_t v);
  static KernelArg u32(uint32_t v);
  static KernelArg u64(uint64_t v);
  static KernelArg f32(float v);
  static KernelArg f64(double v);
  /// A scalar of `dtype` given by its raw bits (f16, bf16, f8 and the rest).
  static KernelArg bits(DType dtype, uint64_t bits);

  /// Integer `value` as a scalar of integer dtype `dtype`; throws kiln::Error
  /// (naming `what`) if it is out of range or `dtype` is not an integer type.
  static KernelArg fromInteger(DType dtype, long long value, const std::string &what);
  static KernelArg fromUnsigned(DType dtype, unsigned long long value, const std::string &what);
  /// `value` rounded to float dtype `dtype` (f16/bf16 round to nearest even;
  /// f8 types are rejected: pass their bits).
  static KernelArg fromFloat(DType dtype, double value, const std::string &what);

  /// A 128-byte CUtensorMap by value for a `tensordesc` param. The map must
  /// stay valid until the launch call returns (the driver copies it then);
  /// `spec` (what it was encoded from) is checked against the param's dtype,
  /// box and swizzle.
  static KernelArg tensorMap(const CUtensorMap &map, const TensorMapSpec &spec);
  /// The same from raw bytes and the geometry they encode: `box` outermost
  /// dimension first, as the kernel's metadata records it. A wide box (a
  /// 128-byte swizzled param box whose rows span more than 128 bytes, which
  /// the kernel copies one 128-byte column chunk at a time) is encoded with
  /// the box of one chunk (its inner dimension 128 bytes) and passed here
  /// with the param's whole box.
  static KernelArg tensorMap(const void *map, DType dtype, const std::vector<uint32_t> &box,
                             unsigned swizzle);

  bool isPointer() const { return kind_ == ParamKind::Pointer; }
  ParamKind kind() const { return kind_; }
  /// Scalars only.
  DType dtype() const { return dtype_; }
  uint64_t raw() const { return raw_; }
  /// Address of the value, as cuLaunchKernelEx wants it.
  const void *data() const {
    return kind_ == ParamKind::TensorMap ? reinterpret_cast<const void *>(raw_) : &raw_;
  }
  /// TensorMaps: the box and swizzle, packed (see tensorMapGeometry).
  uint64_t geometry() const { return geometry_; }
  /// "ptr", "i32", "f32", "tensordesc<bf16, 64x128>", ...
  std::string describe() const;

private:
  KernelArg(ParamKind kind, DType dtype, uint64_t raw, uint64_t geometry = 0)
      : kind_(kind), dtype_(dtype), raw_(raw), geometry_(geometry) {}
  ParamKind kind_;
  DType dtype_;
  uint64_t raw_;
  uint64_t geometry_;
};

/// The box (outermost dimension first) and swizzle of a tensor map as one
/// number, for a cheap comparison at launch.
uint64_t tensorMapGeometry(const std::vector<uint32_t> &box, unsigned swizzle);
/// The inverse: the `tensormap` param type of `dtype` elements that `geometry`
/// packs (kind, dtype, box and swizzle set), for messages.
ParamInfo tensorMapParamType(DType dtype, uint64_t geometry);

/// Checks `args` against `entry.params`: count, pointer vs scalar, scalar
/// dtype, pointer alignment (divisibility). Throws kiln::Error naming the
/// kernel and the parameter. Pure: needs no GPU.
void checkArgs(const KernelEntry &entry, const std::vector<KernelArg> &args);
/// The same check without building any message: true if `args` fit. Pure,
/// allocation-free (the launch path's check; checkArgs explains a failure).
bool argsFit(const KernelEntry &entry, const KernelArg *args, size_t numArgs) noexcept;

/// The largest grid dimensions a launch takes, along x, y and z (CUDA's maxGridSize; the
/// Python host rules, kiln.host.MAX_GRID, are the same).
inline constexpr std::array<unsigned, 3> kMaxGridDims = {2147483647u, 65535u, 65535u};

/// "kernel 'k': grid dimension 1 = 65536 is out of range [0, 65535]": the message of a grid
/// dimension beyond kMaxGridDims (or negative, from a binding), `value` as written.
std::string gridDimError(const std::string &kernel, unsigned dim, const std::string &value);

/// "kernel 'k': grid (3, 1, 1) is not a multiple of the cluster shape (2, 1, 1)".
std::string clusterGridError(const std::string &kernel, const std::array<unsigned, 3> &grid,
                             const std::array<unsigned, 3> &cluster);

/// A device as the runtime sees it.
struct DeviceInfo {
  int ordinal = 0;
  int major = 0, minor = 0;
  std::string arch;
  std::string name;
};

/// The device of the current context, or device `ordinal` if given (or if no
/// context is current: device 0). Loads the driver; throws kiln::Error if
/// there is no driver or device.
DeviceInfo deviceInfo(std::optional<int> ordinal = std::nullopt);
inline std::string deviceArch(std::optional<int> ordinal = std::nullopt) {
  return deviceInfo(ordinal).arch;
}
/// True if libcuda.so.1 can be loaded and initialized (does not throw).
bool driverAvailable();

/// A launchable kernel: metadata plus its images, with a per-context cache of
/// loaded modules. Thread-safe.
class Kernel {
public:
  /// Builds a kernel without a bundle (the JIT path): `meta` is the kernel
  /// JSON object, `images` maps an arch to cubin bytes (bytes that do not
  /// start with the ELF magic are taken as PTX text).
  static std::shared_ptr<Kernel> fromImages(const nlohmann::json &meta,
                                            const std::map<std::string, std::string> &images);

  /// For Bundle: an entry whose images live in memory owned by `owner`.
  Kernel(KernelEntry entry, std::vector<std::string_view> imageBytes,
         std::shared_ptr<const void> owner);
  ~Kernel();
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  const KernelEntry &entry() const { return entry_; }
  const std::string &name() const { return entry_.name; }
  std::string_view imageBytes(size_t index) const { return imageBytes_.at(index); }

  /// Loads the module for the current context (making the primary context of
  /// device 0 current if none is) without launching. Optional: launch() does
  /// it on first use.
  void load() const;

  /// Launches on `stream` with `grid` blocks. A grid with a zero dimension
  /// launches nothing. Checks the arguments first (kiln::Error naming the
  /// parameter), then the grid (kMaxGridDims; a multiple of the cluster shape). No synchronization
  /// and, after the first launch in a context, no allocation: safe inside CUDA graph capture.
  void launch(CUstream stream, std::array<unsigned, 3> grid,
              const std::vector<KernelArg> &args) const {
    launch(stream, grid, args.data(), args.size());
  }
  /// The same from an array: the launch path allocates nothing and takes no
  /// lock once the module is loaded in the current context.
  void launch(CUstream stream, std::array<unsigned, 3> grid, const KernelArg *args,
              size_t numArgs) const;

private:
  struct Loaded {
    CUcontext context = nullptr;
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    std::string arch;
  };
  const Loaded &loadedForCurrentContext() const;

  KernelEntry entry_;
  std::vector<std::string_view> imageBytes_;
  std::vector<std::string> ownedImages_;
  std::shared_ptr<const void> owner_;
  mutable std::mutex mutex_;
  /// One entry per context; never shrinks, so references stay valid.
  mutable std::vector<std::unique_ptr<Loaded>> loaded_;
  /// The entry of the context used last (lock-free fast path).
  mutable std::atomic<const Loaded *> last_{nullptr};
};

} // namespace kiln

#endif // KILN_RUNTIME_KERNEL_H
