//===- Metadata.cpp - Kernel metadata validation and decoding -------------===//

#include "kiln/Runtime/Metadata.h"
#include "kiln/Runtime/Error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

using nlohmann::json;

namespace kiln {

namespace {
struct DTypeName {
  DType dtype;
  const char *name;
  unsigned bytes;
};
constexpr DTypeName kDTypes[] = {
    {DType::I1, "i1", 1},   {DType::I8, "i8", 1},         {DType::I16, "i16", 2},
    {DType::I32, "i32", 4}, {DType::I64, "i64", 8},       {DType::U8, "u8", 1},
    {DType::U16, "u16", 2}, {DType::U32, "u32", 4},       {DType::U64, "u64", 8},
    {DType::F16, "f16", 2}, {DType::BF16, "bf16", 2},     {DType::F32, "f32", 4},
    {DType::F64, "f64", 8}, {DType::F8E4M3, "f8e4m3", 1}, {DType::F8E5M2, "f8e5m2", 1},
};

/// A JSON value's type, in words, for "expected X, got Y" messages.
std::string typeName(const json &j) {
  if (j.is_boolean())
    return "boolean";
  if (j.is_number_float())
    return "float";
  if (j.is_number())
    return "integer";
  return j.type_name();
}

/// Field access with schema errors that name the entry and the field.
class Fields {
public:
  Fields(const json &j, const std::string &where) : j_(j), where_(where) {
    if (!j.is_object())
      fail("", "expected an object, got " + typeName(j));
  }
  [[noreturn]] void fail(const std::string &field, const std::string &what) const {
    throw Error(where_ + (field.empty() ? "" : ": field '" + field + "'") + ": " + what);
  }
  const json *get(const char *field, bool required) const {
    auto it = j_.find(field);
    if (it == j_.end()) {
      if (required)
        throw Error(where_ + ": field '" + field + "' missing");
      return nullptr;
    }
    return &*it;
  }
  std::string str(const char *field, bool required, bool nonEmpty = false) const {
    const json *v = get(field, required);
    if (!v)
      return "";
    if (!v->is_string())
      fail(field, "expected a string, got " + typeName(*v));
    std::string s = v->get<std::string>();
    if (nonEmpty && s.empty())
      fail(field, "must not be empty");
    return s;
  }
  uint64_t uint(const char *field, bool required, uint64_t dflt, uint64_t max) const {
    const json *v = get(field, required);
    if (!v)
      return dflt;
    if (v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0)) {
      uint64_t x = v->get<uint64_t>();
      if (x > max)
        fail(field, "value " + std::to_string(x) + " is larger than " + std::to_string(max));
      return x;
    }
    fail(field,
         "expected a non-negative integer, got " + (v->is_number() ? v->dump() : typeName(*v)));
  }
  bool boolean(const char *field, bool dflt) const {
    const json *v = get(field, false);
    if (!v)
      return dflt;
    if (!v->is_boolean())
      fail(field, "expected a boolean, got " + typeName(*v));
    return v->get<bool>();
  }

private:
  const json &j_;
  std::string where_;
};

bool isHex64(const std::string &s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}
} // namespace

std::string_view dtypeName(DType dtype) {
  for (const auto &d : kDTypes)
    if (d.dtype == dtype)
      return d.name;
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const auto &d : kDTypes)
    if (name == d.name)
      return d.dtype;
  return std::nullopt;
}

unsigned dtypeBytes(DType dtype) {
  for (const auto &d : kDTypes)
    if (d.dtype == dtype)
      return d.bytes;
  return 0;
}

bool isFloatDType(DType d) {
  return d == DType::F16 || d == DType::BF16 || d == DType::F32 || d == DType::F64 ||
         d == DType::F8E4M3 || d == DType::F8E5M2;
}
bool isSignedIntDType(DType d) {
  return d == DType::I1 || d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64;
}
bool isUnsignedIntDType(DType d) {
  return d == DType::U8 || d == DType::U16 || d == DType::U32 || d == DType::U64;
}

std::string ParamInfo::describeType() const {
  switch (kind) {
  case ParamKind::Pointer:
    return "ptr<" + std::string(dtypeName(dtype)) + ">";
  case ParamKind::TensorMap: {
    std::string s = "tensordesc<" + std::string(dtypeName(dtype)) + ", ";
    for (size_t i = 0; i < box.size(); ++i)
      s += (i ? "x" : "") + std::to_string(box[i]);
    if (swizzle)
      s += ", swizzle " + std::to_string(swizzle);
    return s + ">";
  }
  case ParamKind::Scalar:
    break;
  }
  return std::string(dtypeName(dtype));
}

