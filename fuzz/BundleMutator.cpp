//===- BundleMutator.cpp - libFuzzer custom mutator for bundles ------------===//
//
// Byte-level mutation alone almost never gets past the bundle's checksums (the
// header, the manifest and every image carry an XXH64), so the JSON and schema
// parsers behind them would go unfuzzed. This mutator decodes a bundle into its
// manifest and images, mutates one of them, and writes a bundle whose layout
// and checksums are right again:
//
//  - structure (1/2): a change to one JSON value of the manifest (a value from
//    a dictionary of the schema's edge cases, a key removed or added, an array
//    element removed or repeated, a string's bytes mutated, a number moved) or
//    to one image's bytes; the images are laid out again as the writer lays
//    them out (offsets, sizes and checksums recomputed), and 1 time in 16 one
//    more change after the layout leaves a stale offset/size/checksum behind;
//  - manifest text (1/4): the manifest's bytes mutated as text (JSON syntax),
//    the image area kept where it was;
//  - raw (1/4): libFuzzer's byte mutation of the whole file, the checksums
//    repaired half of the time, so the header's own checks stay fuzzed.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"

#include "Checksum.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

using nlohmann::json;
using namespace kiln;
using namespace kiln::detail;

namespace {

using Rng = std::minstd_rand;

size_t pick(Rng &rng, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

/// Calls fn(image) for every image object of the manifest, in manifest order.
template <typename Fn>
void forEachImage(json &manifest, Fn fn) {
  if (!manifest.is_object())
    return;
  auto kernels = manifest.find("kernels");
  if (kernels == manifest.end() || !kernels->is_array())
    return;
  for (json &k : *kernels) {
    if (!k.is_object())
      continue;
    auto images = k.find("images");
    if (images == k.end() || !images->is_array())
      continue;
    for (json &im : *images)
      if (im.is_object())
        fn(im);
  }
}

std::string dumpManifest(const json &m) {
  return m.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// Fills in the header of `out` (its file size; the manifest `manifestText` at offset 64).
void writeHeader(std::string &out, const std::string &manifestText) {
  std::memcpy(&out[header::kMagic], kBundleMagic, sizeof(kBundleMagic));
  storeU32(&out[header::kVersion], kBundleFormatVersion);
  storeU32(&out[header::kHeaderSize], kBundleHeaderSize);
  storeU64(&out[header::kFileSize], out.size());
  storeU64(&out[header::kManifestOffset], kBundleHeaderSize);
  storeU64(&out[header::kManifestSize], manifestText.size());
  storeU64(&out[header::kManifestXXH64], xxh64(manifestText));
  storeU64(&out[header::kReserved], 0);
  storeU64(&out[header::kHeaderXXH64], xxh64(std::string_view(out.data(), header::kHeaderXXH64)));
}

/// A bundle taken apart: the manifest (text and JSON; the JSON is discarded when the text is
/// not JSON) and the bytes of every image the manifest names inside the file.
struct Decoded {
  std::string text;
  json manifest;
  std::vector<std::string> images;
  uint64_t dataStart = 0; ///< where the bytes after the manifest begin
};

bool decode(const std::string &b, Decoded &d) {
  if (b.size() < kBundleHeaderSize)
    return false;
  const uint64_t off = loadU64(b.data() + header::kManifestOffset);
  const uint64_t size = loadU64(b.data() + header::kManifestSize);
  if (off < kBundleHeaderSize || off > b.size() || size > b.size() - off)
    return false;
  d.text = b.substr(off, size);
  d.dataStart = std::min<uint64_t>(alignUp(off + size, kBundleImageAlignment), b.size());
  d.manifest = json::parse(d.text, nullptr, /*allow_exceptions=*/false);
  forEachImage(d.manifest, [&](json &im) {
    auto o = im.find("offset"), s = im.find("size");
    if (o == im.end() || s == im.end() || !o->is_number_unsigned() || !s->is_number_unsigned())
      return;
    const uint64_t io = o->get<uint64_t>(), is = s->get<uint64_t>();
    if (io <= b.size() && is <= b.size() - io)
      d.images.push_back(b.substr(io, is));
  });
  return true;
}

/// `b` with its manifest replaced by `text`: the bytes of `b` from `dataStart` on stay where
/// they were unless the manifest grows past them (then they move up, stale).
std::string withManifest(const std::string &b, uint64_t dataStart, const std::string &text) {
  const uint64_t start = std::max<uint64_t>(
      dataStart, alignUp(kBundleHeaderSize + text.size(), kBundleImageAlignment));
  std::string out(start, '\0');
  out.append(b, dataStart, std::string::npos);
  std::memcpy(&out[kBundleHeaderSize], text.data(), text.size());
  writeHeader(out, text);
  return out;
}

/// Lays `manifest`'s images out as BundleWriter does (each 256-byte aligned after the
/// manifest) with their offsets, sizes and checksums filled in; the i-th image object gets
/// images[i] (a 4-byte ELF magic where there are fewer images than objects).
std::string layOut(json manifest, const std::vector<std::string> &images) {
  uint64_t dataStart = alignUp(kBundleHeaderSize, kBundleImageAlignment);
  std::string text;
  std::vector<std::pair<uint64_t, const std::string *>> placed;
  static const std::string kElf("\x7f"
                                "ELF");
  uint64_t end = 0;
  for (;;) {
    placed.clear();
    uint64_t cursor = dataStart;
    forEachImage(manifest, [&](json &im) {
      const std::string &bytes = placed.size() < images.size() ? images[placed.size()] : kElf;
      cursor = alignUp(cursor, kBundleImageAlignment);
      im["offset"] = cursor;
      im["size"] = bytes.size();
      im["xxh64"] = hex64(xxh64(bytes));
      placed.push_back({cursor, &bytes});
      cursor += bytes.size();
    });
    text = dumpManifest(manifest);
    const uint64_t needed = alignUp(kBundleHeaderSize + text.size(), kBundleImageAlignment);
    if (needed <= dataStart) {
      end = placed.empty() ? kBundleHeaderSize + text.size() : cursor;
      break;
    }
    dataStart = needed;
  }
  std::string out(end, '\0');
  writeHeader(out, text);
  std::memcpy(&out[kBundleHeaderSize], text.data(), text.size());
  for (const auto &[offset, bytes] : placed)
    std::memcpy(&out[offset], bytes->data(), bytes->size());
  return out;
}

/// Values at the edges of the schema: out-of-range integers, wrong types, known names.
json interestingValue(Rng &rng) {
  // clang-format off
  static const json kValues[] = {
      0, 1, -1, 2, 3, 7, 16, 255, 256, 1024, 1025, 65536,
      std::numeric_limits<int32_t>::max(), std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min(), std::numeric_limits<uint64_t>::max(), 0.5, -0.0,
      1e300, "", "sm_90a", "sm_100a", "sm_103a", "sm_90", "sm_120f", "sm_", "sm_9x", "ptx",
      "cubin", "ptr", "scalar", "tensormap", "bf16", "f8e4m3", "i1", "u64", "pdl", "tma",
      "0123456789abcdef", "0123456789ABCDEF", true, false, nullptr, json::array(),
      json::object(), json::array({1, 1, 1}), json::array({0, 1, 1}), json::array({17, 1, 1}),
      json::array({256}), json::array({1, 2, 3, 4, 5, 6}), json::array({"pdl", "pdl"}),
      json::object({{"sm_90a", json::object()}})};
  // clang-format on
  return kValues[pick(rng, std::size(kValues))];
}

// clang-format off
const char *const kKeys[] = {
    "arch", "assembler", "assembler_version", "box", "cluster", "compiler_version",
    "constexprs", "cubin", "divisibility", "dtype", "features", "format", "images", "kernels",
    "kind", "name", "offset", "params", "pdl", "ptx_isa", "registers", "shared_bytes",
    "shared_static_bytes", "size", "source_hash", "specialization", "spill_load_bytes",
    "spill_store_bytes", "stack_bytes", "swizzle", "symbol", "targets", "threads_per_block",
    "version", "xxh64"};
// clang-format on

void collect(json &j, std::vector<json *> &out) {
  out.push_back(&j);
  if (j.is_structured())
    for (json &c : j)
      collect(c, out);
}

/// `s` mutated by libFuzzer, at most `maxSize` bytes long (at least its own size).
std::string mutateBytes(std::string s, size_t maxSize) {
  const size_t size = s.size();
  maxSize = std::max(maxSize, size);
  if (maxSize == 0)
    return s;
  s.resize(maxSize);
  s.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t *>(s.data()), size, maxSize));
  return s;
}

/// One change to one JSON value of `manifest`.
void mutateJson(json &manifest, Rng &rng) {
  std::vector<json *> nodes;
  collect(manifest, nodes);
  json &j = *nodes[pick(rng, nodes.size())];
  switch (pick(rng, 4)) {
  case 0:
    j = interestingValue(rng);
    return;
  case 1:
    if (j.is_object()) {
      if (!j.empty() && pick(rng, 2) == 0) {
        auto it = j.begin();
        std::advance(it, pick(rng, j.size()));
        j.erase(it);
      } else {
        j[kKeys[pick(rng, std::size(kKeys))]] = interestingValue(rng);
      }
      return;
    }
    if (j.is_array()) {
      if (!j.empty() && pick(rng, 2) == 0)
        j.erase(pick(rng, j.size()));
      else if (!j.empty())
        j.push_back(json(j[pick(rng, j.size())]));
      else
        j.push_back(interestingValue(rng));
      return;
    }
    [[fallthrough]];
  case 2:
    if (j.is_string()) {
      j = mutateBytes(j.get<std::string>(), j.get<std::string>().size() + 16);
      return;
    }
    [[fallthrough]];
  default:
    if (j.is_number_integer()) {
      const int64_t deltas[] = {1, -1, 16, -16, 256, -256};
      j = static_cast<int64_t>(static_cast<uint64_t>(j.get<int64_t>()) +
                               static_cast<uint64_t>(deltas[pick(rng, std::size(deltas))]));
    } else {
      j = interestingValue(rng);
    }
  }
}

/// The structural mutation: one JSON value or one image changed, then laid out again.
std::string mutateStructure(Decoded d, Rng &rng) {
  if (d.manifest.is_discarded())
    return "";
  if (!d.images.empty() && pick(rng, 4) == 0) {
    std::string &im = d.images[pick(rng, d.images.size())];
    im = mutateBytes(im, im.size() + 64);
  } else {
    mutateJson(d.manifest, rng);
  }
  std::string out = layOut(d.manifest, d.images);
  if (pick(rng, 16) == 0) {
    // A change after the layout: a stale offset, size or checksum (the manifest checksum
    // is repaired so that the reader gets as far as the images).
    Decoded again;
    if (decode(out, again) && !again.manifest.is_discarded()) {
      mutateJson(again.manifest, rng);
      out = withManifest(out, again.dataStart, dumpManifest(again.manifest));
    }
  }
  return out;
}

/// The manifest mutated as text (at most as long as the room before the bytes after it).
std::string mutateText(const Decoded &d, const std::string &b) {
  return withManifest(
      b, d.dataStart,
      mutateBytes(d.text, d.dataStart - std::min<uint64_t>(d.dataStart, kBundleHeaderSize)));
}

/// Sets file_size and the manifest and header checksums of a mutated file (where its
/// manifest range lies inside it).
void repairChecksums(uint8_t *data, size_t size) {
  if (size < kBundleHeaderSize)
    return;
  char *d = reinterpret_cast<char *>(data);
  storeU64(d + header::kFileSize, size);
  const uint64_t off = loadU64(d + header::kManifestOffset);
  const uint64_t len = loadU64(d + header::kManifestSize);
  if (off <= size && len <= size - off)
    storeU64(d + header::kManifestXXH64, xxh64(std::string_view(d + off, len)));
  storeU64(d + header::kHeaderXXH64, xxh64(std::string_view(d, header::kHeaderXXH64)));
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  Rng rng(seed);
  const std::string in(reinterpret_cast<const char *>(data), size);
  Decoded d;
  const size_t mode = pick(rng, 4);
  if (mode < 3 && decode(in, d)) {
    std::string out = mode < 2 ? mutateStructure(std::move(d), rng) : mutateText(d, in);
    if (!out.empty() && out.size() <= maxSize) {
      std::memcpy(data, out.data(), out.size());
      return out.size();
    }
  }
  size = LLVMFuzzerMutate(data, size, maxSize);
  if (pick(rng, 2) == 0)
    repairChecksums(data, size);
  return size;
}
