//===- Bundle.h - Multi-arch kernel bundles (.kbundle) ----------*- C++ -*-===//
//
// A bundle is one binary file: a fixed 64-byte header, a JSON manifest and the
// images (cubins, optionally PTX), each 256-byte aligned and checksummed. The
// format is specified in docs/bundle-format.md. The reader verifies every byte
// before it trusts any offset; opening and inspecting a bundle never touches
// the CUDA driver.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_BUNDLE_H
#define KILN_RUNTIME_BUNDLE_H

#include "kiln/Runtime/Error.h"
#include "kiln/Runtime/Metadata.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Kernel;

/// Format constants (version 1).
constexpr char kBundleMagic[8] = {'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L'};
constexpr uint32_t kBundleFormatVersion = 1;
constexpr uint32_t kBundleHeaderSize = 64;
constexpr uint64_t kBundleImageAlignment = 256;

/// One compiled image handed to the writer.
struct Image {
  /// "sm_90a", "sm_100a", "sm_103a", ...
  std::string arch;
  /// "cubin" or "ptx".
  std::string kind = "cubin";
  std::string bytes;
};

/// Builds a bundle in memory. Output is deterministic: the same kernels added
/// in the same order give byte-identical bundles.
class BundleWriter {
public:
  explicit BundleWriter(std::string compilerVersion = "unknown")
      : compilerVersion_(std::move(compilerVersion)) {}

  /// Adds one kernel entry. `meta` is the kernel JSON object produced by the
  /// compiler (name, symbol, params, constexprs, threads_per_block, ...); any
  /// "images" key in it is replaced. Throws kiln::Error on invalid metadata,
  /// an empty or duplicate image, or a duplicate (name, constexprs) entry.
  void addKernel(const nlohmann::json &meta, std::vector<Image> images);

  void setCompilerVersion(std::string version) { compilerVersion_ = std::move(version); }
  size_t numKernels() const { return kernels_.size(); }

  /// The complete bundle file contents.
  std::string serialize() const;
  /// Writes the bundle to `path` atomically (temporary file + rename).
  void write(const std::string &path) const;

private:
  struct PendingKernel {
    nlohmann::json meta;
    std::vector<Image> images;
  };
  std::string compilerVersion_;
  std::vector<PendingKernel> kernels_;
};

/// What a caller knows about one argument when the runtime picks a
/// specialization (Bundle::select): a pointer (its address and, if known, its
/// element dtype), an integer (its value), a float, or a tensor map (its
/// element dtype, box and swizzle: what a `tensordesc` kernel is specialized
/// on; the tensor's address and shape travel in the map). `dtype`, when set
/// for a scalar, must equal the parameter's dtype exactly (C++ callers know
/// it; Python ints and floats leave it unset and fit any integer/float param).
struct ArgSpec {
  enum class Kind : uint8_t { Pointer, Int, Float, TensorMap };
  Kind kind = Kind::Int;
  /// TensorMap: the element dtype (tensorMap() sets it; unset fits no param).
  std::optional<DType> dtype;
  /// Pointer: the address. Int: the value (two's complement). TensorMap: the
  /// box and swizzle packed by tensorMapGeometry (Kernel.h), as
  /// KernelArg::geometry() at launch.
  uint64_t value = 0;

  static ArgSpec pointer(uint64_t address, std::optional<DType> elem = std::nullopt) {
    return {Kind::Pointer, elem, address};
  }
  static ArgSpec integer(int64_t v, std::optional<DType> dtype = std::nullopt) {
    return {Kind::Int, dtype, static_cast<uint64_t>(v)};
  }
  static ArgSpec floating(std::optional<DType> dtype = std::nullopt) {
    return {Kind::Float, dtype, 0};
  }
  /// A tensor map of `elem` elements whose box (outermost dimension first) and
  /// swizzle (bytes, 0 for none) are the ones a `tensormap` param records (a
  /// wide box whole, as KernelArg::tensorMap takes it).
  static ArgSpec tensorMap(DType elem, const std::vector<uint32_t> &box, unsigned swizzle);
  /// "ptr<bf16> 0x7f00 (16-byte aligned)", "int 4096 (div 16)", "float",
  /// "tensordesc<bf16, 32x64, swizzle 128>".
  std::string describe() const;
};

/// Why `entry` does not fit `args` ("" if it fits). Pure.
std::string specializationMismatch(const KernelEntry &entry, const std::vector<ArgSpec> &args);
/// How specialized `entry` is (sum of log2 of its divisibility assumptions):
/// the runtime prefers the most specialized entry that fits.
unsigned specializationRank(const KernelEntry &entry);

/// A verified, read-only bundle. Image bytes stay in memory for the bundle's
/// lifetime; kernels obtained from it keep it alive.
class Bundle : public std::enable_shared_from_this<Bundle> {
public:
  /// Reads and verifies the file at `path`. Throws kiln::Error.
  static std::shared_ptr<Bundle> open(const std::string &path);
  /// Verifies `bytes` as a bundle; `name` is used in error messages.
  static std::shared_ptr<Bundle> fromBytes(std::string bytes, std::string name = "<memory>");

  /// The name used in messages (the path for open()).
  const std::string &name() const { return name_; }
  uint32_t formatVersion() const { return kBundleFormatVersion; }
  const std::string &compilerVersion() const { return compilerVersion_; }
  const nlohmann::json &manifest() const { return manifest_; }
  const std::vector<KernelEntry> &kernels() const { return kernels_; }
  uint64_t fileSize() const { return data_.size(); }

  /// The first entry named `name` whose constexprs contain `constexprs` (a
  /// JSON object; null matches any). nullptr if none.
  const KernelEntry *find(const std::string &name,
                          const nlohmann::json &constexprs = nullptr) const;
  /// Every entry matching like find().
  std::vector<const KernelEntry *> findAll(const std::string &name,
                                           const nlohmann::json &constexprs = nullptr) const;

  /// The bytes of one image of an entry of this bundle.
  std::string_view imageBytes(const ImageInfo &image) const;

  /// The launchable kernel for exactly one matching entry. Throws kiln::Error
  /// if none matches (listing the specializations the bundle has) or if
  /// several match (ambiguous: pass more constexprs).
  std::shared_ptr<Kernel> kernel(const std::string &name,
                                 const nlohmann::json &constexprs = nullptr) const;
  /// The launchable kernel for an entry of this bundle (one per entry, cached
  /// while any holder keeps it alive).
  std::shared_ptr<Kernel> kernel(const KernelEntry &entry) const;

  /// Picks the specialization of `name` for these arguments: the entries whose
  /// constexprs contain `constexprs` and whose params fit `args` (pointer
  /// dtypes, alignment and integer divisibility; a tensor map's dtype, box and
  /// swizzle), the most specialized first.
  /// Throws kiln::Error naming the kernel and the wanted specialization and
  /// listing those the bundle holds (with why each does not fit) if none fits,
  /// or if several fit equally well (ambiguous: pass constexprs).
  const KernelEntry &select(const std::string &name, const std::vector<ArgSpec> &args,
                            const nlohmann::json &constexprs = nullptr) const;

  /// Human-readable summary: kernels, params, constexprs, archs, image sizes.
  std::string describe() const;

private:
  Bundle() = default;
  void verify();

  std::string name_;
  std::string data_;
  std::string compilerVersion_;
  nlohmann::json manifest_;
  std::vector<KernelEntry> kernels_;
  mutable std::mutex cacheMutex_;
  mutable std::vector<std::weak_ptr<Kernel>> cache_;
};

} // namespace kiln

#endif // KILN_RUNTIME_BUNDLE_H
