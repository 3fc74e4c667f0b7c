//===- BundleReaderFuzzer.cpp - libFuzzer over the bundle reader ----------===//
//
// Any input must either verify or be rejected with kiln::Error whose message is
// valid UTF-8 (the Python binding decodes it): any other exception, a crash or
// a sanitizer report is a bug. A bundle that verifies is exercised further:
// describe, image selection, specialization selection and the image bytes of
// every entry. BundleMutator.cpp keeps the checksums right after mutating, so
// the manifest and metadata parsers are reached.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/Kernel.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {
/// Strict UTF-8, as Python's decoder takes it (no overlong forms, surrogates or code points
/// past U+10FFFF).
bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;                      // continuation bytes
    unsigned lo = 0x80, hi = 0xbf; // the range of the first continuation byte
    if (c >= 0xc2 && c <= 0xdf)
      n = 1;
    else if (c >= 0xe0 && c <= 0xef)
      n = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
      return false;
    if (n >= s.size() - i)
      return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf))
        return false;
    }
    i += n + 1;
  }
  return true;
}

/// A rejection: the message must be valid UTF-8.
void rejected(const kiln::Error &e) {
  if (!validUtf8(e.what())) {
    std::fprintf(stderr, "error message is not valid UTF-8: %s\n", e.what());
    std::abort();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::shared_ptr<kiln::Bundle> b;
  try {
    b = kiln::Bundle::fromBytes(std::string(reinterpret_cast<const char *>(data), size), "fuzz");
  } catch (const kiln::Error &e) {
    rejected(e);
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
      } catch (const kiln::Error &e) {
        rejected(e);
      }
    }
    std::vector<kiln::ArgSpec> args;
    for (const kiln::ParamInfo &p : e.params)
      args.push_back(p.kind == kiln::ParamKind::Pointer ? kiln::ArgSpec::pointer(0x1000, p.dtype)
                                                        : kiln::ArgSpec::integer(16));
    try {
      (void)b->select(e.name, args, e.constexprs);
    } catch (const kiln::Error &e) {
      rejected(e);
    }
  }
  return 0;
}
