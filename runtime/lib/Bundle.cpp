//===- Bundle.cpp - Reading and verifying kernel bundles ------------------===//
//
// The reader trusts nothing: every offset is checked against the file size
// before use, and the header, manifest and every image are checksummed. The
// bytes no region covers (alignment padding) must be zero, so any change to
// any byte of a bundle is detected.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/Kernel.h"

#include "Checksum.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using nlohmann::json;

namespace kiln {

using namespace detail;

namespace {
std::string hex0x(uint64_t v) { return "0x" + hex64(v); }

/// Printable rendering of raw bytes ("KILNBNDL", "\x00\x01..."): every byte that is not
/// printable ASCII, or is one of `escape`, written \xNN. Error messages stay valid UTF-8
/// whatever the file holds (the Python binding decodes them).
std::string printable(std::string_view bytes, std::string_view escape = "\"\\") {
  std::string s;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && escape.find(static_cast<char>(c)) == std::string_view::npos) {
      s += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      s += buf;
    }
  }
  return s;
}

std::string humanBytes(uint64_t n) {
  std::ostringstream os;
  if (n >= (1u << 20))
    os << n << " B (" << (n * 10 / (1u << 20)) / 10.0 << " MiB)";
  else if (n >= 1024)
    os << n << " B (" << (n * 10 / 1024) / 10.0 << " KiB)";
  else
    os << n << " B";
  return os.str();
}
} // namespace

std::shared_ptr<Bundle> Bundle::open(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error("cannot open bundle '" + path + "': " + std::strerror(errno));
  std::string bytes;
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  if (size < 0)
    throw Error("cannot read bundle '" + path + "'");
  bytes.resize(static_cast<size_t>(size));
  f.seekg(0, std::ios::beg);
  f.read(bytes.data(), size);
  if (f.gcount() != size)
    throw Error("cannot read bundle '" + path + "': short read");
  return fromBytes(std::move(bytes), path);
}

std::shared_ptr<Bundle> Bundle::fromBytes(std::string bytes, std::string name) {
  std::shared_ptr<Bundle> b(new Bundle());
  b->name_ = std::move(name);
  b->data_ = std::move(bytes);
  b->verify();
  return b;
}

