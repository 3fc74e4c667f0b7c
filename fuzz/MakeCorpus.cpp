//===- MakeCorpus.cpp - Seed corpus: small valid bundles -------------------===//

#include "kiln/Runtime/Bundle.h"

#include <fstream>
#include <string>

using nlohmann::json;

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  const std::string dir = argv[1];
  auto image = [](char fill, size_t n) {
    return std::string("\x7f"
                       "ELF",
                       4) +
           std::string(n, fill);
  };
  json situ = {{"name", "situ_and_mul"},
               {"symbol", "situ_and_mul"},
               {"params",
                {{{"name", "x"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}},
                 {{"name", "out"}, {"kind", "ptr"}, {"dtype", "bf16"}, {"divisibility", 16}},
                 {{"name", "D"}, {"kind", "scalar"}, {"dtype", "i32"}, {"divisibility", 16}},
                 {{"name", "beta"}, {"kind", "scalar"}, {"dtype", "f32"}}}},
               {"constexprs", {{"BLOCK", 2048}, {"HAS_LINEAR_BETA", true}}},
               {"threads_per_block", 256},
               {"pdl", true},
               {"cluster", {2, 1, 1}},
               {"features", {"pdl", "vector16"}},
               {"source_hash", "0123abcd"},
               {"compiler_version", "fuzz"},
               {"targets",
                {{"sm_90a",
                  {{"features", {"pdl", "vector16"}},
                   {"registers", 39},
                   {"spill_store_bytes", 0},
                   {"spill_load_bytes", 0},
                   {"stack_bytes", 0},
                   {"ptx_isa", "8.8"},
                   {"assembler", "nvJitLink"},
                   {"assembler_version", "13.0.88"}}}}}};
  int n = 0;
  auto emit = [&](const kiln::BundleWriter &w) {
    std::ofstream(dir + "/seed" + std::to_string(n++) + ".kbundle", std::ios::binary)
        << w.serialize();
  };
  {
    kiln::BundleWriter w("fuzz");
    w.addKernel(situ, {{"sm_90a", "cubin", image('a', 40)}, {"sm_100a", "cubin", image('b', 20)}});
    emit(w);
  }
  {
    kiln::BundleWriter w("fuzz");
    json m = situ;
    m.erase("targets");
    w.addKernel(m, {{"sm_90a", "ptx", ".version 8.8\n.target sm_90a\n"}});
    m["constexprs"]["BLOCK"] = 1024;
    w.addKernel(m, {{"sm_103a", "cubin", image('c', 8)}, {"sm_90", "ptx", ".version 8.0\n"}});
    emit(w);
  }
  {
    kiln::BundleWriter w("fuzz");
    w.addKernel(
        {{"name", "k"}, {"symbol", "k"}, {"params", json::array()}, {"threads_per_block", 1}},
        {{"sm_90a", "cubin", image('d', 1)}});
    emit(w);
  }
  return 0;
}
