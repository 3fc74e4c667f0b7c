//===- BundleTest.cpp - Bundle format: round trip, determinism, corruption ===//

#include "kiln/Runtime/Bundle.h"
#include "kiln/Runtime/Kernel.h"

#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <random>

using nlohmann::json;
using namespace kiln;

namespace {

/// A fake cubin: the ELF magic followed by deterministic pseudo-random bytes.
std::string fakeImage(unsigned seed, size_t size) {
  std::mt19937 rng(seed);
  std::string s = "\x7f"
                  "ELF";
  while (s.size() < size)
    s += static_cast<char>(rng() & 0xff);
  s.resize(size);
  return s;
}

json situMeta(int block = 1024) {
  return {{"name", "situ_and_mul"},
          {"symbol", "situ_and_mul_" + std::to_string(block)},
          {"params",
           {{{"name", "x"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}},
            {{"name", "out"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}},
            {{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}, {"divisibility", 1}}}},
          {"constexprs", {{"BLOCK", block}, {"HAS_LINEAR_BETA", true}}},
          {"threads_per_block", 256},
          {"shared_bytes", 0},
          {"pdl", false},
          {"cluster", {1, 1, 1}},
          {"features", {"vector16"}},
          {"source_hash", "0a1b2c"},
          {"specialization", "BLOCK=" + std::to_string(block)}};
}

json minimalMeta(const std::string &name) {
  return {{"name", name},
          {"symbol", name + "_kernel"},
          {"params", {{{"name", "p"}, {"kind", "ptr"}, {"dtype", "f32"}}}},
          {"threads_per_block", 128}};
}

BundleWriter threeKernelWriter() {
  BundleWriter w("kiln-test 0.1");
  w.addKernel(situMeta(1024), {{"sm_90a", "cubin", fakeImage(1, 3000)},
                               {"sm_100a", "cubin", fakeImage(2, 2500)},
                               {"sm_103a", "cubin", fakeImage(3, 2600)}});
  w.addKernel(situMeta(2048), {{"sm_90a", "cubin", fakeImage(4, 1000)},
                               {"sm_90a", "ptx", ".version 8.8\n.target sm_90a\n"}});
  json mla = minimalMeta("mla_rope");
  mla["pdl"] = true;
  mla["cluster"] = {2, 1, 1};
  mla["shared_bytes"] = 100000;
  w.addKernel(mla, {{"sm_100a", "cubin", fakeImage(5, 700)}});
  return w;
}

/// A small bundle (one kernel, two tiny images) for the exhaustive tests.
std::string smallBundle() {
  BundleWriter w("t");
  w.addKernel(minimalMeta("k"),
              {{"sm_90a", "cubin", fakeImage(7, 40)}, {"sm_100a", "cubin", fakeImage(8, 24)}});
  return w.serialize();
}

std::string errorOf(const std::string &bytes, const std::string &name = "x.kbundle") {
  try {
    Bundle::fromBytes(bytes, name);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

uint64_t xxh(std::string_view s) { return XXH64(s.data(), s.size(), 0); }

void putU64(std::string &s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void putU32(std::string &s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void resealHeader(std::string &s) { putU64(s, 56, xxh(std::string_view(s.data(), 56))); }

/// Builds a bundle file by hand around `manifest` (checksums correct), with
/// `images` placed at the given offsets, so that schema errors can be tested.
std::string rawBundle(const std::string &manifest,
                      const std::vector<std::pair<uint64_t, std::string>> &images = {},
                      uint64_t fileSize = 0) {
  uint64_t end = 64 + manifest.size();
  for (const auto &[off, bytes] : images)
    end = std::max<uint64_t>(end, off + bytes.size());
  if (!fileSize)
    fileSize = end;
  std::string s(fileSize, '\0');
  std::memcpy(&s[0], "KILNBNDL", 8);
  putU32(s, 8, 1);
  putU32(s, 12, 64);
  putU64(s, 16, fileSize);
  putU64(s, 24, 64);
  putU64(s, 32, manifest.size());
  putU64(s, 40, xxh(manifest));
  std::memcpy(&s[64], manifest.data(), manifest.size());
  for (const auto &[off, bytes] : images)
    std::memcpy(&s[off], bytes.data(), bytes.size());
  resealHeader(s);
  return s;
}

json manifestWith(json kernel) {
  return {{"format", "kiln-bundle"},
          {"version", 1},
          {"compiler_version", "t"},
          {"kernels", json::array({kernel})}};
}

json imageRef(const std::string &arch, uint64_t offset, const std::string &bytes) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(xxh(bytes)));
  return {{"arch", arch},
          {"kind", "cubin"},
          {"offset", offset},
          {"size", bytes.size()},
          {"xxh64", hex}};
}

} // namespace

TEST(BundleTest, RoundTripKeepsMetadataAndBytes) {
  BundleWriter w = threeKernelWriter();
  std::string bytes = w.serialize();
  auto b = Bundle::fromBytes(bytes, "rt.kbundle");
  EXPECT_EQ(b->compilerVersion(), "kiln-test 0.1");
  ASSERT_EQ(b->kernels().size(), 3u);

  const KernelEntry &k0 = b->kernels()[0];
  EXPECT_EQ(k0.name, "situ_and_mul");
  EXPECT_EQ(k0.symbol, "situ_and_mul_1024");
  ASSERT_EQ(k0.params.size(), 3u);
  EXPECT_EQ(k0.params[0].name, "x");
  EXPECT_EQ(k0.params[0].kind, ParamKind::Pointer);
  EXPECT_EQ(k0.params[0].dtype, DType::BF16);
  EXPECT_EQ(k0.params[0].divisibility, 16u);
  EXPECT_EQ(k0.params[2].kind, ParamKind::Scalar);
  EXPECT_EQ(k0.params[2].dtype, DType::I32);
  EXPECT_EQ(k0.constexprs, (json{{"BLOCK", 1024}, {"HAS_LINEAR_BETA", true}}));
  EXPECT_EQ(k0.threadsPerBlock, 256u);
  EXPECT_EQ(k0.features, std::vector<std::string>{"vector16"});
  EXPECT_EQ(k0.sourceHash, "0a1b2c");
  EXPECT_EQ(k0.specialization, "BLOCK=1024");
  ASSERT_EQ(k0.images.size(), 3u);
  EXPECT_EQ(k0.archList(), (std::vector<std::string>{"sm_90a", "sm_100a", "sm_103a"}));
  EXPECT_EQ(b->imageBytes(k0.images[0]), fakeImage(1, 3000));
  EXPECT_EQ(b->imageBytes(k0.images[1]), fakeImage(2, 2500));
  EXPECT_EQ(b->imageBytes(k0.images[2]), fakeImage(3, 2600));

  const KernelEntry &k1 = b->kernels()[1];
  EXPECT_EQ(k1.images[1].kind, "ptx");
  EXPECT_EQ(b->imageBytes(k1.images[1]), ".version 8.8\n.target sm_90a\n");
  EXPECT_EQ(k1.archList(), (std::vector<std::string>{"sm_90a", "sm_90a (ptx)"}));

  const KernelEntry &k2 = b->kernels()[2];
  EXPECT_TRUE(k2.pdl);
  EXPECT_EQ(k2.cluster, (std::array<unsigned, 3>{2, 1, 1}));
  EXPECT_EQ(k2.sharedBytes, 100000u);
  EXPECT_EQ(k2.params[0].divisibility, 1u); // default filled in
  EXPECT_EQ(b->imageBytes(k2.images[0]), fakeImage(5, 700));

  for (const KernelEntry &k : b->kernels())
    for (const ImageInfo &im : k.images)
      EXPECT_EQ(im.offset % kBundleImageAlignment, 0u);
}

TEST(BundleTest, WriteAndOpenFile) {
  BundleWriter w = threeKernelWriter();
  std::string path = testing::TempDir() + "kiln_bundle_test.kbundle";
  w.write(path);
  auto b = Bundle::open(path);
  EXPECT_EQ(b->name(), path);
  EXPECT_EQ(b->kernels().size(), 3u);
  EXPECT_EQ(b->fileSize(), w.serialize().size());
  std::remove(path.c_str());
  EXPECT_THROW(Bundle::open(path), Error);
}

TEST(BundleTest, SerializeIsDeterministic) {
  std::string a = threeKernelWriter().serialize();
  std::string b = threeKernelWriter().serialize();
  EXPECT_EQ(a, b);
  BundleWriter w = threeKernelWriter();
  EXPECT_EQ(w.serialize(), w.serialize());
  // Key order of the input metadata does not matter.
  json m1 = minimalMeta("k");
  json m2 =
      json::parse(R"({"threads_per_block":128,"params":[{"dtype":"f32","kind":"ptr","name":"p"}],
                            "symbol":"k_kernel","name":"k"})");
  BundleWriter w1, w2;
  w1.addKernel(m1, {{"sm_90a", "cubin", fakeImage(1, 10)}});
  w2.addKernel(m2, {{"sm_90a", "cubin", fakeImage(1, 10)}});
  EXPECT_EQ(w1.serialize(), w2.serialize());
}

TEST(BundleTest, LargeManifestGrowsImageArea) {
  // Enough kernels that the manifest spans several alignment units.
  BundleWriter w;
  for (int i = 0; i < 60; ++i) {
    json m = situMeta(i + 1);
    w.addKernel(m, {{"sm_90a", "cubin", fakeImage(i, 100 + i)}});
  }
  auto b = Bundle::fromBytes(w.serialize());
  ASSERT_EQ(b->kernels().size(), 60u);
  for (int i = 0; i < 60; ++i)
    EXPECT_EQ(b->imageBytes(b->kernels()[i].images[0]), fakeImage(i, 100 + i));
}

TEST(BundleTest, EmptyBundle) {
  auto b = Bundle::fromBytes(BundleWriter().serialize());
  EXPECT_TRUE(b->kernels().empty());
  EXPECT_EQ(b->find("x"), nullptr);
}

TEST(BundleTest, EveryTruncationIsAnError) {
  const std::string bytes = smallBundle();
  ASSERT_GT(bytes.size(), 300u);
  for (size_t len = 0; len < bytes.size(); ++len)
    EXPECT_THROW(Bundle::fromBytes(bytes.substr(0, len)), Error) << "prefix length " << len;
  EXPECT_EQ(errorOf(bytes.substr(0, 100)),
            "kiln: bundle 'x.kbundle': truncated: file is 100 bytes, header says " +
                std::to_string(bytes.size()));
  EXPECT_NE(errorOf(bytes.substr(0, 10)).find("truncated: file is 10 bytes"), std::string::npos);
  EXPECT_NE(errorOf(bytes + std::string(5, '\0')).find("trailing data"), std::string::npos);
}

TEST(BundleTest, EveryBitFlipIsAnError) {
  const std::string bytes = smallBundle();
  for (size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char mask : {0x01, 0x80}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      EXPECT_THROW(Bundle::fromBytes(bad), Error) << "byte " << i << " mask " << int(mask);
    }
}

TEST(BundleTest, GarbageIsAnError) {
  std::mt19937 rng(42);
  for (size_t size : {0, 1, 7, 8, 63, 64, 65, 200, 4096}) {
    std::string s(size, '\0');
    for (char &c : s)
      c = static_cast<char>(rng());
    EXPECT_THROW(Bundle::fromBytes(s), Error);
    // Garbage after a valid magic and version.
    if (size >= 64) {
      std::memcpy(&s[0], "KILNBNDL", 8);
      putU32(s, 8, 1);
      putU32(s, 12, 64);
      EXPECT_THROW(Bundle::fromBytes(s), Error);
      resealHeader(s);
      EXPECT_THROW(Bundle::fromBytes(s), Error);
    }
  }
}

// Found by fuzz/: the JSON parser's message quotes the bytes it last read, and the Python
// binding decodes a message as UTF-8 (a raw 0xff became UnicodeDecodeError, not KilnError).
TEST(BundleTest, InvalidJsonErrorIsAscii) {
  const std::string e = errorOf(rawBundle("{\"format\": -\xff\xfe}"));
  EXPECT_NE(e.find("manifest is not valid JSON"), std::string::npos) << e;
  EXPECT_NE(e.find("'-\\xff'"), std::string::npos) << e;
  for (unsigned char c : e)
    ASSERT_LT(c, 0x80) << e;
}

TEST(BundleTest, WrongMagicAndVersionAreNamed) {
  std::string bytes = smallBundle();
  std::string badMagic = bytes;
  std::memcpy(&badMagic[0], "ELF\0\0\0\0\0", 8);
  EXPECT_NE(errorOf(badMagic).find("not a kiln bundle: bad magic"), std::string::npos)
      << errorOf(badMagic);

  std::string v7 = bytes;
  putU32(v7, 8, 7);
  EXPECT_EQ(
      errorOf(v7),
      "kiln: bundle 'x.kbundle': unsupported format version 7 (this runtime reads version 1)");
  resealHeader(v7);
  EXPECT_EQ(
      errorOf(v7),
      "kiln: bundle 'x.kbundle': unsupported format version 7 (this runtime reads version 1)");

  std::string hdr = bytes;
  hdr[20] ^= 1; // file size field
  EXPECT_NE(errorOf(hdr).find("header checksum mismatch (expected 0x"), std::string::npos);
}

TEST(BundleTest, ChecksumErrorsNameTheRegion) {
  BundleWriter w;
  w.addKernel(minimalMeta("k"), {{"sm_90a", "cubin", fakeImage(1, 100)}});
  w.addKernel(situMeta(),
              {{"sm_90a", "cubin", fakeImage(2, 100)}, {"sm_100a", "cubin", fakeImage(3, 100)}});
  std::string bytes = w.serialize();
  auto b = Bundle::fromBytes(bytes);
  const ImageInfo &im = b->kernels()[1].images[1];
  std::string bad = bytes;
  bad[im.offset + 50] ^= 0x10;
  std::string msg = errorOf(bad);
  EXPECT_NE(msg.find("kiln: bundle 'x.kbundle': image 2 (situ_and_mul, sm_100a) checksum mismatch "
                     "(expected 0x" +
                     hex64(im.xxh64) + ", got 0x"),
            std::string::npos)
      << msg;

  std::string badManifest = bytes;
  badManifest[70] ^= 0x01;
  EXPECT_NE(errorOf(badManifest).find("manifest checksum mismatch"), std::string::npos);

  // Padding between the manifest and the first image.
  std::string badPad = bytes;
  size_t manEnd = 64 + static_cast<size_t>(b->manifest().dump().size());
  ASSERT_LT(manEnd, b->kernels()[0].images[0].offset);
  badPad[manEnd] = 1;
  EXPECT_NE(errorOf(badPad).find("nonzero padding byte at offset " + std::to_string(manEnd)),
            std::string::npos)
      << errorOf(badPad);
}

TEST(BundleTest, SchemaErrorsNameTheField) {
  std::string img = fakeImage(1, 32);
  auto withKernel = [&](json k) { return rawBundle(manifestWith(k).dump(), {{512, img}}); };
  json good = minimalMeta("k");
  good["images"] = {imageRef("sm_90a", 512, img)};
  EXPECT_EQ(errorOf(withKernel(good)), "(no error)");

  json noSymbol = good;
  noSymbol.erase("symbol");
  EXPECT_EQ(errorOf(withKernel(noSymbol)),
            "kiln: bundle 'x.kbundle': kernel 0 ('k'): field 'symbol' missing");

  json badDtype = good;
  badDtype["params"][0]["dtype"] = "f12";
  EXPECT_NE(errorOf(withKernel(badDtype)).find("param 0: field 'dtype': unknown dtype \"f12\""),
            std::string::npos);

  json badType = good;
  badType["threads_per_block"] = "128";
  EXPECT_NE(errorOf(withKernel(badType))
                .find("field 'threads_per_block': expected a non-negative integer, got string"),
            std::string::npos);

  json bigCluster = good;
  bigCluster["cluster"] = {4, 4, 2};
  EXPECT_NE(errorOf(withKernel(bigCluster))
                .find("field 'cluster': expected at most 16 blocks per cluster"),
            std::string::npos);
  json cluster16 = good;
  cluster16["cluster"] = {4, 4, 1}; // the non-portable size is valid
  EXPECT_EQ(errorOf(withKernel(cluster16)), "(no error)");

  json badArch = good;
  badArch["images"][0]["arch"] = "gfx90a";
  EXPECT_NE(errorOf(withKernel(badArch)).find("invalid arch \"gfx90a\""), std::string::npos);

  json outside = good;
  outside["images"][0]["offset"] = 1024;
  EXPECT_NE(errorOf(withKernel(outside)).find("is outside the file"), std::string::npos);

  json hugeOffset = good;
  hugeOffset["images"][0]["offset"] = UINT64_MAX - 255;
  EXPECT_NE(errorOf(withKernel(hugeOffset)).find("is outside the file"), std::string::npos);

  json unaligned = good;
  unaligned["images"][0]["offset"] = 520;
  EXPECT_NE(errorOf(withKernel(unaligned)).find("is not 256-byte aligned"), std::string::npos);

  json intoManifest = good;
  intoManifest["images"][0]["offset"] = 0;
  EXPECT_NE(errorOf(withKernel(intoManifest)).find("overlaps"), std::string::npos);

  json twice = good;
  twice["images"].push_back(imageRef("sm_100a", 512, img)); // same bytes, same place
  EXPECT_NE(errorOf(withKernel(twice)).find("overlaps"), std::string::npos)
      << errorOf(withKernel(twice));

  json m = manifestWith(good);
  m["version"] = 2;
  EXPECT_NE(errorOf(rawBundle(m.dump(), {{512, img}})).find("field 'version' must be 1"),
            std::string::npos);
  m = manifestWith(good);
  m.erase("kernels");
  EXPECT_NE(errorOf(rawBundle(m.dump(), {{512, img}})).find("field 'kernels' missing"),
            std::string::npos);
  EXPECT_NE(errorOf(rawBundle("{not json", {{512, img}})).find("manifest is not valid JSON"),
            std::string::npos);
  EXPECT_NE(errorOf(rawBundle("[1,2]", {{512, img}})).find("expected a JSON object"),
            std::string::npos);
}

TEST(BundleTest, WriterRejectsBadInput) {
  BundleWriter w;
  json noName = minimalMeta("k");
  noName.erase("name");
  EXPECT_THROW(w.addKernel(noName, {{"sm_90a", "cubin", "x"}}), Error);
  EXPECT_THROW(w.addKernel(minimalMeta("k"), {}), Error);
  EXPECT_THROW(w.addKernel(minimalMeta("k"), {{"sm_90a", "cubin", ""}}), Error);
  EXPECT_THROW(w.addKernel(minimalMeta("k"), {{"sm90", "cubin", "x"}}), Error);
  EXPECT_THROW(w.addKernel(minimalMeta("k"), {{"sm_90a", "fatbin", "x"}}), Error);
  EXPECT_THROW(w.addKernel(minimalMeta("k"), {{"sm_90a", "cubin", "x"}, {"sm_90a", "cubin", "y"}}),
               Error);
  w.addKernel(minimalMeta("k"), {{"sm_90a", "cubin", "x"}});
  try {
    w.addKernel(minimalMeta("k"), {{"sm_100a", "cubin", "y"}});
    FAIL() << "duplicate kernel accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("duplicate kernel 'k'"), std::string::npos);
  }
  EXPECT_EQ(w.numKernels(), 1u);
}

TEST(BundleTest, FindBySpecialization) {
  auto b = Bundle::fromBytes(threeKernelWriter().serialize(), "k.kbundle");
  EXPECT_EQ(b->findAll("situ_and_mul").size(), 2u);
  const KernelEntry *e = b->find("situ_and_mul", {{"BLOCK", 2048}});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->symbol, "situ_and_mul_2048");
  EXPECT_EQ(b->find("situ_and_mul", {{"BLOCK", 4096}}), nullptr);
  EXPECT_EQ(b->find("situ_and_mul", {{"NOPE", 1}}), nullptr);
  EXPECT_EQ(b->find("situ_and_mul", {{"HAS_LINEAR_BETA", 1}}), nullptr); // bool != int
  EXPECT_NE(b->find("situ_and_mul", {{"HAS_LINEAR_BETA", true}, {"BLOCK", 1024}}), nullptr);