std::string ParamInfo::describe() const {
  std::string s = name + ": " + describeType();
  if (divisibility > 1)
    s += " (div " + std::to_string(divisibility) + ")";
  return s;
}

const std::vector<std::string> &knownFeatures() {
  static const std::vector<std::string> names = {"tma",      "wgmma",    "tcgen05",
                                                 "elect",    "pdl",      "sys_atomics",
                                                 "vector16", "mbarrier", "setmaxnreg"};
  return names;
}

const TargetInfo *KernelEntry::target(const std::string &arch) const {
  for (const TargetInfo &t : targets)
    if (t.arch == arch)
      return &t;
  return nullptr;
}

std::vector<std::string> KernelEntry::archList() const {
  std::vector<std::string> out;
  for (const auto &img : images)
    out.push_back(img.kind == "ptx" ? img.arch + " (ptx)" : img.arch);
  return out;
}

bool KernelEntry::matchesConstexprs(const json &subset) const {
  if (subset.is_null())
    return true;
  if (!subset.is_object())
    return false;
  for (auto it = subset.begin(); it != subset.end(); ++it) {
    auto mine = constexprs.find(it.key());
    if (mine == constexprs.end())
      return false;
    // Booleans compare only with booleans (json would not mix them anyway).
    if (mine->is_boolean() != it->is_boolean() || !(*mine == *it))
      return false;
  }
  return true;
}

std::string KernelEntry::describeConstexprs() const {
  std::string s;
  for (auto it = constexprs.begin(); it != constexprs.end(); ++it) {
    if (!s.empty())
      s += ", ";
    s += it.key() + "=" + it->dump();
  }
  return s;
}

bool isValidArch(std::string_view arch) { return archNumber(arch) >= 0; }

