//===- Kernel.cpp - Arguments, image loading and cuLaunchKernelEx ---------===//

#include "kiln/Runtime/Kernel.h"

#include "Driver.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

using nlohmann::json;

namespace kiln {

using detail::Driver;

//===----------------------------------------------------------------------===//
// KernelArg
//===----------------------------------------------------------------------===//

namespace {
template <typename T>
uint64_t bitsOf(T v) {
  uint64_t raw = 0;
  std::memcpy(&raw, &v, sizeof(T));
  return raw;
}

/// float -> IEEE half, round to nearest even; overflow gives infinity.
uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) // inf or nan
    return static_cast<uint16_t>(sign | (absx > 0x7f800000 ? 0x7e00 : 0x7c00));
  if (absx >= 0x477ff000) // >= 65520 rounds to infinity
    return static_cast<uint16_t>(sign | 0x7c00);
  if (absx < 0x38800000) { // below 2^-14: subnormal half (exact scaling by 2^24)
    float a;
    std::memcpy(&a, &absx, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  const uint32_t mant = absx & 0x7fffff;
  const uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return static_cast<uint16_t>(sign | h);
}

/// float -> bfloat16, round to nearest even.
uint16_t floatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>(((x >> 16) & 0x8000) | 0x7fc0);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

std::string rangeError(const std::string &what, const std::string &value, DType dtype,
                       const std::string &range) {
  return what + ": value " + value + " is out of range for " + std::string(dtypeName(dtype)) + " " +
         range;
}
} // namespace

KernelArg KernelArg::pointer(uint64_t address) {
  return KernelArg(ParamKind::Pointer, DType::U64, address);
}
KernelArg KernelArg::i1(bool v) { return KernelArg(ParamKind::Scalar, DType::I1, v ? 1 : 0); }
KernelArg KernelArg::i8(int8_t v) { return KernelArg(ParamKind::Scalar, DType::I8, bitsOf(v)); }
KernelArg KernelArg::i16(int16_t v) { return KernelArg(ParamKind::Scalar, DType::I16, bitsOf(v)); }
KernelArg KernelArg::i32(int32_t v) { return KernelArg(ParamKind::Scalar, DType::I32, bitsOf(v)); }
KernelArg KernelArg::i64(int64_t v) { return KernelArg(ParamKind::Scalar, DType::I64, bitsOf(v)); }
KernelArg KernelArg::u8(uint8_t v) { return KernelArg(ParamKind::Scalar, DType::U8, v); }
KernelArg KernelArg::u16(uint16_t v) { return KernelArg(ParamKind::Scalar, DType::U16, v); }
KernelArg KernelArg::u32(uint32_t v) { return KernelArg(ParamKind::Scalar, DType::U32, v); }
KernelArg KernelArg::u64(uint64_t v) { return KernelArg(ParamKind::Scalar, DType::U64, v); }
KernelArg KernelArg::f32(float v) { return KernelArg(ParamKind::Scalar, DType::F32, bitsOf(v)); }
KernelArg KernelArg::f64(double v) { return KernelArg(ParamKind::Scalar, DType::F64, bitsOf(v)); }
KernelArg KernelArg::bits(DType dtype, uint64_t bits) {
  unsigned n = dtypeBytes(dtype);
  if (n < 8)
    bits &= (uint64_t(1) << (8 * n)) - 1;
  return KernelArg(ParamKind::Scalar, dtype, bits);
}

KernelArg KernelArg::fromInteger(DType dtype, long long v, const std::string &what) {
  auto check = [&](long long lo, long long hi) {
    if (v < lo || v > hi)
      throw Error(rangeError(what, std::to_string(v), dtype,
                             "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"));
  };
  switch (dtype) {
  case DType::I1:
    check(0, 1);
    return i1(v != 0);
  case DType::I8:
    check(INT8_MIN, INT8_MAX);
    return i8(static_cast<int8_t>(v));
  case DType::I16:
    check(INT16_MIN, INT16_MAX);
    return i16(static_cast<int16_t>(v));
  case DType::I32:
    check(INT32_MIN, INT32_MAX);
    return i32(static_cast<int32_t>(v));
  case DType::I64:
    return i64(v);
  case DType::U8:
    check(0, UINT8_MAX);
    return u8(static_cast<uint8_t>(v));
  case DType::U16:
    check(0, UINT16_MAX);
    return u16(static_cast<uint16_t>(v));
  case DType::U32:
    check(0, UINT32_MAX);
    return u32(static_cast<uint32_t>(v));
  case DType::U64:
    check(0, LLONG_MAX);
    return u64(static_cast<uint64_t>(v));
  default:
    return fromFloat(dtype, static_cast<double>(v), what);
  }
}

KernelArg KernelArg::fromUnsigned(DType dtype, unsigned long long v, const std::string &what) {
  if (v <= static_cast<unsigned long long>(LLONG_MAX))
    return fromInteger(dtype, static_cast<long long>(v), what);
  if (dtype == DType::U64)
    return u64(v);
  if (isFloatDType(dtype))
    return fromFloat(dtype, static_cast<double>(v), what);
  throw Error(rangeError(what, std::to_string(v), dtype, "(too large)"));
}

KernelArg KernelArg::fromFloat(DType dtype, double v, const std::string &what) {
  auto overflow = [&](double limit) {
    if (std::isfinite(v) && std::fabs(v) > limit)
      throw Error(rangeError(what, std::to_string(v), dtype,
                             "(largest finite magnitude " + std::to_string(limit) + ")"));
  };
  switch (dtype) {
  case DType::F64:
    return f64(v);
  case DType::F32:
    overflow(std::numeric_limits<float>::max());
    return f32(static_cast<float>(v));
  case DType::F16:
    overflow(65504.0);
    return bits(DType::F16, floatToHalf(static_cast<float>(v)));
  case DType::BF16:
    overflow(3.3895313892515355e38);
    return bits(DType::BF16, floatToBF16(static_cast<float>(v)));
  case DType::F8E4M3:
  case DType::F8E5M2:
    throw Error(what + ": " + std::string(dtypeName(dtype)) +
                " scalars are passed as raw bits (an integer), not as a float");
  default:
    throw Error(what + ": expected an integer for " + std::string(dtypeName(dtype)) +
                ", got a float (" + std::to_string(v) + ")");
  }
}

uint64_t tensorMapGeometry(const std::vector<uint32_t> &box, unsigned swizzle) {
  uint64_t g = box.size();
  for (uint32_t d : box)
    g = g * 257 + d;
  return g * 257 + swizzle;
}

ParamInfo tensorMapParamType(DType dtype, uint64_t g) {
  ParamInfo p;
  p.kind = ParamKind::TensorMap;
  p.dtype = dtype;
  p.swizzle = static_cast<unsigned>(g % 257);
  g /= 257;
  while (g >= 257) {
    p.box.insert(p.box.begin(), static_cast<uint32_t>(g % 257));
    g /= 257;
  }
  return p;
}

KernelArg KernelArg::tensorMap(const void *map, DType dtype, const std::vector<uint32_t> &box,
                               unsigned swizzle) {
  return KernelArg(ParamKind::TensorMap, dtype, reinterpret_cast<uint64_t>(map),
                   tensorMapGeometry(box, swizzle));
}

KernelArg KernelArg::tensorMap(const CUtensorMap &map, const TensorMapSpec &spec) {
  std::vector<uint32_t> box(spec.box.rbegin(), spec.box.rend());
  return tensorMap(&map, spec.dtype, box,
                   swizzleSpanBytes(spec.swizzle) == 16 ? 0u : swizzleSpanBytes(spec.swizzle));
}

std::string KernelArg::describe() const {
  switch (kind_) {
  case ParamKind::Pointer:
    return "ptr";
  case ParamKind::TensorMap:
    return tensorMapParamType(dtype_, geometry_).describeType();
  case ParamKind::Scalar:
    break;
  }
  return std::string(dtypeName(dtype_));
}

namespace {
/// Whether `a` can be passed for `p` (pointers: kind and alignment).
bool argFits(const ParamInfo &p, const KernelArg &a) {
  switch (p.kind) {
  case ParamKind::Pointer:
    return a.isPointer() && (p.divisibility <= 1 || a.raw() % p.divisibility == 0);
  case ParamKind::TensorMap:
    return a.kind() == ParamKind::TensorMap && a.dtype() == p.dtype &&
           a.geometry() == tensorMapGeometry(p.box, p.swizzle);
  case ParamKind::Scalar:
    break;
  }
  return a.kind() == ParamKind::Scalar && a.dtype() == p.dtype;
}
} // namespace

//===----------------------------------------------------------------------===//
// Argument checking
//===----------------------------------------------------------------------===//

void checkArgs(const KernelEntry &entry, const std::vector<KernelArg> &args) {
  if (args.size() != entry.params.size()) {
    std::string expected;
    for (const ParamInfo &p : entry.params)
      expected += (expected.empty() ? "" : ", ") + p.describe();
    throw Error("kernel '" + entry.name + "' expects " + std::to_string(entry.params.size()) +
                " argument" + (entry.params.size() == 1 ? "" : "s") + " (" + expected + "), got " +
                std::to_string(args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo &p = entry.params[i];
    const KernelArg &a = args[i];
    const std::string where =
        "kernel '" + entry.name + "': argument '" + p.name + "' (param " + std::to_string(i) + ")";
    const std::string expected = p.describeType();
    if (p.kind == ParamKind::Pointer && a.isPointer() && !argFits(p, a)) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(a.raw()));
      throw Error(where + ": pointer " + buf + " is not " + std::to_string(p.divisibility) +
                  "-byte aligned (divisibility " + std::to_string(p.divisibility) + ")");
    }
    if (!argFits(p, a))
      throw Error(where + " expects " + expected + ", got " + a.describe());
  }
}

bool argsFit(const KernelEntry &entry, const KernelArg *args, size_t numArgs) noexcept {
  if (numArgs != entry.params.size())
    return false;
  for (size_t i = 0; i < numArgs; ++i)
    if (!argFits(entry.params[i], args[i]))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

std::string gridDimError(const std::string &kernel, unsigned dim, const std::string &value) {
  return "kernel '" + kernel + "': grid dimension " + std::to_string(dim) + " = " + value +
         " is out of range [0, " + std::to_string(kMaxGridDims[dim < 3 ? dim : 0]) + "]";
}

std::string clusterGridError(const std::string &kernel, const std::array<unsigned, 3> &grid,
                             const std::array<unsigned, 3> &cluster) {
  auto triple = [](const std::array<unsigned, 3> &v) {
    return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) +
           ")";
  };
  return "kernel '" + kernel + "': grid " + triple(grid) +
         " is not a multiple of the cluster shape " + triple(cluster);
}

namespace {
/// Most parameters one launch passes (the kernel ABI allows at most 32 KiB).
constexpr size_t kMaxParams = 1024;
} // namespace

std::shared_ptr<Kernel> Kernel::fromImages(const json &meta,
                                           const std::map<std::string, std::string> &images) {
  KernelEntry entry = parseKernelEntry(normalizeKernelMeta(meta, "kernel metadata"),
                                       "kernel metadata", /*withImages=*/false);
  if (images.empty())
    throw Error("kernel '" + entry.name + "': no images given");
  std::vector<std::string> owned;
  for (const auto &[arch, bytes] : images) {
    if (!isValidArch(arch))
      throw Error("kernel '" + entry.name + "': invalid arch \"" + arch +
                  "\" (expected sm_<digits>[a|f])");
    if (bytes.empty())
      throw Error("kernel '" + entry.name + "': empty image for " + arch);
    ImageInfo info;
    info.arch = arch;
    info.kind = bytes.compare(0, 4,
                              "\x7f"
                              "ELF") == 0
                    ? "cubin"
                    : "ptx";
    info.size = bytes.size();
    entry.images.push_back(info);
    owned.push_back(bytes);
  }
  entry.meta["images"] = json::array();
  for (const ImageInfo &im : entry.images)
    entry.meta["images"].push_back({{"arch", im.arch}, {"kind", im.kind}, {"size", im.size}});
  auto k = std::make_shared<Kernel>(std::move(entry), std::vector<std::string_view>{}, nullptr);
  k->ownedImages_ = std::move(owned);
  for (const std::string &s : k->ownedImages_)
    k->imageBytes_.emplace_back(s);
  return k;
}

Kernel::Kernel(KernelEntry entry, std::vector<std::string_view> imageBytes,
               std::shared_ptr<const void> owner)
    : entry_(std::move(entry)), imageBytes_(std::move(imageBytes)), owner_(std::move(owner)) {}

Kernel::~Kernel() {
  const Driver *d = Driver::tryGet();
  if (!d)
    return;
  // Best effort: at process exit the driver may already be shut down.
  for (const auto &l : loaded_)
    if (l->module)
      (void)d->cuModuleUnload(l->module);
}

const Kernel::Loaded &Kernel::loadedForCurrentContext() const {
  const Driver &d = Driver::get();
  CUcontext ctx = d.currentOrPrimaryContext();
  if (const Loaded *last = last_.load(std::memory_order_acquire); last && last->context == ctx)
    return *last;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &l : loaded_)
    if (l->context == ctx) {
      last_.store(l.get(), std::memory_order_release);
      return *l;
    }