  EXPECT_EQ(b->kernel("situ_and_mul", {{"BLOCK", 1024}})->entry().symbol, "situ_and_mul_1024");
  EXPECT_EQ(b->kernel("mla_rope")->entry().symbol, "mla_rope_kernel");
  try {
    b->kernel("situ_and_mul");
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("is ambiguous"), std::string::npos) << e.what();
  }
  try {
    b->kernel("nope");
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "kiln: bundle 'k.kbundle' has no kernel 'nope'; it holds: 'situ_and_mul', "
              "'mla_rope'");
  }
  try {
    b->kernel("situ_and_mul", {{"BLOCK", 7}});
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no specialization of 'situ_and_mul' with constexprs "
                                         "{\"BLOCK\":7}; it holds:\n  situ_and_mul {BLOCK=1024"),
              std::string::npos)
        << e.what();
  }
}

/// A kernel reading `src` through a tensor map ([32, 256] bf16 boxes, 128-byte swizzle)
/// with TMA=true, through a pointer with TMA=false.
json copyMeta(bool tma) {
  json src = tma ? json{{"name", "src"},
                        {"kind", "tensormap"},
                        {"dtype", "bf16"},
                        {"box", {32, 256}},
                        {"swizzle", 128}}
                 : json{{"name", "src"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}};
  return {{"name", "copy"},
          {"symbol", tma ? "copy_tma" : "copy_ptr"},
          {"params",
           {src,
            {{"name", "dst"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}},
            {{"name", "n"}, {"kind", "scalar"}, {"dtype", "i32"}}}},
          {"constexprs", {{"TMA", tma}}},
          {"threads_per_block", 128}};
}

