// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -verify-diagnostics
// RUN: not kiln-opt %s -split-input-file -kiln-tile-assign-layout=num-warps=3 2>&1 | FileCheck %s --check-prefix=WARPS3

// Tiles must have a power-of-two number of elements.
// WARPS3: error: expected num_warps to be a power of two in [1, 32], got 3
func.func @non_power_of_two_tile(%x: f32) attributes {tile.kernel} {
  // expected-error @+1 {{'tile.splat' op tiles must have a power-of-two number of elements, got 'tensor<96xf32>'}}
  %0 = tile.splat %x : f32 -> tensor<96xf32>
  return
}

// -----

// WARPS3: error: 'arith.constant' op tiles must have a power-of-two number of elements, got 'tensor<3x64xi32>'
func.func @non_power_of_two_2d(%x: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  // expected-error @+1 {{'arith.constant' op tiles must have a power-of-two number of elements, got 'tensor<3x64xi32>'}}
  %0 = arith.constant dense<1> : tensor<3x64xi32>
  return
}

// -----

// The num-warps option is checked where a kernel has no tile.num_warps (the
// attribute itself is checked by the dialect's verifier, see invalid.mlir).
// WARPS3: error: expected num_warps to be a power of two in [1, 32], got 3
func.func @bad_num_warps_option() attributes {tile.kernel} {
  return
}
