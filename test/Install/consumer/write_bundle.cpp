#include "kiln/Runtime/Bundle.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  kiln::BundleWriter w("consumer");
  w.addKernel({{"name", "noop"},
               {"symbol", "noop"},
               {"params", nlohmann::json::array()},
               {"threads_per_block", 32}},
              {{"sm_90a", "cubin", std::string("\x7f" "ELF", 4) + std::string(16, 'z')}});
  w.write(argv[1]);
  std::printf("wrote %s\n", argv[1]);
  return 0;
}
