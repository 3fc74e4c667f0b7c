//===- KernelTest.cpp - Image selection, arguments, no-driver behaviour ---===//

#include "kiln/Runtime/Kernel.h"
#include "kiln/Runtime/Bundle.h"

#include "ErrorOf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

using nlohmann::json;
using namespace kiln;
using kiln::test::errorOf;

namespace {

KernelEntry entryWith(std::vector<std::pair<std::string, std::string>> images) {
  json meta = {{"name", "situ_and_mul"},
               {"symbol", "situ_and_mul_0a1b2c"},
               {"params",
                {{{"name", "x"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}},
                 {{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}}}},
               {"threads_per_block", 256}};
  KernelEntry e = parseKernelEntry(meta, "test", /*withImages=*/false);
  for (auto &[arch, kind] : images)
    e.images.push_back({arch, kind, 0, 1, 0});
  return e;
}

} // namespace

TEST(ArchTest, ComputeCapabilityNames) {
  EXPECT_EQ(archForComputeCapability(9, 0), "sm_90a");
  EXPECT_EQ(archForComputeCapability(10, 0), "sm_100a");
  EXPECT_EQ(archForComputeCapability(10, 3), "sm_103a");
  EXPECT_EQ(archForComputeCapability(8, 6), "sm_86");
  EXPECT_EQ(archForComputeCapability(12, 0), "sm_120");
  EXPECT_EQ(archNumber("sm_103a"), 103);
  EXPECT_EQ(archNumber("sm_90"), 90);
  EXPECT_EQ(archNumber("sm_100f"), 100);
  EXPECT_EQ(archNumber("sm_"), -1);
  EXPECT_EQ(archNumber("sm_9x"), -1);
  EXPECT_EQ(archNumber("compute_90"), -1);
}

TEST(SelectImageTest, ExactMatch) {
  KernelEntry e = entryWith({{"sm_90a", "cubin"}, {"sm_100a", "cubin"}, {"sm_103a", "cubin"}});
  EXPECT_EQ(selectImage(e, "sm_90a", "NVIDIA H200"), 0u);
  EXPECT_EQ(selectImage(e, "sm_100a", "NVIDIA B200"), 1u);
  EXPECT_EQ(selectImage(e, "sm_103a", "NVIDIA B300"), 2u);
}

TEST(SelectImageTest, CubinBeforePtxAndFallbacks) {
  KernelEntry e = entryWith({{"sm_90a", "ptx"}, {"sm_90a", "cubin"}});
  EXPECT_EQ(selectImage(e, "sm_90a", ""), 1u);
  KernelEntry plain = entryWith({{"sm_90", "cubin"}});
  EXPECT_EQ(selectImage(plain, "sm_90a", ""), 0u);
  KernelEntry ptx = entryWith({{"sm_80", "ptx"}, {"sm_90", "ptx"}, {"sm_100a", "ptx"}});
  EXPECT_EQ(selectImage(ptx, "sm_100a", ""), 2u);
  EXPECT_EQ(selectImage(ptx, "sm_120", ""), 1u); // newest plain PTX not newer than the device
  EXPECT_EQ(selectImage(ptx, "sm_86", ""), 0u);
}

TEST(SelectImageTest, MissingArchListsWhatTheBundleHolds) {
  KernelEntry e = entryWith({{"sm_100a", "cubin"}, {"sm_103a", "cubin"}});
  EXPECT_EQ(errorOf([&] { selectImage(e, "sm_90a", "NVIDIA H200"); }),
            "kiln: kernel 'situ_and_mul' has no image for this device (sm_90a, NVIDIA H200); the "
            "bundle holds: sm_100a, sm_103a");
  // An arch-specific cubin never serves another arch, nor does 'a' PTX.
  KernelEntry f = entryWith({{"sm_90a", "cubin"}, {"sm_90a", "ptx"}});
  EXPECT_EQ(errorOf([&] { selectImage(f, "sm_100a", "NVIDIA B200"); }),
            "kiln: kernel 'situ_and_mul' has no image for this device (sm_100a, NVIDIA B200); the "
            "bundle holds: sm_90a, sm_90a (ptx)");
}