int archNumber(std::string_view arch) {
  if (arch.size() < 4 || arch.substr(0, 3) != "sm_")
    return -1;
  std::string_view rest = arch.substr(3);
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f'))
    rest.remove_suffix(1);
  if (rest.empty() || rest.size() > 4)
    return -1;
  int n = 0;
  for (char c : rest) {
    if (c < '0' || c > '9')
      return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string archForComputeCapability(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if ((major == 9 && minor == 0) || (major == 10 && (minor == 0 || minor == 3)))
    arch += "a";
  return arch;
}

size_t selectImage(const KernelEntry &entry, const std::string &deviceArch,
                   const std::string &deviceName) {
  const int devNum = archNumber(deviceArch);
  auto findImage = [&](auto pred) -> std::optional<size_t> {
    for (size_t i = 0; i < entry.images.size(); ++i)
      if (pred(entry.images[i]))
        return i;
    return std::nullopt;
  };
  auto isPlain = [](const std::string &arch) {
    return !arch.empty() && arch.back() != 'a' && arch.back() != 'f';
  };
  if (auto i = findImage(
          [&](const ImageInfo &im) { return im.kind == "cubin" && im.arch == deviceArch; }))
    return *i;
  if (auto i = findImage([&](const ImageInfo &im) {
        return im.kind == "cubin" && isPlain(im.arch) && archNumber(im.arch) == devNum;
      }))
    return *i;
  if (auto i =
          findImage([&](const ImageInfo &im) { return im.kind == "ptx" && im.arch == deviceArch; }))
    return *i;
  std::optional<size_t> best;
  for (size_t i = 0; i < entry.images.size(); ++i) {
    const ImageInfo &im = entry.images[i];
    int n = archNumber(im.arch);
    if (im.kind == "ptx" && isPlain(im.arch) && n >= 0 && n <= devNum &&
        (!best || n > archNumber(entry.images[*best].arch)))
      best = i;
  }
  if (best)
    return *best;

  std::string held;
  for (const auto &a : entry.archList())
    held += (held.empty() ? "" : ", ") + a;
  if (held.empty())
    held = "(no images)";
  throw Error("kernel '" + entry.name + "' has no image for this device (" + deviceArch +
              (deviceName.empty() ? "" : ", " + deviceName) + "); the bundle holds: " + held);
}

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

KernelEntry parseKernelEntry(const json &meta, const std::string &whereIn, bool withImages) {
  std::string where = whereIn;
  if (meta.is_object()) {
    auto n = meta.find("name");
    if (n != meta.end() && n->is_string())
      where += " ('" + n->get<std::string>() + "')";
  }
  Fields f(meta, where);
  KernelEntry e;
  e.name = f.str("name", true, true);
  e.symbol = f.str("symbol", true, true);

  const json *params = f.get("params", true);
  if (!params->is_array())
    f.fail("params", "expected an array, got " + typeName(*params));
  std::set<std::string> names;
  for (size_t i = 0; i < params->size(); ++i) {
    Fields p((*params)[i], where + ": param " + std::to_string(i));
    ParamInfo info;
    info.name = p.str("name", true, true);
    if (!names.insert(info.name).second)
      f.fail("params", "duplicate parameter name '" + info.name + "'");
    std::string kind = p.str("kind", true);
    if (kind == "ptr")
      info.kind = ParamKind::Pointer;
    else if (kind == "scalar")
      info.kind = ParamKind::Scalar;
    else if (kind == "tensormap")
      info.kind = ParamKind::TensorMap;
    else
      p.fail("kind", "expected \"ptr\", \"scalar\" or \"tensormap\", got \"" + kind + "\"");
    std::string dtype = p.str("dtype", true);
    auto d = parseDType(dtype);
    if (!d)
      p.fail("dtype", "unknown dtype \"" + dtype + "\"");
    info.dtype = *d;
    info.divisibility = p.uint("divisibility", false, 1, uint64_t(1) << 32);
    if (info.divisibility == 0)
      p.fail("divisibility", "must be at least 1");
    if (info.kind == ParamKind::TensorMap) {
      const json *box = p.get("box", true);
      if (!box->is_array() || box->empty() || box->size() > 5)
        p.fail("box", "expected an array of 1 to 5 dimensions, got " + box->dump());
      for (const json &d : *box) {
        if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > 256)
          p.fail("box", "expected dimensions in [1, 256], got " + box->dump());
        info.box.push_back(static_cast<uint32_t>(d.get<int64_t>()));
      }
      info.swizzle = static_cast<unsigned>(p.uint("swizzle", false, 0, 128));
      if (info.swizzle != 0 && info.swizzle != 32 && info.swizzle != 64 && info.swizzle != 128)
        p.fail("swizzle", "expected 0, 32, 64 or 128, got " + std::to_string(info.swizzle));
    }
    e.params.push_back(std::move(info));
  }

  if (const json *c = f.get("constexprs", false)) {
    if (!c->is_object())
      f.fail("constexprs", "expected an object, got " + typeName(*c));
    e.constexprs = *c;
  }
  e.threadsPerBlock = static_cast<unsigned>(f.uint("threads_per_block", true, 0, 1024));
  if (e.threadsPerBlock == 0)
    f.fail("threads_per_block", "must be at least 1");
  e.sharedBytes = static_cast<unsigned>(f.uint("shared_bytes", false, 0, 1u << 30));
  e.pdl = f.boolean("pdl", false);
  if (const json *c = f.get("cluster", false)) {
    if (!c->is_array() || c->size() != 3)
      f.fail("cluster", "expected an array of 3 positive integers, got " + c->dump());
    for (size_t i = 0; i < 3; ++i) {
      const json &v = (*c)[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1024)
        f.fail("cluster", "expected an array of 3 positive integers, got " + c->dump());
      e.cluster[i] = static_cast<unsigned>(v.get<int64_t>());
    }
    if (e.cluster[0] * e.cluster[1] * e.cluster[2] > 16)
      f.fail("cluster", "expected at most 16 blocks per cluster (the non-portable cluster "
                        "size), got " +
                            c->dump());
  }
  if (const json *c = f.get("features", false)) {
    if (!c->is_array())
      f.fail("features", "expected an array of strings, got " + typeName(*c));
    for (const auto &v : *c) {
      if (!v.is_string())
        f.fail("features", "expected an array of strings, got an element of type " + typeName(v));
      e.features.push_back(v.get<std::string>());
    }
  }
  e.sourceHash = f.str("source_hash", false);
  e.specialization = f.str("specialization", false);
  e.compilerVersion = f.str("compiler_version", false);
  if (const json *t = f.get("targets", false)) {
    if (!t->is_object())
      f.fail("targets", "expected an object (arch -> facts), got " + typeName(*t));
    for (auto it = t->begin(); it != t->end(); ++it) {
      if (!isValidArch(it.key()))
        f.fail("targets", "invalid arch \"" + it.key() + "\" (expected sm_<digits>[a|f])");
      Fields tf(*it, where + ": targets." + it.key());
      TargetInfo info;
      info.arch = it.key();
      if (const json *fs = tf.get("features", false)) {
        if (!fs->is_array())
          tf.fail("features", "expected an array of strings, got " + typeName(*fs));
        for (const json &v : *fs) {
          if (!v.is_string())
            tf.fail("features",
                    "expected an array of strings, got an element of type " + typeName(v));
          info.features.push_back(v.get<std::string>());
          if (std::find(e.features.begin(), e.features.end(), info.features.back()) ==
              e.features.end())
            tf.fail("features", "feature \"" + info.features.back() +
                                    "\" is missing from the kernel's 'features'");
        }
      }
      auto count = [&](const char *field) -> int64_t {
        return tf.get(field, false) ? static_cast<int64_t>(tf.uint(field, false, 0, 1u << 30)) : -1;
      };
      info.registers = count("registers");
      if (info.registers > 255)
        tf.fail("registers", "value " + std::to_string(info.registers) +
                                 " is larger than 255 (the per-thread limit)");
      info.stackBytes = count("stack_bytes");
      info.spillStoreBytes = count("spill_store_bytes");
      info.spillLoadBytes = count("spill_load_bytes");
      info.sharedStaticBytes = count("shared_static_bytes");
      info.ptxIsa = tf.str("ptx_isa", false);
      if (!info.ptxIsa.empty()) {
        size_t dot = info.ptxIsa.find('.');
        bool ok = dot != std::string::npos && dot > 0 && dot + 1 < info.ptxIsa.size() &&
                  std::all_of(info.ptxIsa.begin(), info.ptxIsa.end(),
                              [](char c) { return c == '.' || (c >= '0' && c <= '9'); }) &&
                  info.ptxIsa.find('.', dot + 1) == std::string::npos;
        if (!ok)
          tf.fail("ptx_isa", "expected \"<major>.<minor>\", got \"" + info.ptxIsa + "\"");
      }
      info.assembler = tf.str("assembler", false);
      info.assemblerVersion = tf.str("assembler_version", false);
      e.targets.push_back(std::move(info));
    }
  }

  if (withImages) {
    const json *images = f.get("images", true);
    if (!images->is_array())
      f.fail("images", "expected an array, got " + typeName(*images));
    if (images->empty())
      f.fail("images", "must hold at least one image");
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < images->size(); ++i) {
      Fields im((*images)[i], where + ": image " + std::to_string(i));
      ImageInfo info;
      info.arch = im.str("arch", true);
      if (!isValidArch(info.arch))
        im.fail("arch", "invalid arch \"" + info.arch + "\" (expected sm_<digits>[a|f])");
      info.kind = im.str("kind", true);
      if (info.kind != "cubin" && info.kind != "ptx")
        im.fail("kind", "expected \"cubin\" or \"ptx\", got \"" + info.kind + "\"");
      if (!seen.insert({info.arch, info.kind}).second)
        f.fail("images", "duplicate " + info.kind + " image for " + info.arch);
      info.offset = im.uint("offset", true, 0, UINT64_MAX);
      info.size = im.uint("size", true, 0, UINT64_MAX);
      std::string h = im.str("xxh64", true);
      if (!isHex64(h))
        im.fail("xxh64", "expected 16 lowercase hex digits, got \"" + h + "\"");
      info.xxh64 = std::stoull(h, nullptr, 16);
      e.images.push_back(std::move(info));
    }
    for (const TargetInfo &t : e.targets)
      if (std::none_of(e.images.begin(), e.images.end(),
                       [&](const ImageInfo &im) { return im.arch == t.arch; }))
        f.fail("targets", "facts for " + t.arch + ", which has no image");
  }
  e.meta = meta;
  return e;
}

json normalizeKernelMeta(const json &meta, const std::string &where) {
  KernelEntry e = parseKernelEntry(meta, where, /*withImages=*/false);
  json out = meta;
  out.erase("images");
  if (!out.contains("constexprs"))
    out["constexprs"] = json::object();
  if (!out.contains("shared_bytes"))
    out["shared_bytes"] = 0;
  if (!out.contains("pdl"))
    out["pdl"] = false;
  if (!out.contains("cluster"))
    out["cluster"] = json::array({1, 1, 1});
  if (!out.contains("features"))
    out["features"] = json::array();
  if (!out.contains("source_hash"))
    out["source_hash"] = "";
  if (!out.contains("specialization"))
    out["specialization"] = "";
  if (!out.contains("targets"))
    out["targets"] = json::object();
  for (auto &p : out["params"])
    if (!p.contains("divisibility"))
      p["divisibility"] = 1;
  return out;
}

} // namespace kiln