  CUdevice dev = 0;
  d.check(d.cuCtxGetDevice(&dev), "cuCtxGetDevice", entry_.name);
  DeviceInfo device = deviceInfo(static_cast<int>(dev));
  size_t index = selectImage(entry_, device.arch, device.name);
  const ImageInfo &image = entry_.images[index];
  auto l = std::make_unique<Loaded>();
  l->context = ctx;
  l->arch = image.arch + (image.kind == "ptx" ? " ptx" : "");
  std::string_view bytes = imageBytes_.at(index);
  if (image.kind == "ptx") {
    std::string text(bytes); // the driver wants NUL-terminated PTX
    d.check(d.cuModuleLoadData(&l->module, text.c_str()), "cuModuleLoadData", entry_.name, l->arch);
  } else {
    d.check(d.cuModuleLoadData(&l->module, bytes.data()), "cuModuleLoadData", entry_.name, l->arch);
  }
  CUresult r = d.cuModuleGetFunction(&l->function, l->module, entry_.symbol.c_str());
  if (r != CUDA_SUCCESS) {
    (void)d.cuModuleUnload(l->module);
    d.check(r, ("cuModuleGetFunction(\"" + entry_.symbol + "\")").c_str(), entry_.name, l->arch);
  }
  if (entry_.sharedBytes > 48 * 1024)
    d.check(d.cuFuncSetAttribute(l->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(entry_.sharedBytes)),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", entry_.name, l->arch);
  // Clusters of more than 8 blocks (the portable size) need the non-portable opt-in.
  if (entry_.cluster[0] * entry_.cluster[1] * entry_.cluster[2] > 8)
    d.check(
        d.cuFuncSetAttribute(l->function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
        "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", entry_.name, l->arch);
  loaded_.push_back(std::move(l));
  last_.store(loaded_.back().get(), std::memory_order_release);
  return *loaded_.back();
}

void Kernel::load() const { (void)loadedForCurrentContext(); }

void Kernel::launch(CUstream stream, std::array<unsigned, 3> grid, const KernelArg *args,
                    size_t numArgs) const {
  if (!argsFit(entry_, args, numArgs)) // explain: throws
    checkArgs(entry_, std::vector<KernelArg>(args, args + numArgs));
  if (numArgs > kMaxParams)
    throw Error("kernel '" + entry_.name + "': too many arguments (" + std::to_string(numArgs) +
                ")");
  for (unsigned i = 0; i < 3; ++i)
    if (grid[i] > kMaxGridDims[i])
      throw Error(gridDimError(entry_.name, i, std::to_string(grid[i])));
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return;
  for (int i = 0; i < 3; ++i)
    if (entry_.cluster[i] != 1 && grid[i] % entry_.cluster[i] != 0)
      throw Error(clusterGridError(entry_.name, grid, entry_.cluster));
  const Loaded &l = loadedForCurrentContext();
  const Driver &d = Driver::get();

  void *params[kMaxParams];
  for (size_t i = 0; i < numArgs; ++i)
    params[i] = const_cast<void *>(args[i].data());

  const bool plain = !entry_.pdl && entry_.cluster == std::array<unsigned, 3>{1, 1, 1};
  if (plain) { // no launch attributes: the classic entry point is the cheaper one
    CUresult r =
        d.cuLaunchKernel(l.function, grid[0], grid[1], grid[2], entry_.threadsPerBlock, 1, 1,
                         entry_.sharedBytes, stream, numArgs ? params : nullptr, nullptr);
    if (r != CUDA_SUCCESS)
      d.check(r, "cuLaunchKernel", entry_.name, l.arch);
    return;
  }
  CUlaunchAttribute attrs[2];
  unsigned numAttrs = 0;
  if (entry_.pdl) {
    CUlaunchAttribute &a = attrs[numAttrs++];
    std::memset(&a, 0, sizeof(a));
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  if (entry_.cluster != std::array<unsigned, 3>{1, 1, 1}) {
    CUlaunchAttribute &a = attrs[numAttrs++];
    std::memset(&a, 0, sizeof(a));
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = entry_.cluster[0];
    a.value.clusterDim.y = entry_.cluster[1];
    a.value.clusterDim.z = entry_.cluster[2];
  }
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof(config));
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = entry_.threadsPerBlock;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = entry_.sharedBytes;
  config.hStream = stream;
  config.attrs = numAttrs ? attrs : nullptr;
  config.numAttrs = numAttrs;
  CUresult r = d.cuLaunchKernelEx(&config, l.function, numArgs ? params : nullptr, nullptr);
  if (r != CUDA_SUCCESS)
    d.check(r, "cuLaunchKernelEx", entry_.name, l.arch);
}

} // namespace kiln