TEST(KernelArgTest, CheckCountKindDtypeAlignment) {
  KernelEntry e = entryWith({{"sm_90a", "cubin"}});
  EXPECT_NO_THROW(checkArgs(e, {KernelArg::pointer(uint64_t(0x1000)), KernelArg::i32(5)}));
  EXPECT_EQ(errorOf([&] { checkArgs(e, {KernelArg::pointer(uint64_t(0x1000))}); }),
            "kiln: kernel 'situ_and_mul' expects 2 arguments (x: ptr<bf16> (div 16), n: i32), "
            "got 1");
  EXPECT_EQ(errorOf([&] { checkArgs(e, {KernelArg::i32(1), KernelArg::i32(5)}); }),
            "kiln: kernel 'situ_and_mul': argument 'x' (param 0) expects ptr<bf16>, got i32");
  EXPECT_EQ(
      errorOf([&] { checkArgs(e, {KernelArg::pointer(uint64_t(0x1000)), KernelArg::i64(5)}); }),
      "kiln: kernel 'situ_and_mul': argument 'n' (param 1) expects i32, got i64");
  EXPECT_EQ(errorOf([&] {
              checkArgs(
                  e, {KernelArg::pointer(uint64_t(0x1000)), KernelArg::pointer(uint64_t(0x1000))});
            }),
            "kiln: kernel 'situ_and_mul': argument 'n' (param 1) expects i32, got ptr");
  EXPECT_EQ(
      errorOf([&] { checkArgs(e, {KernelArg::pointer(uint64_t(0x1008)), KernelArg::i32(5)}); }),
      "kiln: kernel 'situ_and_mul': argument 'x' (param 0): pointer 0x1008 is not 16-byte "
      "aligned (divisibility 16)");
}

TEST(KernelArgTest, TensorMapsMatchDtypeBoxAndSwizzle) {
  json meta = {{"name", "copy"},
               {"symbol", "copy"},
               {"params",
                {{{"name", "src"}, {"kind", "tensormap"}, {"dtype", "bf16"}, {"box", {64, 128}}},
                 {{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}}}},
               {"threads_per_block", 128}};
  KernelEntry e = parseKernelEntry(meta, "test", /*withImages=*/false);
  ASSERT_EQ(e.params[0].kind, ParamKind::TensorMap);
  EXPECT_EQ(e.params[0].describe(), "src: tensordesc<bf16, 64x128>");
  alignas(64) unsigned char map[128] = {};
  EXPECT_NO_THROW(
      checkArgs(e, {KernelArg::tensorMap(map, DType::BF16, {64, 128}, 0), KernelArg::i32(1)}));
  // The TensorMapSpec form: dimensions innermost first there, outermost first in metadata.
  TensorMapSpec spec;
  spec.dtype = DType::BF16;
  spec.shape = {4096, 1024};
  spec.strides = {8192};
  spec.box = {128, 64};
  spec.swizzle = TensorMapSwizzle::None;
  CUtensorMap cmap{};
  KernelArg fromSpec = KernelArg::tensorMap(cmap, spec);
  EXPECT_EQ(fromSpec.data(), static_cast<const void *>(&cmap));
  EXPECT_NO_THROW(checkArgs(e, {fromSpec, KernelArg::i32(1)}));
  EXPECT_EQ(errorOf([&] {
              checkArgs(e,
                        {KernelArg::tensorMap(map, DType::BF16, {32, 128}, 0), KernelArg::i32(1)});
            }),
            "kiln: kernel 'copy': argument 'src' (param 0) expects tensordesc<bf16, 64x128>, got "
            "tensordesc<bf16, 32x128>");
  EXPECT_EQ(errorOf([&] {
              checkArgs(e,
                        {KernelArg::tensorMap(map, DType::F16, {64, 128}, 0), KernelArg::i32(1)});
            }),
            "kiln: kernel 'copy': argument 'src' (param 0) expects tensordesc<bf16, 64x128>, got "
            "tensordesc<f16, 64x128>");
  EXPECT_EQ(errorOf([&] {
              checkArgs(
                  e, {KernelArg::tensorMap(map, DType::BF16, {64, 128}, 128), KernelArg::i32(1)});
            }),
            "kiln: kernel 'copy': argument 'src' (param 0) expects tensordesc<bf16, 64x128>, got "
            "tensordesc<bf16, 64x128, swizzle 128>");
  EXPECT_EQ(
      errorOf([&] { checkArgs(e, {KernelArg::pointer(uint64_t(0x1000)), KernelArg::i32(1)}); }),
      "kiln: kernel 'copy': argument 'src' (param 0) expects tensordesc<bf16, 64x128>, got "
      "ptr");
  json bad = meta;
  bad["params"][0]["box"] = {64, 512};
  EXPECT_NE(errorOf([&] { parseKernelEntry(bad, "test", false); }).find("[1, 256]"),
            std::string::npos);
  bad["params"][0].erase("box");
  EXPECT_NE(errorOf([&] { parseKernelEntry(bad, "test", false); }).find("field 'box' missing"),
            std::string::npos);
}