void Bundle::verify() {
  const std::string prefix = "bundle '" + name_ + "': ";
  auto fail = [&](const std::string &what) { throw Error(prefix + what); };
  const uint64_t actual = data_.size();
  const char *d = data_.data();

  // Header: magic and version first, so that a newer format is named as such.
  if (actual >= sizeof(kBundleMagic) && std::memcmp(d, kBundleMagic, sizeof(kBundleMagic)) != 0)
    fail("not a kiln bundle: bad magic \"" + printable(std::string_view(d, 8)) +
         "\" (expected \"KILNBNDL\")");
  if (actual < kBundleHeaderSize)
    fail("truncated: file is " + std::to_string(actual) + " bytes, smaller than the " +
         std::to_string(kBundleHeaderSize) + "-byte header");
  const uint32_t version = loadU32(d + header::kVersion);
  if (version != kBundleFormatVersion)
    fail("unsupported format version " + std::to_string(version) + " (this runtime reads version " +
         std::to_string(kBundleFormatVersion) + ")");
  const uint32_t headerSize = loadU32(d + header::kHeaderSize);
  if (headerSize != kBundleHeaderSize)
    fail("bad header size " + std::to_string(headerSize) + " (version 1 headers are " +
         std::to_string(kBundleHeaderSize) + " bytes)");
  const uint64_t headerSum = loadU64(d + header::kHeaderXXH64);
  const uint64_t headerGot = xxh64(std::string_view(d, header::kHeaderXXH64));
  if (headerSum != headerGot)
    fail("header checksum mismatch (expected " + hex0x(headerSum) + ", got " + hex0x(headerGot) +
         ")");
  const uint64_t fileSize = loadU64(d + header::kFileSize);
  if (actual < fileSize)
    fail("truncated: file is " + std::to_string(actual) + " bytes, header says " +
         std::to_string(fileSize));
  if (actual > fileSize)
    fail("trailing data: file is " + std::to_string(actual) + " bytes, header says " +
         std::to_string(fileSize));
  if (loadU64(d + header::kReserved) != 0)
    fail("reserved header field is not zero");

  // Manifest.
  const uint64_t manOff = loadU64(d + header::kManifestOffset);
  const uint64_t manSize = loadU64(d + header::kManifestSize);
  if (manOff < kBundleHeaderSize || manOff > fileSize || manSize > fileSize - manOff ||
      manSize == 0)
    fail("manifest range [" + std::to_string(manOff) + ", +" + std::to_string(manSize) +
         ") is outside the file (" + std::to_string(fileSize) + " bytes) or overlaps the header");
  const std::string_view manText(d + manOff, manSize);
  const uint64_t manSum = loadU64(d + header::kManifestXXH64);
  const uint64_t manGot = xxh64(manText);
  if (manSum != manGot)
    fail("manifest checksum mismatch (expected " + hex0x(manSum) + ", got " + hex0x(manGot) + ")");
  try {
    manifest_ = json::parse(manText.begin(), manText.end());
  } catch (const json::exception &e) {
    // The message quotes the bytes last read, which may be anything.
    fail("manifest is not valid JSON: " + printable(e.what(), ""));
  }
  if (!manifest_.is_object())
    fail("manifest: expected a JSON object");
  auto field = [&](const char *key) -> const json & {
    auto it = manifest_.find(key);
    if (it == manifest_.end())
      fail(std::string("manifest: field '") + key + "' missing");
    return *it;
  };
  const json &format = field("format");
  if (!format.is_string() || format.get<std::string>() != "kiln-bundle")
    fail("manifest: field 'format' must be \"kiln-bundle\", got " + format.dump());
  const json &mversion = field("version");
  if (!mversion.is_number_integer() || mversion.get<int64_t>() != kBundleFormatVersion)
    fail("manifest: field 'version' must be " + std::to_string(kBundleFormatVersion) + ", got " +
         mversion.dump());
  const json &cv = field("compiler_version");
  if (!cv.is_string())
    fail("manifest: field 'compiler_version' must be a string, got " + cv.dump());
  compilerVersion_ = cv.get<std::string>();
  const json &kernels = field("kernels");
  if (!kernels.is_array())
    fail("manifest: field 'kernels' must be an array");

  // Kernels and their images.
  struct Region {
    uint64_t begin, end;
    std::string what;
  };
  std::vector<Region> regions = {{0, kBundleHeaderSize, "the header"},
                                 {manOff, manOff + manSize, "the manifest"}};
  size_t imageIndex = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    KernelEntry e = parseKernelEntry(kernels[k], prefix + "kernel " + std::to_string(k),
                                     /*withImages=*/true);
    for (const ImageInfo &im : e.images) {
      const std::string what = "image " + std::to_string(imageIndex) + " (" + e.name + ", " +
                               im.arch + (im.kind == "ptx" ? " ptx" : "") + ")";
      if (im.offset % kBundleImageAlignment != 0)
        fail(what + " offset " + std::to_string(im.offset) + " is not " +
             std::to_string(kBundleImageAlignment) + "-byte aligned");
      if (im.size == 0 || im.offset > fileSize || im.size > fileSize - im.offset)
        fail(what + " range [" + std::to_string(im.offset) + ", +" + std::to_string(im.size) +
             ") is outside the file (" + std::to_string(fileSize) + " bytes)");
      regions.push_back({im.offset, im.offset + im.size, what});
      ++imageIndex;
    }
    kernels_.push_back(std::move(e));
  }
  std::sort(regions.begin(), regions.end(),
            [](const Region &a, const Region &b) { return a.begin < b.begin; });
  uint64_t cursor = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    if (i > 0 && regions[i].begin < regions[i - 1].end)
      fail(regions[i].what + " overlaps " + regions[i - 1].what);
    for (uint64_t p = cursor; p < regions[i].begin; ++p)
      if (d[p] != 0)
        fail("nonzero padding byte at offset " + std::to_string(p));
    cursor = std::max(cursor, regions[i].end);
  }
  for (uint64_t p = cursor; p < fileSize; ++p)
    if (d[p] != 0)
      fail("nonzero padding byte at offset " + std::to_string(p));

  imageIndex = 0;
  for (const KernelEntry &e : kernels_)
    for (const ImageInfo &im : e.images) {
      uint64_t got = xxh64(std::string_view(d + im.offset, im.size));
      if (got != im.xxh64)
        fail("image " + std::to_string(imageIndex) + " (" + e.name + ", " + im.arch +
             (im.kind == "ptx" ? " ptx" : "") + ") checksum mismatch (expected " + hex0x(im.xxh64) +
             ", got " + hex0x(got) + ")");
      ++imageIndex;
    }

  for (size_t a = 0; a < kernels_.size(); ++a)
    for (size_t b = a + 1; b < kernels_.size(); ++b)
      if (kernels_[a].name == kernels_[b].name && kernels_[a].constexprs == kernels_[b].constexprs)
        fail("kernels " + std::to_string(a) + " and " + std::to_string(b) + " ('" +
             kernels_[a].name + "') have the same constexprs");
}

