// RUN: not kiln-opt %s -split-input-file -kiln-convert-tile-to-nvvm=arch=sm_90a 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not kiln-opt %s -split-input-file -kiln-convert-tile-to-nvvm=arch=sm_100a 2>&1 | FileCheck %s --check-prefix=SM100
// RUN: not kiln-opt %s -split-input-file -kiln-convert-tile-to-nvvm=arch=sm_103a 2>&1 | FileCheck %s --check-prefix=SM100

// With an arch, an op whose instructions it lacks is an error of the
// conversion (not a crash in instruction selection): Tensor Memory and
// tcgen05 only on sm_100a/sm_103a, wgmma only on sm_90a.
// SM90: error: 'tile.tmem_alloc' op needs sm_100a or sm_103a, not sm_90a
// SM100-NOT: tile.tmem_alloc' op needs
func.func @tmem(%x: i32) attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %acc = tile.tmem_alloc : !tile.tmem<tensor<128x64xf32>>
  tile.tmem_dealloc %acc : !tile.tmem<tensor<128x64xf32>>
  return
}

// -----

// SM100: error: 'tile.warpgroup_dot_wait' op needs sm_90a, not sm_10{{[03]}}a
// SM90-NOT: warpgroup_dot_wait' op needs
func.func @wgmma(%x: i32) attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  %w = tile.warpgroup_dot_wait %zero {pending = 0 : i32} : tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

// setmaxnreg exists on all three: tile.warp_specialize lowers on each.
// SM90-NOT: warp_specialize' op needs
// SM100-NOT: warp_specialize' op needs
func.func @warp_specialize() attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  tile.warp_specialize consumer {
  } producer {
  }
  return
}
