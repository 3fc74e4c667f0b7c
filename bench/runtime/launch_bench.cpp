//===- launch_bench.cpp - Host time per launch from C++; bundle open + load ===//
//
//   launch_bench BUNDLE [N]
//
// Opens BUNDLE (timed), loads every kernel in the current context (timed),
// then launches situ_and_mul (bf16, one row of 64 columns) N times back to
// back through kiln::Kernel::launch and through the C API and prints the host
// time per launch. Device memory comes from the driver (dlopen'ed here too).
// Output: one "key value" line per measurement.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/Kernel.h"
#include "kiln/kiln.h"

#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: launch_bench BUNDLE [N]\n");
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  try {
    double t0 = nowUs();
    auto bundle = kiln::Bundle::open(argv[1]);
    double t1 = nowUs();
    std::vector<std::shared_ptr<kiln::Kernel>> kernels;
    for (const kiln::KernelEntry &e : bundle->kernels())
      kernels.push_back(bundle->kernel(e));
    kernels.front()->load(); // creates the context (not counted: the CUDA runtime's job)
    double t2 = nowUs();
    for (auto &k : kernels)
      k->load();
    double t3 = nowUs();
    std::printf("bundle_open_us %.1f\nbundle_load_all_us %.1f\nbundle_kernels %zu\n", t1 - t0,
                t3 - t2, kernels.size());

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    auto memAlloc =
        reinterpret_cast<CUresult (*)(CUdeviceptr *, size_t)>(dlsym(cuda, "cuMemAlloc_v2"));
    auto sync = reinterpret_cast<CUresult (*)()>(dlsym(cuda, "cuCtxSynchronize"));
    CUdeviceptr x = 0, out = 0;
    if (memAlloc(&x, 1 << 20) || memAlloc(&out, 1 << 20)) {
      std::fprintf(stderr, "cuMemAlloc failed\n");
      return 1;
    }
    const kiln::KernelEntry &e = bundle->select(
        "situ_and_mul",
        {kiln::ArgSpec::pointer(x, kiln::DType::BF16),
         kiln::ArgSpec::pointer(out, kiln::DType::BF16), kiln::ArgSpec::integer(64),
         kiln::ArgSpec::integer(128), kiln::ArgSpec::integer(64), kiln::ArgSpec::floating(),
         kiln::ArgSpec::floating(), kiln::ArgSpec::floating(), kiln::ArgSpec::floating()},
        {{"HAS_LINEAR_BETA", true}});
    auto k = bundle->kernel(e);
    const std::vector<kiln::KernelArg> args = {kiln::KernelArg::pointer(uint64_t(x)),
                                               kiln::KernelArg::pointer(uint64_t(out)),
                                               kiln::KernelArg::i32(64),
                                               kiln::KernelArg::i32(128),
                                               kiln::KernelArg::i32(64),
                                               kiln::KernelArg::f32(4.0f),
                                               kiln::KernelArg::f32(0.25f),
                                               kiln::KernelArg::f32(25.0f),
                                               kiln::KernelArg::f32(0.04f)};
    for (int i = 0; i < 500; ++i)
      k->launch(nullptr, {1, 1, 1}, args);
    sync();
    double a = nowUs();
    for (int i = 0; i < n; ++i)
      k->launch(nullptr, {1, 1, 1}, args);
    double b = nowUs();
    sync();
    std::printf("cpp_launch_us %.3f\n", (b - a) / n);

    // The driver's own floor: the same cubin loaded and launched directly.
    auto loadData =
        reinterpret_cast<CUresult (*)(CUmodule *, const void *)>(dlsym(cuda, "cuModuleLoadData"));
    auto getFn = reinterpret_cast<CUresult (*)(CUfunction *, CUmodule, const char *)>(
        dlsym(cuda, "cuModuleGetFunction"));
    auto launchK =
        reinterpret_cast<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, CUstream, void **, void **)>(
            dlsym(cuda, "cuLaunchKernel"));
    auto launchEx =
        reinterpret_cast<CUresult (*)(const CUlaunchConfig *, CUfunction, void **, void **)>(
            dlsym(cuda, "cuLaunchKernelEx"));
    size_t img = kiln::selectImage(e, kiln::deviceArch(), "");
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    if (loadData(&mod, bundle->imageBytes(e.images[img]).data()) ||
        getFn(&fn, mod, e.symbol.c_str())) {
      std::fprintf(stderr, "raw module load failed\n");
      return 1;
    }
    void *params[9];
    for (int i = 0; i < 9; ++i)
      params[i] = const_cast<void *>(args[i].data());
    a = nowUs();
    for (int i = 0; i < n; ++i)
      launchK(fn, 1, 1, 1, e.threadsPerBlock, 1, 1, 0, nullptr, params, nullptr);
    b = nowUs();
    sync();
    std::printf("driver_cuLaunchKernel_us %.3f\n", (b - a) / n);
    CUlaunchConfig cfg;
    std::memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = e.threadsPerBlock;
    cfg.blockDimY = cfg.blockDimZ = 1;
    a = nowUs();
    for (int i = 0; i < n; ++i)
      launchEx(&cfg, fn, params, nullptr);
    b = nowUs();
    sync();
    std::printf("driver_cuLaunchKernelEx_us %.3f\n", (b - a) / n);

    kiln_bundle *cb = nullptr;
    kiln_kernel *ck = nullptr;
    std::string consts = "{\"BLOCK\": " + std::to_string(e.constexprs["BLOCK"].get<int>()) +
                         ", \"HAS_LINEAR_BETA\": true}";
    if (kiln_bundle_open(argv[1], &cb) ||
        kiln_bundle_find_kernel(cb, "situ_and_mul", consts.c_str(), &ck)) {
      std::fprintf(stderr, "%s\n", kiln_last_error());
      return 1;
    }
    kiln_arg cargs[9] = {kiln_arg_pointer(reinterpret_cast<void *>(x)),
                         kiln_arg_pointer(reinterpret_cast<void *>(out)),
                         kiln_arg_i32(64),
                         kiln_arg_i32(128),
                         kiln_arg_i32(64),
                         kiln_arg_f32(4.0f),
                         kiln_arg_f32(0.25f),
                         kiln_arg_f32(25.0f),
                         kiln_arg_f32(0.04f)};
    const unsigned grid[3] = {1, 1, 1};
    for (int i = 0; i < 500; ++i)
      kiln_kernel_launch(ck, nullptr, grid, cargs, 9);
    sync();
    a = nowUs();
    for (int i = 0; i < n; ++i)
      if (kiln_kernel_launch(ck, nullptr, grid, cargs, 9) != KILN_OK) {
        std::fprintf(stderr, "%s\n", kiln_last_error());
        return 1;
      }
    b = nowUs();
    sync();
    std::printf("c_api_launch_us %.3f\n", (b - a) / n);
    kiln_kernel_release(ck);
    kiln_bundle_close(cb);
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "%s\n", ex.what());
    return 1;
  }
  return 0;
}