std::vector<const KernelEntry *> Bundle::findAll(const std::string &name,
                                                 const json &constexprs) const {
  std::vector<const KernelEntry *> out;
  for (const KernelEntry &e : kernels_)
    if (e.name == name && e.matchesConstexprs(constexprs))
      out.push_back(&e);
  return out;
}

const KernelEntry *Bundle::find(const std::string &name, const json &constexprs) const {
  for (const KernelEntry &e : kernels_)
    if (e.name == name && e.matchesConstexprs(constexprs))
      return &e;
  return nullptr;
}

std::string_view Bundle::imageBytes(const ImageInfo &image) const {
  // Verified in verify(); re-checked because ImageInfo is a plain struct.
  if (image.offset > data_.size() || image.size > data_.size() - image.offset)
    throw Error("bundle '" + name_ + "': image range outside the file");
  return std::string_view(data_.data() + image.offset, image.size);
}

std::shared_ptr<Kernel> Bundle::kernel(const KernelEntry &entry) const {
  size_t index = kernels_.size();
  for (size_t i = 0; i < kernels_.size(); ++i)
    if (&kernels_[i] == &entry)
      index = i;
  std::lock_guard<std::mutex> lock(cacheMutex_);
  if (index < kernels_.size()) {
    if (cache_.size() < kernels_.size())
      cache_.resize(kernels_.size());
    if (auto k = cache_[index].lock())
      return k;
  }
  std::vector<std::string_view> bytes;
  for (const ImageInfo &im : entry.images)
    bytes.push_back(imageBytes(im));
  auto k = std::make_shared<Kernel>(entry, std::move(bytes), shared_from_this());
  if (index < kernels_.size())
    cache_[index] = k;
  return k;
}

//===----------------------------------------------------------------------===//
// Specialization selection
//===----------------------------------------------------------------------===//

ArgSpec ArgSpec::tensorMap(DType elem, const std::vector<uint32_t> &box, unsigned swizzle) {
  return {Kind::TensorMap, elem, tensorMapGeometry(box, swizzle)};
}

std::string ArgSpec::describe() const {
  char buf[64];
  switch (kind) {
  case Kind::Pointer: {
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(value));
    unsigned align = 1;
    while (align < 256 && value % (align * 2) == 0)
      align *= 2;
    return "ptr<" + (dtype ? std::string(dtypeName(*dtype)) : std::string("?")) + "> " + buf +
           " (" + std::to_string(align) + (align == 256 ? "+" : "") + "-byte aligned)";
  }
  case Kind::Int:
    return (dtype ? std::string(dtypeName(*dtype)) : std::string("int")) + " " +
           std::to_string(static_cast<int64_t>(value));
  case Kind::Float:
    return dtype ? std::string(dtypeName(*dtype)) : std::string("float");
  case Kind::TensorMap: {
    // The factory always sets the dtype; a hand-built spec may not.
    std::string type = tensorMapParamType(dtype.value_or(DType::BF16), value).describeType();
    return dtype ? type : "tensordesc<?" + type.substr(std::strlen("tensordesc<bf16"));
  }
  }
  return "?";
}

