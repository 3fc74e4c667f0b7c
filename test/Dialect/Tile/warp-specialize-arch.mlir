// RUN: not kiln-opt %s -kiln-tile-warp-specialize=arch=sm_100a 2>&1 | FileCheck %s --check-prefix=SM100
// RUN: not kiln-opt %s -kiln-tile-warp-specialize=arch=sm_103a 2>&1 | FileCheck %s --check-prefix=SM103
// RUN: not kiln-opt %s -kiln-tile-warp-specialize 2>&1 | FileCheck %s --check-prefix=NOARCH

// Warp specialization is sm_90a's (setmaxnreg with wgmma): Blackwell's tcgen05
// pipeline is not specialized, and without an arch there is nothing to target.
// SM100: error: warp specialization is not supported on sm_100a (the tcgen05 pipeline is not specialized); drop warp_specialize or compile for sm_90a
// SM103: error: warp specialization is not supported on sm_103a
// NOARCH: error: warp specialization needs sm_90a (setmaxnreg, wgmma), got no arch
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
