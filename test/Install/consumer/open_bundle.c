#include "kiln/kiln.h"

#include <stdio.h>

int main(int argc, char **argv) {
  kiln_bundle *b = NULL;
  kiln_kernel *k = NULL;
  if (argc != 2)
    return 2;
  if (kiln_bundle_open(argv[1], &b) != KILN_OK) {
    fprintf(stderr, "%s\n", kiln_last_error());
    return 1;
  }
  if (kiln_bundle_find_kernel(b, "noop", NULL, &k) != KILN_OK) {
    fprintf(stderr, "%s\n", kiln_last_error());
    return 1;
  }
  printf("ok: %zu kernel(s), '%s' with %zu params\n", kiln_bundle_num_kernels(b),
         kiln_bundle_kernel_name(b, 0), kiln_kernel_num_params(k));
  kiln_kernel_release(k);
  kiln_bundle_close(b);
  return 0;
}