std::string specializationMismatch(const KernelEntry &e, const std::vector<ArgSpec> &args) {
  if (args.size() != e.params.size())
    return "takes " + std::to_string(e.params.size()) + " arguments, got " +
           std::to_string(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo &p = e.params[i];
    const ArgSpec &a = args[i];
    const std::string arg = "argument '" + p.name + "' (param " + std::to_string(i) + ")";
    const std::string want = p.describeType();
    if (p.kind == ParamKind::TensorMap) {
      // What the kernel is specialized on, compared as at launch (Kernel.cpp's argFits).
      if (a.kind != ArgSpec::Kind::TensorMap)
        return arg + " wants a tensor map (" + want + "), got " + a.describe();
      if (a.dtype != p.dtype || a.value != tensorMapGeometry(p.box, p.swizzle))
        return arg + " wants " + want + ", got " + a.describe();
      continue;
    }
    if (a.kind == ArgSpec::Kind::TensorMap)
      return arg + " wants " + want + ", got a tensor map (" + a.describe() + ")";
    if (p.kind == ParamKind::Pointer) {
      if (a.kind != ArgSpec::Kind::Pointer)
        return arg + " wants " + want + ", got " + a.describe();
      if (a.dtype && *a.dtype != p.dtype)
        return arg + " wants " + want + ", got ptr<" + std::string(dtypeName(*a.dtype)) + ">";
      if (p.divisibility > 1 && a.value % p.divisibility != 0)
        return arg + " wants a " + std::to_string(p.divisibility) + "-byte aligned pointer, got " +
               a.describe();
      continue;
    }
    if (a.kind == ArgSpec::Kind::Pointer)
      return arg + " wants " + want + ", got a pointer";
    if (a.dtype && *a.dtype != p.dtype)
      return arg + " wants " + want + ", got " + a.describe();
    if (a.kind == ArgSpec::Kind::Float && !isFloatDType(p.dtype))
      return arg + " wants " + want + ", got a float";
    if (a.kind == ArgSpec::Kind::Int && p.divisibility > 1 && !isFloatDType(p.dtype) &&
        static_cast<int64_t>(a.value) % static_cast<int64_t>(p.divisibility) != 0)
      return arg + " wants a multiple of " + std::to_string(p.divisibility) + ", got " +
             std::to_string(static_cast<int64_t>(a.value));
  }
  return "";
}

unsigned specializationRank(const KernelEntry &e) {
  unsigned rank = 0;
  for (const ParamInfo &p : e.params)
    for (uint64_t d = p.divisibility; d > 1; d >>= 1)
      ++rank;
  return rank;
}

const KernelEntry &Bundle::select(const std::string &name, const std::vector<ArgSpec> &args,
                                  const json &constexprs) const {
  std::vector<const KernelEntry *> sameName = findAll(name);
  if (sameName.empty())
    (void)kernel(name, constexprs); // throws: no kernel of that name, listing the names
  std::vector<const KernelEntry *> fit;
  std::string listing;
  for (const KernelEntry *e : sameName) {
    std::string why =
        e->matchesConstexprs(constexprs) ? specializationMismatch(*e, args) : "constexprs differ";
    std::string params;
    for (const ParamInfo &p : e->params)
      params += (params.empty() ? "" : ", ") + p.describe();
    listing += "\n  " + e->name + " {" + e->describeConstexprs() + "} (" + params + ")" +
               (why.empty() ? "" : ": " + why);
    if (why.empty())
      fit.push_back(e);
  }
  std::string wanted;
  for (const ArgSpec &a : args)
    wanted += (wanted.empty() ? "" : ", ") + a.describe();
  if (!constexprs.is_null() && !constexprs.empty())
    for (auto it = constexprs.begin(); it != constexprs.end(); ++it)
      wanted += (wanted.empty() ? "" : ", ") + it.key() + "=" + it->dump();
  if (fit.empty()) {
    const char *noJit = std::getenv("KILN_NO_JIT");
    throw Error("bundle '" + name_ + "' has no specialization of '" + name + "' for (" + wanted +
                ")" +
                (noJit && std::string(noJit) == "1" ? " [KILN_NO_JIT=1: not compiling it]" : "") +
                "; it holds:" + listing);
  }
  unsigned best = 0;
  for (const KernelEntry *e : fit)
    best = std::max(best, specializationRank(*e));
  std::vector<const KernelEntry *> top;
  for (const KernelEntry *e : fit)
    if (specializationRank(*e) == best)
      top.push_back(e);
  if (top.size() > 1) {
    std::string which;
    for (const KernelEntry *e : top)
      which += "\n  " + e->name + " {" + e->describeConstexprs() + "}";
    throw Error("bundle '" + name_ + "': kernel '" + name + "' for (" + wanted +
                ") is ambiguous (" + std::to_string(top.size()) +
                " specializations fit; pass constexprs):" + which);
  }
  return *top.front();
}

