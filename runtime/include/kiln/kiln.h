/*===- kiln.h - The kiln runtime's C API -----------------------------------===*\
|*                                                                            *|
|* Open a kernel bundle (.kbundle), find a kernel, launch it on a CUDA stream.  *|
|* Every handle is opaque; every call that can fail returns a kiln_status and  *|
|* leaves the message in kiln_last_error() (per thread). No exception crosses  *|
|* this boundary. libcuda is opened at run time (dlopen): a program using this *|
|* API links only the kiln runtime library.                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_C_API_VERSION 1

typedef enum kiln_status {
  KILN_OK = 0,
  /** Malformed bundle, unknown kernel, bad argument, CUDA driver error, ... */
  KILN_ERROR = 1,
  /** A null handle or pointer where one was required. */
  KILN_INVALID_ARGUMENT = 2,
} kiln_status;

/** Element and scalar types; the values are part of the ABI. */
typedef enum kiln_dtype {
  KILN_I1 = 0,
  KILN_I8,
  KILN_I16,
  KILN_I32,
  KILN_I64,
  KILN_U8,
  KILN_U16,
  KILN_U32,
  KILN_U64,
  KILN_F16,
  KILN_BF16,
  KILN_F32,
  KILN_F64,
  KILN_F8E4M3,
  KILN_F8E5M2,
} kiln_dtype;

/** One kernel argument: a device pointer, or a scalar given by its bits
 *  (little-endian, the low dtype-size bytes are used). */
typedef struct kiln_arg {
  uint8_t is_pointer;
  uint8_t dtype; /* kiln_dtype; ignored for pointers */
  uint64_t bits;
} kiln_arg;

static inline kiln_arg kiln_arg_pointer(const void *p) {
  kiln_arg a = {1, 0, (uint64_t)(uintptr_t)p};
  return a;
}
static inline kiln_arg kiln_arg_i32(int32_t v) {
  kiln_arg a = {0, KILN_I32, (uint64_t)(uint32_t)v};
  return a;
}
static inline kiln_arg kiln_arg_i64(int64_t v) {
  kiln_arg a = {0, KILN_I64, (uint64_t)v};
  return a;
}
static inline kiln_arg kiln_arg_f32(float v) {
  union {
    float f;
    uint32_t u;
  } c;
  kiln_arg a = {0, KILN_F32, 0};
  c.f = v;
  a.bits = c.u;
  return a;
}

typedef struct kiln_bundle kiln_bundle;
typedef struct kiln_kernel kiln_kernel;

/** The message of the last failed call on this thread ("" if none). Valid
 *  until the next kiln call on this thread. */
const char *kiln_last_error(void);

/** Reads and verifies a bundle. */
kiln_status kiln_bundle_open(const char *path, kiln_bundle **out);
/** Verifies `size` bytes as a bundle (they are copied). */
kiln_status kiln_bundle_open_memory(const void *data, size_t size, kiln_bundle **out);
/** Releases the handle; kernels obtained from it stay valid. */
void kiln_bundle_close(kiln_bundle *bundle);

size_t kiln_bundle_num_kernels(const kiln_bundle *bundle);
/** Name of entry `index` (NULL if out of range); valid while the bundle lives. */
const char *kiln_bundle_kernel_name(const kiln_bundle *bundle, size_t index);

/** The one specialization of `name` whose constexprs contain
 *  `constexprs_json` (a JSON object such as "{\"BLOCK\": 1024}", or NULL). */
kiln_status kiln_bundle_find_kernel(const kiln_bundle *bundle, const char *name,
                                    const char *constexprs_json, kiln_kernel **out);
void kiln_kernel_release(kiln_kernel *kernel);

size_t kiln_kernel_num_params(const kiln_kernel *kernel);
/** Loads the module in the current CUDA context (else the first launch does). */
kiln_status kiln_kernel_load(const kiln_kernel *kernel);
/** Launches on `stream` (a CUstream; NULL: the legacy default stream) with
 *  `grid` blocks. Checks the arguments against the parameters first. No
 *  synchronization, no allocation: safe inside CUDA graph capture. */
kiln_status kiln_kernel_launch(const kiln_kernel *kernel, void *stream, const unsigned grid[3],
                               const kiln_arg *args, size_t num_args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_H */
