// RUN: kiln-opt %s -split-input-file -kiln-convert-tile-to-nvvm -verify-diagnostics

// The conversion needs the layout of kiln-tile-assign-layout.
// expected-error @+1 {{kernel has no layout: run kiln-tile-assign-layout first}}
func.func @no_layout(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  return
}

// -----

// expected-error @+1 {{kernel has no layout: run kiln-tile-assign-layout first}}
func.func @half_a_layout(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.elems_per_thread = 4 : i32} {
  return
}

// -----

// All kernels of a module share one layout.
func.func @first(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  return
}
// expected-error @+1 {{all kernels of a module must share one layout; this one has 256 threads x 4 elements, an earlier one 128 x 4}}
func.func @second(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 256 : i32, tile.elems_per_thread = 4 : i32} {
  return
}

// -----

func.func @third(%x: !tile.ptr<bf16>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  return
}
// expected-error @+1 {{all kernels of a module must share one layout; this one has 128 threads x 4 elements, an earlier one 128 x 8}}
func.func @fourth(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  return
}

// -----

// Only splat constants exist on tiles.
func.func @non_splat_constant(%x: !tile.ptr<i32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  // expected-error @+1 {{'arith.constant' op only splat constants are supported on tiles}}
  %c = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<4x!tile.ptr<i32>>
  tile.store %xs, %c : tensor<4x!tile.ptr<i32>>
  return
}

// -----

// tile.dot keeps a and b whole in shared memory: 128x128 bf16 operands take
// 2 x 128 x (128 + 8) x 2 bytes, over the 48 KiB of static shared memory with
// even the smallest accumulator slab (16 rows x (128 + 8) x f32).
func.func @dot_too_large(%x: !tile.ptr<bf16>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %a = tile.splat %v : bf16 -> tensor<128x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  // expected-error @+1 {{'tile.dot' op needs 78336 bytes of shared memory (a and b: 69632, a 16-row accumulator slab: 8704), more than the 49152 of static shared memory; use smaller tiles}}
  %d = tile.dot %a, %a, %zero : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
  return
}
