// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-tile-warp-specialize=arch=sm_90a
// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-tile-warp-specialize=arch=sm_100a
// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-tile-warp-specialize=arch=sm_103a

!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @nested(%d: !D, %n: i32, %p: i1) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.if %p {
    // expected-error @+1 {{expected the warp-specialized loop at the top level of the kernel, not inside 'scf.if'}}
    scf.for %i = %c0 to %n step %c1 : i32 {
      %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
      tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
    } {tile.num_stages = 3 : i32, tile.warp_specialize}
  }
  return
}

// -----

!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @one_stage(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{expected tile.num_stages >= 2 on a warp-specialized loop}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.num_stages = 1 : i32, tile.warp_specialize}
  return
}

// -----

!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @no_stages(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{expected tile.num_stages >= 2 on a warp-specialized loop}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.warp_specialize}
  return
}

// -----

// Pointer loads are not a ring's: nothing for a producer to issue.
func.func @pointer_loads(%p: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %ps = tile.splat %p : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %pp = tile.addptr %ps, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  // expected-error @+1 {{expected a descriptor load (desc.load) in the warp-specialized loop whose coordinates are functions of the loop index}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %v = tile.load %pp : tensor<128x!tile.ptr<f32>>
    tile.store %pp, %v : tensor<128x!tile.ptr<f32>>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}

// -----

// A coordinate carried by the loop is no function of the iteration.
!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @carried_coordinate(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{expected a descriptor load (desc.load) in the warp-specialized loop}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%row = %c0) -> (i32) : i32 {
    // expected-note @+1 {{its coordinates depend on a value the loop carries (not a function of the iteration)}}
    %t = tile.desc_load %d[%row, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%row, %c0], %t : !D, tensor<64x64xbf16>
    %next = arith.addi %row, %c1 : i32
    scf.yield %next : i32
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}

// -----

// A coordinate read from memory that the kernel writes (here the same
// argument) cannot be read again by the producer warps.
!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @written_table(%d: !D, %table: !tile.ptr<i32>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{expected a descriptor load (desc.load) in the warp-specialized loop}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %p = tile.addptr %table, %i : !tile.ptr<i32>, i32
    %row = tile.load %p : !tile.ptr<i32>
    // expected-note @+1 {{its coordinates depend on 'tile.load' of memory that 'tile.store' writes (the same kernel argument)}}
    %t = tile.desc_load %d[%row, %c0] : !D -> tensor<64x64xbf16>
    tile.store %p, %c0 : !tile.ptr<i32>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}

// -----

// The producer warps hold no tiles: a bound reduced from a tile is not theirs.
!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @tile_bound(%d: !D, %p: !tile.ptr<i32>) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  // expected-note @+1 {{the producer warps would need 'tile.reduce'}}
  %n = tile.reduce %r {axis = 0 : i32} : tensor<128xi32> -> i32 {
  ^bb0(%a: i32, %b: i32):
    %x = arith.addi %a, %b : i32
    tile.reduce.return %x : i32
  }
  // expected-error @+1 {{expected the loop bounds and load coordinates of a warp-specialized loop to be pure scalar computations}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}

// -----

!D = !tile.tensordesc<tensor<64x64xbf16>>
func.func @two_loops(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-note @+1 {{the first one}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  // expected-error @+1 {{expected one warp-specialized loop per kernel, found 2}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<64x64xbf16>
    tile.desc_store %d[%i, %c0], %t : !D, tensor<64x64xbf16>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}

// -----

// Two 128 KiB slots do not fit the shared memory.
!D = !tile.tensordesc<tensor<256x256xf16>>
func.func @too_big(%d: !D, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{the rings of the warp-specialized loop do not fit the shared memory with 2 stages}}
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t = tile.desc_load %d[%i, %c0] : !D -> tensor<256x256xf16>
  } {tile.num_stages = 2 : i32, tile.warp_specialize}
  return
}