TEST(BundleTest, SelectMatchesTensorMapsByDtypeBoxAndSwizzle) {
  BundleWriter w("t");
  w.addKernel(copyMeta(true), {{"sm_90a", "cubin", fakeImage(9, 64)}});
  w.addKernel(copyMeta(false), {{"sm_90a", "cubin", fakeImage(10, 64)}});
  auto b = Bundle::fromBytes(w.serialize(), "copy.kbundle");
  const KernelEntry &tma = *b->find("copy", {{"TMA", true}});
  const KernelEntry &ptr = *b->find("copy", {{"TMA", false}});

  const ArgSpec map = ArgSpec::tensorMap(DType::BF16, {32, 256}, 128);
  const ArgSpec dst = ArgSpec::pointer(0x2000, DType::BF16);
  const ArgSpec n = ArgSpec::integer(7);
  EXPECT_EQ(map.describe(), "tensordesc<bf16, 32x256, swizzle 128>");
  EXPECT_EQ((ArgSpec{ArgSpec::Kind::TensorMap, std::nullopt, map.value}.describe()),
            "tensordesc<?, 32x256, swizzle 128>");
  // The geometry the launch check compares (KernelArg::geometry()).
  alignas(64) unsigned char bytes[128] = {};
  EXPECT_EQ(map.value, KernelArg::tensorMap(bytes, DType::BF16, {32, 256}, 128).geometry());

  // A tensor map takes only the tensor-map specialization, although the pointer one
  // assumes more (its rank is higher): a pointer only the pointer one.
  EXPECT_GT(specializationRank(ptr), specializationRank(tma));
  EXPECT_EQ(specializationMismatch(tma, {map, dst, n}), "");
  EXPECT_EQ(b->select("copy", {map, dst, n}).symbol, "copy_tma");
  EXPECT_EQ(b->select("copy", {ArgSpec::pointer(0x1000, DType::BF16), dst, n}).symbol, "copy_ptr");

  // Each way a tensor map and a param can disagree.
  EXPECT_EQ(specializationMismatch(tma, {ArgSpec::pointer(0x1000, DType::BF16), dst, n}),
            "argument 'src' (param 0) wants a tensor map (tensordesc<bf16, 32x256, swizzle "
            "128>), got ptr<bf16> 0x1000 (256+-byte aligned)");
  EXPECT_EQ(specializationMismatch(tma, {ArgSpec::integer(0), dst, n}),
            "argument 'src' (param 0) wants a tensor map (tensordesc<bf16, 32x256, swizzle "
            "128>), got int 0");
  EXPECT_EQ(specializationMismatch(tma, {ArgSpec::tensorMap(DType::BF16, {32, 128}, 128), dst, n}),
            "argument 'src' (param 0) wants tensordesc<bf16, 32x256, swizzle 128>, got "
            "tensordesc<bf16, 32x128, swizzle 128>");
  EXPECT_EQ(specializationMismatch(tma, {ArgSpec::tensorMap(DType::F16, {32, 256}, 128), dst, n}),
            "argument 'src' (param 0) wants tensordesc<bf16, 32x256, swizzle 128>, got "
            "tensordesc<f16, 32x256, swizzle 128>");
  EXPECT_EQ(specializationMismatch(tma, {ArgSpec::tensorMap(DType::BF16, {32, 256}, 0), dst, n}),
            "argument 'src' (param 0) wants tensordesc<bf16, 32x256, swizzle 128>, got "
            "tensordesc<bf16, 32x256>");
  EXPECT_EQ(specializationMismatch(tma, {map, map, n}),
            "argument 'dst' (param 1) wants ptr<bf16>, got a tensor map (tensordesc<bf16, "
            "32x256, swizzle 128>)");
  EXPECT_EQ(specializationMismatch(ptr, {map, dst, n}),
            "argument 'src' (param 0) wants ptr<bf16>, got a tensor map (tensordesc<bf16, "
            "32x256, swizzle 128>)");
  EXPECT_EQ(specializationMismatch(ptr, {ArgSpec::pointer(0x1000), dst, map}),
            "argument 'n' (param 2) wants i32, got a tensor map (tensordesc<bf16, 32x256, "
            "swizzle 128>)");

  // None fits: the error lists why for each specialization.
  try {
    b->select("copy", {ArgSpec::tensorMap(DType::BF16, {64, 256}, 128), dst, n});
    FAIL() << "a tensor map of another box was selected";
  } catch (const Error &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("has no specialization of 'copy' for (tensordesc<bf16, 64x256, swizzle "
                        "128>, ptr<bf16>"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("copy {TMA=true} (src: tensordesc<bf16, 32x256, swizzle 128>, dst: "
                        "ptr<bf16> (div 16), n: i32): argument 'src' (param 0) wants "
                        "tensordesc<bf16, 32x256, swizzle 128>, got tensordesc<bf16, 64x256, "
                        "swizzle 128>"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("copy {TMA=false} (src: ptr<bf16> (div 16), dst: ptr<bf16> (div 16), n: "
                        "i32): argument 'src' (param 0) wants ptr<bf16>, got a tensor map"),
              std::string::npos)
        << what;
  }
}

TEST(BundleTest, DescribeListsEverything) {
  auto b = Bundle::fromBytes(threeKernelWriter().serialize(), "k.kbundle");
  std::string d = b->describe();
  for (const char *s : {"bundle 'k.kbundle'", "3 kernels", "6 images", "kernel situ_and_mul",
                        "x: ptr<bf16> (div 16)", "n: i32", "BLOCK=1024", "HAS_LINEAR_BETA=true",
                        "sm_90a cubin 3000 B", "sm_100a cubin 2500 B", "sm_103a cubin 2600 B",
                        "sm_90a ptx", "pdl=true", "cluster 2x1x1", "kernel mla_rope"})
    EXPECT_NE(d.find(s), std::string::npos) << "missing '" << s << "' in:\n" << d;
}

TEST(BundleTest, KernelsFromBundleWorkWithoutDriver) {
  auto b = Bundle::fromBytes(threeKernelWriter().serialize());
  auto k = b->kernel("mla_rope");
  b.reset(); // the kernel keeps the bundle's bytes alive
  EXPECT_EQ(k->imageBytes(0), fakeImage(5, 700));
}