TEST(KernelArgTest, Conversions) {
  const std::string what = "kernel 'k': argument 'n'";
  EXPECT_EQ(KernelArg::fromInteger(DType::I32, -1, what).raw(), 0xffffffffu);
  EXPECT_EQ(KernelArg::fromInteger(DType::I64, -1, what).raw(), ~uint64_t(0));
  EXPECT_EQ(KernelArg::fromInteger(DType::U8, 255, what).raw(), 255u);
  EXPECT_EQ(errorOf([&] { KernelArg::fromInteger(DType::I32, 1ll << 31, what); }),
            "kiln: kernel 'k': argument 'n': value 2147483648 is out of range for i32 "
            "[-2147483648, 2147483647]");
  EXPECT_THROW(KernelArg::fromInteger(DType::U32, -1, what), Error);
  EXPECT_THROW(KernelArg::fromInteger(DType::I1, 2, what), Error);
  EXPECT_EQ(KernelArg::fromUnsigned(DType::U64, ~0ull, what).raw(), ~uint64_t(0));
  EXPECT_THROW(KernelArg::fromUnsigned(DType::I64, ~0ull, what), Error);
  EXPECT_THROW(KernelArg::fromFloat(DType::I32, 1.5, what), Error);

  EXPECT_EQ(KernelArg::fromFloat(DType::F16, 1.0, what).raw(), 0x3c00u);
  EXPECT_EQ(KernelArg::fromFloat(DType::F16, -2.0, what).raw(), 0xc000u);
  EXPECT_EQ(KernelArg::fromFloat(DType::F16, 65504.0, what).raw(), 0x7bffu);
  EXPECT_EQ(KernelArg::fromFloat(DType::F16, 5.960464477539063e-08, what).raw(), 0x0001u);
  EXPECT_EQ(KernelArg::fromFloat(DType::F16, 1.0 + 1.0 / 2048, what).raw(), 0x3c00u); // tie, even
  EXPECT_EQ(KernelArg::fromFloat(DType::F16, 1.0 + 3.0 / 2048, what).raw(), 0x3c02u); // tie, even
  EXPECT_THROW(KernelArg::fromFloat(DType::F16, 70000.0, what), Error);
  EXPECT_EQ(KernelArg::fromFloat(DType::BF16, 1.0, what).raw(), 0x3f80u);
  EXPECT_EQ(KernelArg::fromFloat(DType::BF16, -3.0, what).raw(), 0xc040u);
  float f = 0.1f;
  uint32_t fb;
  std::memcpy(&fb, &f, 4);
  EXPECT_EQ(KernelArg::fromFloat(DType::F32, 0.1, what).raw(), fb);
  EXPECT_EQ(KernelArg::fromInteger(DType::F32, 3, what).dtype(), DType::F32);
  EXPECT_THROW(KernelArg::fromFloat(DType::F32, 1e300, what), Error);
  EXPECT_THROW(KernelArg::fromFloat(DType::F8E4M3, 1.0, what), Error);
  EXPECT_EQ(KernelArg::bits(DType::F8E4M3, 0x1238).raw(), 0x38u);
}

