//===- BundleReaderFuzzer.cpp - libFuzzer over the bundle reader ----------===//
//
// Any input must either verify or be rejected with kiln::Error: any other
// exception, a crash or a sanitizer report is a bug. A bundle that verifies is
// exercised further: describe, image selection, specialization selection and
// the image bytes of every entry.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/Kernel.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::shared_ptr<kiln::Bundle> b;
  try {
    b = kiln::Bundle::fromBytes(std::string(reinterpret_cast<const char *>(data), size), "fuzz");
  } catch (const kiln::Error &) {
    return 0;
  }
  (void)b->describe();
  for (const kiln::KernelEntry &e : b->kernels()) {
    for (const kiln::ImageInfo &im : e.images) {
      std::string_view bytes = b->imageBytes(im);
      volatile char sink = bytes.empty() ? 0 : bytes[bytes.size() - 1];
      (void)sink;
    }
    for (const char *arch : {"sm_90a", "sm_100a", "sm_103a", "sm_120"}) {
      try {
        (void)kiln::selectImage(e, arch, "fuzz");
      } catch (const kiln::Error &) {
      }
    }
    std::vector<kiln::ArgSpec> args;
    for (const kiln::ParamInfo &p : e.params)
      args.push_back(p.kind == kiln::ParamKind::Pointer ? kiln::ArgSpec::pointer(0x1000, p.dtype)
                                                        : kiln::ArgSpec::integer(16));
    try {
      (void)b->select(e.name, args, e.constexprs);
    } catch (const kiln::Error &) {
    }
  }
  return 0;
}
