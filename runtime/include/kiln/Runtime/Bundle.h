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
  /// The launchable kernel for an entry of this bundle.
  std::shared_ptr<Kernel> kernel(const KernelEntry &entry) const;

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
};

} // namespace kiln

#endif // KILN_RUNTIME_BUNDLE_H
