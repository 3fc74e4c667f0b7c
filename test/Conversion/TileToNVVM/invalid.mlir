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