std::shared_ptr<Kernel> Bundle::kernel(const std::string &name, const json &constexprs) const {
  auto matches = findAll(name, constexprs);
  auto listing = [&](const std::vector<const KernelEntry *> &entries) {
    std::string s;
    for (const KernelEntry *e : entries)
      s += "\n  " + e->name + " {" + e->describeConstexprs() + "}";
    return s;
  };
  const std::string query =
      constexprs.is_null() || constexprs.empty() ? "" : " with constexprs " + constexprs.dump();
  if (matches.empty()) {
    std::vector<const KernelEntry *> sameName = findAll(name);
    if (sameName.empty()) {
      std::string names;
      for (const KernelEntry &e : kernels_)
        if (names.find("'" + e.name + "'") == std::string::npos)
          names += (names.empty() ? "" : ", ") + ("'" + e.name + "'");
      throw Error("bundle '" + name_ + "' has no kernel '" + name +
                  "'; it holds: " + (names.empty() ? "(none)" : names));
    }
    throw Error("bundle '" + name_ + "' has no specialization of '" + name + "'" + query +
                "; it holds:" + listing(sameName));
  }
  if (matches.size() > 1)
    throw Error("bundle '" + name_ + "': kernel '" + name + "'" + query + " is ambiguous (" +
                std::to_string(matches.size()) +
                " specializations match; pass constexprs):" + listing(matches));
  return kernel(*matches.front());
}

std::string Bundle::describe() const {
  std::ostringstream os;
  size_t numImages = 0;
  for (const KernelEntry &e : kernels_)
    numImages += e.images.size();
  os << "bundle '" << name_ << "': format version " << kBundleFormatVersion << ", compiler "
     << compilerVersion_ << ", " << kernels_.size() << " kernel"
     << (kernels_.size() == 1 ? "" : "s") << ", " << numImages << " image"
     << (numImages == 1 ? "" : "s") << ", " << humanBytes(fileSize()) << "\n";
  for (const KernelEntry &e : kernels_) {
    os << "\nkernel " << e.name;
    if (!e.specialization.empty())
      os << " [" << e.specialization << "]";
    os << "\n  symbol:     " << e.symbol << "\n  params:     ";
    for (size_t i = 0; i < e.params.size(); ++i)
      os << (i ? ", " : "") << e.params[i].describe();
    if (e.params.empty())
      os << "(none)";
    os << "\n  constexprs: " << (e.constexprs.empty() ? "(none)" : e.describeConstexprs());
    os << "\n  launch:     " << e.threadsPerBlock << " threads/block, " << e.sharedBytes
       << " B dynamic shared, pdl=" << (e.pdl ? "true" : "false") << ", cluster " << e.cluster[0]
       << "x" << e.cluster[1] << "x" << e.cluster[2];
    if (!e.features.empty()) {
      os << "\n  features:   ";
      for (size_t i = 0; i < e.features.size(); ++i)
        os << (i ? ", " : "") << e.features[i];
    }
    if (!e.sourceHash.empty())
      os << "\n  source:     " << e.sourceHash;
    if (!e.compilerVersion.empty() && e.compilerVersion != compilerVersion_)
      os << "\n  compiler:   " << e.compilerVersion;
    os << "\n  images:";
    for (const ImageInfo &im : e.images) {
      os << "\n    " << im.arch << " " << im.kind << " " << humanBytes(im.size) << " at offset "
         << im.offset << ", xxh64 " << hex64(im.xxh64);
      const TargetInfo *t = im.kind == "cubin" ? e.target(im.arch) : nullptr;
      if (!t)
        continue;
      os << "\n      ";
      bool first = true;
      auto item = [&](const std::string &text) {
        os << (first ? "" : ", ") << text;
        first = false;
      };
      if (t->registers >= 0)
        item(std::to_string(t->registers) + " registers");
      if (t->spillStoreBytes >= 0 || t->spillLoadBytes >= 0)
        item("spills " + std::to_string(std::max<int64_t>(t->spillStoreBytes, 0)) + " B stored/" +
             std::to_string(std::max<int64_t>(t->spillLoadBytes, 0)) + " B loaded");
      if (t->stackBytes >= 0)
        item(std::to_string(t->stackBytes) + " B stack");
      if (t->sharedStaticBytes >= 0)
        item(std::to_string(t->sharedStaticBytes) + " B static shared");
      if (!t->ptxIsa.empty())
        item("PTX ISA " + t->ptxIsa);
      if (!t->assembler.empty())
        item(t->assembler + (t->assemblerVersion.empty() ? "" : " " + t->assemblerVersion));
      std::string feats;
      for (const std::string &f : t->features)
        feats += (feats.empty() ? "" : " ") + f;
      item("features: " + (feats.empty() ? std::string("(none)") : feats));
    }
    os << "\n";
  }
  return os.str();
}

} // namespace kiln
