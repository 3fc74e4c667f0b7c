// RUN: not kiln-opt %s -kiln-tile-warp-specialize 2>&1 | FileCheck %s --check-prefix=NOARCH
// RUN: not kiln-opt %s -kiln-tile-warp-specialize=arch=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: kiln-opt %s -kiln-tile-warp-specialize=arch=sm_100a | FileCheck %s --check-prefix=BW
// RUN: kiln-opt %s -kiln-tile-warp-specialize=arch=sm_103a | FileCheck %s --check-prefix=BW

// Warp specialization needs setmaxnreg: sm_90a (wgmma) or sm_100a/sm_103a
// (tcgen05); without an arch, or on another, there is nothing to target.
// NOARCH: error: warp specialization needs sm_90a, sm_100a or sm_103a (setmaxnreg), got no arch
// SM80: error: warp specialization needs sm_90a, sm_100a or sm_103a (setmaxnreg), got 'sm_80'
// BW: tile.warp_specialize consumer {
// BW: } producer {
!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @k(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.num_stages = 3 : i32, tile.warp_specialize}
  return
}
