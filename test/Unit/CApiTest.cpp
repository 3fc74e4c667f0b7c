//===- CApiTest.cpp - The C API (kiln.h) on the CPU -----------------------===//

#include "kiln/kiln.h"

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/CApi.h"

#include <gtest/gtest.h>

#include <string>

namespace {
std::string testBundle() {
  kiln::BundleWriter w("capi-test");
  nlohmann::json meta = {{"name", "scale"},
                         {"symbol", "scale"},
                         {"params",
                          {{{"name", "x"}, {"kind", "ptr"}, {"dtype", "f32"}, {"divisibility", 16}},
                           {{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}}}},
                         {"constexprs", {{"BLOCK", 256}}},
                         {"threads_per_block", 128}};
  w.addKernel(meta, {{"sm_90a", "cubin",
                      std::string("\x7f"
                                  "ELF",
                                  4) +
                          std::string(60, 'x')}});
  meta["constexprs"]["BLOCK"] = 512;
  w.addKernel(meta, {{"sm_90a", "cubin",
                      std::string("\x7f"
                                  "ELF",
                                  4) +
                          std::string(61, 'y')}});
  return w.serialize();
}
} // namespace

TEST(CApiTest, OpenFindAndErrors) {
  std::string bytes = testBundle();
  kiln_bundle *b = nullptr;
  ASSERT_EQ(kiln_bundle_open_memory(bytes.data(), bytes.size(), &b), KILN_OK);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(kiln_bundle_num_kernels(b), 2u);
  EXPECT_STREQ(kiln_bundle_kernel_name(b, 1), "scale");
  EXPECT_EQ(kiln_bundle_kernel_name(b, 2), nullptr);

  kiln_kernel *k = nullptr;
  EXPECT_EQ(kiln_bundle_find_kernel(b, "scale", nullptr, &k), KILN_ERROR);
  EXPECT_NE(std::string(kiln_last_error()).find("is ambiguous"), std::string::npos);
  ASSERT_EQ(kiln_bundle_find_kernel(b, "scale", "{\"BLOCK\": 512}", &k), KILN_OK);
  EXPECT_STREQ(kiln_last_error(), "");
  EXPECT_EQ(kiln_kernel_num_params(k), 2u);
  kiln_bundle_close(b); // the kernel keeps the bundle alive

  // Argument errors are reported before the driver is touched.
  kiln_arg args[2] = {kiln_arg_pointer(reinterpret_cast<void *>(0x1008)), kiln_arg_i32(7)};
  unsigned grid[3] = {1, 1, 1};
  EXPECT_EQ(kiln_kernel_launch(k, nullptr, grid, args, 2), KILN_ERROR);
  EXPECT_STREQ(kiln_last_error(), "kiln: kernel 'scale': argument 'x' (param 0): pointer 0x1008 "
                                  "is not 16-byte aligned (divisibility 16)");
  args[1] = kiln_arg_f32(1.0f);
  args[0] = kiln_arg_pointer(reinterpret_cast<void *>(0x1000));
  EXPECT_EQ(kiln_kernel_launch(k, nullptr, grid, args, 2), KILN_ERROR);
  EXPECT_STREQ(kiln_last_error(),
               "kiln: kernel 'scale': argument 'n' (param 1) expects i32, got f32");
  kiln_kernel_release(k);

  EXPECT_EQ(kiln_bundle_find_kernel(nullptr, "scale", nullptr, &k), KILN_INVALID_ARGUMENT);
  kiln_bundle *bad = nullptr;
  EXPECT_EQ(kiln_bundle_open("/nonexistent/x.kbundle", &bad), KILN_ERROR);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(kiln_last_error()).find("cannot open bundle '/nonexistent/x.kbundle'"),
            std::string::npos);
  EXPECT_EQ(kiln_bundle_open_memory("KILNBNDX", 8, &bad), KILN_ERROR);
  EXPECT_NE(std::string(kiln_last_error()).find("bad magic"), std::string::npos);
}

// A C++ kernel handed to C code (kiln._runtime gives the torch op library its kernels so):
// the handle shares the kernel, and converted arguments keep their bits.
TEST(CApiTest, CHandlesOfCppObjects) {
  std::string bytes = testBundle();
  std::shared_ptr<kiln::Bundle> bundle = kiln::Bundle::fromBytes(bytes);
  std::shared_ptr<kiln::Kernel> kernel = bundle->kernel("scale", {{"BLOCK", 256}});
  kiln_kernel *k = kiln::toCHandle(kernel);
  EXPECT_EQ(kernel.use_count(), 2);
  EXPECT_EQ(kiln_kernel_num_params(k), 2u);
  kiln_arg args[2] = {*kiln::toCArg(kiln::KernelArg::pointer(uint64_t{0x1008})),
                      *kiln::toCArg(kiln::KernelArg::i32(-3))};
  EXPECT_EQ(args[0].is_pointer, 1);
  EXPECT_EQ(args[0].bits, 0x1008u);
  EXPECT_EQ(args[1].is_pointer, 0);
  EXPECT_EQ(args[1].dtype, KILN_I32);
  EXPECT_EQ(static_cast<int32_t>(args[1].bits), -3);
  // The same checks as the C++ launch, before the driver: 0x1008 is not 16-byte aligned.
  unsigned grid[3] = {1, 1, 1};
  EXPECT_EQ(kiln_kernel_launch(k, nullptr, grid, args, 2), KILN_ERROR);
  EXPECT_NE(std::string(kiln_last_error()).find("is not 16-byte aligned"), std::string::npos);
  kiln::KernelArg f = kiln::KernelArg::f32(1.5f);
  EXPECT_EQ(kiln::toCArg(f)->dtype, KILN_F32);
  EXPECT_EQ(kiln::toCArg(f)->bits, 0x3fc00000u);
  CUtensorMap map{};
  EXPECT_FALSE(kiln::toCArg(kiln::KernelArg::tensorMap(&map, kiln::DType::BF16, {64, 64}, 128)));
  kiln_kernel_release(k);
  EXPECT_EQ(kernel.use_count(), 1);
}
