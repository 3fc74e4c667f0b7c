//===- BundleWriter.cpp - Serializing kernel bundles ----------------------===//

#include "kiln/Runtime/Bundle.h"

#include "Checksum.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <unistd.h>

using nlohmann::json;

namespace kiln {

using namespace detail;

void BundleWriter::addKernel(const json &meta, std::vector<Image> images) {
  const std::string where = "bundle writer: kernel " + std::to_string(kernels_.size());
  json normalized;
  try {
    normalized = normalizeKernelMeta(meta, where);
  } catch (const json::exception &e) {
    throw Error(where + ": invalid metadata: " + e.what());
  }
  const std::string name = normalized["name"].get<std::string>();
  if (images.empty())
    throw Error(where + " ('" + name + "'): no images");
  std::set<std::pair<std::string, std::string>> seen;
  for (const Image &img : images) {
    if (!isValidArch(img.arch))
      throw Error(where + " ('" + name + "'): invalid arch \"" + img.arch +
                  "\" (expected sm_<digits>[a|f])");
    if (img.kind != "cubin" && img.kind != "ptx")
      throw Error(where + " ('" + name + "'): image kind must be \"cubin\" or \"ptx\", got \"" +
                  img.kind + "\"");
    if (img.bytes.empty())
      throw Error(where + " ('" + name + "'): empty " + img.kind + " image for " + img.arch);
    if (!seen.insert({img.arch, img.kind}).second)
      throw Error(where + " ('" + name + "'): duplicate " + img.kind + " image for " + img.arch);
  }
  for (auto it = normalized["targets"].begin(); it != normalized["targets"].end(); ++it)
    if (std::none_of(images.begin(), images.end(),
                     [&](const Image &img) { return img.arch == it.key(); }))
      throw Error(where + " ('" + name + "'): field 'targets': facts for " + it.key() +
                  ", which has no image");
  for (const PendingKernel &k : kernels_)
    if (k.meta["name"] == normalized["name"] && k.meta["constexprs"] == normalized["constexprs"])
      throw Error(where + ": duplicate kernel '" + name + "' with constexprs " +
                  normalized["constexprs"].dump());
  kernels_.push_back({std::move(normalized), std::move(images)});
}

std::string BundleWriter::serialize() const {
  // The manifest holds absolute image offsets, which depend on the manifest's
  // own size: grow the start of the image area until it no longer moves.
  uint64_t dataStart = alignUp(kBundleHeaderSize, kBundleImageAlignment);
  std::string manifestText;
  std::vector<std::vector<uint64_t>> offsets;
  uint64_t fileSize = 0;
  for (;;) {
    json kernels = json::array();
    offsets.clear();
    uint64_t cursor = dataStart;
    for (const PendingKernel &k : kernels_) {
      json entry = k.meta;
      json images = json::array();
      offsets.emplace_back();
      for (const Image &img : k.images) {
        cursor = alignUp(cursor, kBundleImageAlignment);
        offsets.back().push_back(cursor);
        images.push_back({{"arch", img.arch},
                          {"kind", img.kind},
                          {"offset", cursor},
                          {"size", img.bytes.size()},
                          {"xxh64", hex64(xxh64(img.bytes))}});
        cursor += img.bytes.size();
      }
      entry["images"] = std::move(images);
      kernels.push_back(std::move(entry));
    }
    json manifest = {{"format", "kiln-bundle"},
                     {"version", kBundleFormatVersion},
                     {"compiler_version", compilerVersion_},
                     {"kernels", std::move(kernels)}};
    try {
      manifestText = manifest.dump();
    } catch (const json::exception &e) {
      throw Error(std::string("bundle writer: cannot encode the manifest: ") + e.what());
    }
    uint64_t needed = alignUp(kBundleHeaderSize + manifestText.size(), kBundleImageAlignment);
    if (needed <= dataStart) {
      fileSize = kernels_.empty() ? kBundleHeaderSize + manifestText.size() : cursor;
      break;
    }
    dataStart = needed;
  }

  std::string out(fileSize, '\0');
  std::memcpy(&out[header::kMagic], kBundleMagic, sizeof(kBundleMagic));
  storeU32(&out[header::kVersion], kBundleFormatVersion);
  storeU32(&out[header::kHeaderSize], kBundleHeaderSize);
  storeU64(&out[header::kFileSize], fileSize);
  storeU64(&out[header::kManifestOffset], kBundleHeaderSize);
  storeU64(&out[header::kManifestSize], manifestText.size());
  storeU64(&out[header::kManifestXXH64], xxh64(manifestText));
  storeU64(&out[header::kReserved], 0);
  storeU64(&out[header::kHeaderXXH64], xxh64(std::string_view(out.data(), header::kHeaderXXH64)));
  std::memcpy(&out[kBundleHeaderSize], manifestText.data(), manifestText.size());
  for (size_t k = 0; k < kernels_.size(); ++k)
    for (size_t i = 0; i < kernels_[k].images.size(); ++i) {
      const std::string &bytes = kernels_[k].images[i].bytes;
      std::memcpy(&out[offsets[k][i]], bytes.data(), bytes.size());
    }
  return out;
}

void BundleWriter::write(const std::string &path) const {
  const std::string bytes = serialize();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw Error("cannot write bundle '" + path + "': cannot create '" + tmp +
                  "': " + std::strerror(errno));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error("cannot write bundle '" + path + "': write to '" + tmp + "' failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw Error("cannot write bundle '" + path + "': rename failed: " + std::strerror(err));
  }
}

} // namespace kiln