TEST(KernelTest, FromImagesNeedsNoDriver) {
  json meta = {{"name", "jit_kernel"},
               {"symbol", "jit_kernel_abc"},
               {"params", {{{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}}}},
               {"threads_per_block", 128}};
  auto k = Kernel::fromImages(meta, {{"sm_90a", std::string("\x7f"
                                                            "ELFxyz")},
                                     {"sm_100a", ".version 8.8"}});
  EXPECT_EQ(k->name(), "jit_kernel");
  ASSERT_EQ(k->entry().images.size(), 2u);
  EXPECT_EQ(k->entry().images[1].arch, "sm_90a");
  EXPECT_EQ(k->entry().images[1].kind, "cubin");
  EXPECT_EQ(k->entry().images[0].kind, "ptx");
  EXPECT_EQ(k->imageBytes(0), ".version 8.8");
  // A zero grid launches nothing and never touches the driver.
  EXPECT_NO_THROW(k->launch(nullptr, {0, 1, 1}, {KernelArg::i32(1)}));
  // Arguments are checked before anything else.
  EXPECT_NE(
      errorOf([&] { k->launch(nullptr, {1, 1, 1}, {KernelArg::f32(1)}); }).find("expects i32"),
      std::string::npos);
  EXPECT_THROW(Kernel::fromImages(meta, {}), Error);
  EXPECT_THROW(Kernel::fromImages(meta, {{"bogus", "x"}}), Error);
}

TEST(KernelTest, GridLimitsAreCudasAndCheckedBeforeTheDriver) {
  json meta = {{"name", "k"},
               {"symbol", "k"},
               {"params", {{{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}}}},
               {"threads_per_block", 32},
               {"cluster", {2, 1, 1}}};
  auto k = Kernel::fromImages(meta, {{"sm_90a", std::string("\x7f"
                                                            "ELFxyz")}});
  EXPECT_EQ(kMaxGridDims[0], 2147483647u);
  EXPECT_EQ(kMaxGridDims[1], 65535u);
  EXPECT_EQ(kMaxGridDims[2], 65535u);
  // At the limit (with an empty dimension: nothing launches, no driver needed).
  EXPECT_NO_THROW(k->launch(nullptr, {2147483646u, 0, 1}, {KernelArg::i32(1)}));
  EXPECT_NO_THROW(k->launch(nullptr, {0, 65535, 65535}, {KernelArg::i32(1)}));
  // One past it, whatever the other dimensions: the same message as kiln.host's.
  EXPECT_EQ(errorOf([&] { k->launch(nullptr, {2147483648u, 0, 1}, {KernelArg::i32(1)}); }),
            "kiln: kernel 'k': grid dimension 0 = 2147483648 is out of range [0, 2147483647]");
  EXPECT_EQ(errorOf([&] { k->launch(nullptr, {0, 65536, 1}, {KernelArg::i32(1)}); }),
            "kiln: kernel 'k': grid dimension 1 = 65536 is out of range [0, 65535]");
  EXPECT_EQ(errorOf([&] { k->launch(nullptr, {0, 1, 65536}, {KernelArg::i32(1)}); }),
            "kiln: kernel 'k': grid dimension 2 = 65536 is out of range [0, 65535]");
  // The cluster rule, for grids that launch something.
  EXPECT_EQ(errorOf([&] { k->launch(nullptr, {3, 1, 1}, {KernelArg::i32(1)}); }),
            "kiln: kernel 'k': grid (3, 1, 1) is not a multiple of the cluster shape (2, 1, 1)");
}

TEST(KernelTest, WithoutDriverLaunchFailsCleanly) {
  if (driverAvailable())
    GTEST_SKIP() << "a CUDA driver is present on this machine";
  json meta = {
      {"name", "k"}, {"symbol", "k"}, {"params", json::array()}, {"threads_per_block", 32}};
  auto k = Kernel::fromImages(meta, {{"sm_90a", "\x7f"
                                                "ELF"}});
  std::string msg = errorOf([&] { k->launch(nullptr, {1, 1, 1}, {}); });
  EXPECT_NE(msg.find("kiln: cannot load the CUDA driver (libcuda.so.1)"), std::string::npos) << msg;
  EXPECT_THROW(deviceArch(), Error);
}
