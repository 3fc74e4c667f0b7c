// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout=num-warps=8 | FileCheck %s --check-prefix=WARPS8

// threads_per_block is 32 * tile.num_warps, else 32 * the num-warps option
// (default 4); elems_per_thread makes one run of the narrowest element a
// thread loads or stores with consecutive addresses 16 bytes.

// CHECK-LABEL: func.func @bf16_kernel
// CHECK-SAME: attributes {tile.elems_per_thread = 8 : i32, tile.kernel, tile.threads_per_block = 128 : i32}
// WARPS8-LABEL: func.func @bf16_kernel
// WARPS8-SAME: attributes {tile.elems_per_thread = 8 : i32, tile.kernel, tile.threads_per_block = 256 : i32}
func.func @bf16_kernel(%x: !tile.ptr<bf16>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// CHECK-LABEL: func.func @f32_kernel_num_warps
// CHECK-SAME: attributes {tile.elems_per_thread = 4 : i32, tile.kernel, tile.num_warps = 2 : i32, tile.threads_per_block = 64 : i32}
// The kernel's own tile.num_warps wins over the option.
// WARPS8-LABEL: func.func @f32_kernel_num_warps
// WARPS8-SAME: tile.threads_per_block = 64 : i32
func.func @f32_kernel_num_warps(%x: !tile.ptr<f32>, %v: f32) attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<256x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<256x!tile.ptr<f32>>, tensor<256xi32>
  %vs = tile.splat %v : f32 -> tensor<256xf32>
  tile.store %p, %vs : tensor<256x!tile.ptr<f32>>
  return
}

// -----

// CHECK-LABEL: func.func @i8_kernel
// CHECK-SAME: tile.elems_per_thread = 16 : i32
// CHECK-SAME: tile.threads_per_block = 1024 : i32
func.func @i8_kernel(%x: !tile.ptr<i8>) attributes {tile.kernel, tile.num_warps = 32 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<i8> -> tensor<128x!tile.ptr<i8>>
  %p = tile.addptr %xs, %r : tensor<128x!tile.ptr<i8>>, tensor<128xi32>
  %v = tile.load %p : tensor<128x!tile.ptr<i8>>
  return
}

// -----

// The narrowest accessed element decides: f32 load, bf16 store -> 8.
// CHECK-LABEL: func.func @mixed_kernel
// CHECK-SAME: tile.elems_per_thread = 8 : i32
func.func @mixed_kernel(%x: !tile.ptr<f32>, %y: !tile.ptr<bf16>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %v = tile.load %p : tensor<128x!tile.ptr<f32>>
  %t = arith.truncf %v : tensor<128xf32> to tensor<128xbf16>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<128x!tile.ptr<bf16>>
  %q = tile.addptr %ys, %r : tensor<128x!tile.ptr<bf16>>, tensor<128xi32>
  tile.store %q, %t : tensor<128x!tile.ptr<bf16>>
  return
}

// -----

// A gather (pointers without contiguity) does not decide: the contiguous bf16
// store does (8), not the gathered i8 (16), whose run would only hold
// registers.
// CHECK-LABEL: func.func @gather_kernel
// CHECK-SAME: tile.elems_per_thread = 8 : i32
func.func @gather_kernel(%x: !tile.ptr<i8>, %y: !tile.ptr<bf16>, %s: i32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %ss = tile.splat %s : i32 -> tensor<128xi32>
  %o = arith.muli %r, %ss : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<i8> -> tensor<128x!tile.ptr<i8>>
  %p = tile.addptr %xs, %o : tensor<128x!tile.ptr<i8>>, tensor<128xi32>
  %v = tile.load %p : tensor<128x!tile.ptr<i8>>
  %f = arith.uitofp %v : tensor<128xi8> to tensor<128xbf16>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<128x!tile.ptr<bf16>>
  %q = tile.addptr %ys, %r : tensor<128x!tile.ptr<bf16>>, tensor<128xi32>
  tile.store %q, %f : tensor<128x!tile.ptr<bf16>>
  return
}

// -----

// Only gathers: the narrowest gathered element decides, as for contiguous
// accesses (i8 -> 16).
// CHECK-LABEL: func.func @only_gathers
// CHECK-SAME: tile.elems_per_thread = 16 : i32
func.func @only_gathers(%x: !tile.ptr<i8>, %s: i32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %ss = tile.splat %s : i32 -> tensor<128xi32>
  %o = arith.muli %r, %ss : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<i8> -> tensor<128x!tile.ptr<i8>>
  %p = tile.addptr %xs, %o : tensor<128x!tile.ptr<i8>>, tensor<128xi32>
  %v = tile.load %p : tensor<128x!tile.ptr<i8>>
  return
}

// -----

// f64 -> 2 elements (16 bytes).
// CHECK-LABEL: func.func @f64_kernel
// CHECK-SAME: tile.elems_per_thread = 2 : i32
func.func @f64_kernel(%x: !tile.ptr<f64>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f64> -> tensor<128x!tile.ptr<f64>>
  %p = tile.addptr %xs, %r : tensor<128x!tile.ptr<f64>>, tensor<128xi32>
  %v = tile.load %p : tensor<128x!tile.ptr<f64>>
  return
}

// -----

// No tile access (scalar accesses only): one element per thread.
// CHECK-LABEL: func.func @no_tile_access
// CHECK-SAME: attributes {tile.elems_per_thread = 1 : i32, tile.kernel, tile.threads_per_block = 128 : i32}
func.func @no_tile_access(%x: !tile.ptr<i8>) attributes {tile.kernel} {
  %v = tile.load %x : !tile.ptr<i8>
  tile.store %x, %v : !tile.ptr<i8>
  return
}

// -----

// Functions that are not kernels are left alone.
// CHECK-LABEL: func.func @not_a_kernel
// CHECK-NOT: tile.threads_per_block
// CHECK: return
func.func @not_a_kernel(%x: !tile.ptr<f32>) {
  %v = tile.load %x : !tile.ptr<f32>
  return
}
