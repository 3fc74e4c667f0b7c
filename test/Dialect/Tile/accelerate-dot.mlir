// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_100a | FileCheck %s --check-prefix=SM100

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>

// The K loop of a pipelined GEMM (as kiln-tile-pipeline-loads leaves it): the
// accumulator enters the loop in the mma layout, the operands are read in
// place, the dot is asynchronous with one in flight, the slots are refilled
// after the wait, and the result narrows to bf16 in the mma layout before a
// TMA store that takes it as it is.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[ZERO:.*]] = tile.convert_layout %{{.*}} : tensor<128x256xf32> -> tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: %[[LOOP:.*]]:2 = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]], %[[IT:.*]] = %{{.*}}) -> (tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>, i32)
// CHECK:   tile.ring_wait %{{.*}}[%[[SLOT:.*]]], %{{.*}} : !tile.ring<3, tensor<128x64xbf16>>
// CHECK:   tile.ring_wait %{{.*}}[%[[SLOT]]], %{{.*}} : !tile.ring<3, tensor<256x64xbf16>>
// CHECK:   %[[D:.*]] = tile.warpgroup_dot %{{.*}}[%[[SLOT]]], %{{.*}}[%[[SLOT]]], %[[ACC]]
// CHECK:   %[[W:.*]] = tile.warpgroup_dot_wait %[[D]] {pending = 1 : i32}
// CHECK:   tile.ring_issue
// CHECK:   tile.ring_issue
// CHECK:   scf.yield %[[W]], %{{.*}}
// CHECK-NOT: tile.dot
// CHECK: %[[DONE:.*]] = tile.warpgroup_dot_wait %[[LOOP]]#0 {pending = 0 : i32}
// CHECK: %[[H:.*]] = arith.truncf %[[DONE]] : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>> to tensor<128x256xbf16, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.desc_store %{{.*}}, %[[H]] : {{.*}}, tensor<128x256xbf16, #tile.mma<version = 3, numWarps = 8>>
// SM100-LABEL: func.func @gemm
// SM100-NOT: tile.warpgroup_dot
// SM100: tile.dot
func.func @gemm(%da: !DA, %db: !DB, %dc: !DC, %k: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !DA, !A
  tile.ring_issue %db[%c0, %c0] -> %rb[%c0] if %true : !DB, !B
  %acc, %n = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero, %it = %c0) -> (tensor<128x256xf32>, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %phase = arith.andi %it, %c1 : i32
    %a = tile.ring_wait_load %ra[%slot], %phase : !A -> tensor<128x64xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%slot] if %true : !DA, !A
    %b = tile.ring_wait_load %rb[%slot], %phase : !B -> tensor<256x64xbf16>
    tile.ring_issue %db[%c0, %kk] -> %rb[%slot] if %true : !DB, !B
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    %next = arith.addi %it, %c1 : i32
    scf.yield %d, %next : tensor<128x256xf32>, i32
  }
  %h = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.desc_store %dc[%c0, %c0], %h : !DC, tensor<128x256xbf16>
  return
}

// -----

// Unswizzled boxes are not what the wgmma descriptors describe: mma.sync stays.
// CHECK-LABEL: func.func @unswizzled
// CHECK-NOT: tile.warpgroup_dot
// CHECK: tile.dot
func.func @unswizzled(%da: !tile.tensordesc<tensor<128x64xbf16>>, %db: !tile.tensordesc<tensor<256x64xbf16>>, %k: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %ra = tile.ring_alloc : !tile.ring<2, tensor<128x64xbf16>>
  %rb = tile.ring_alloc : !tile.ring<2, tensor<256x64xbf16>>
  %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x256xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !tile.ring<2, tensor<128x64xbf16>> -> tensor<128x64xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !tile.tensordesc<tensor<128x64xbf16>>, !tile.ring<2, tensor<128x64xbf16>>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !tile.ring<2, tensor<256x64xbf16>> -> tensor<256x64xbf16>
    tile.ring_issue %db[%c0, %kk] -> %rb[%c0] if %true : !tile.tensordesc<tensor<256x64xbf16>>, !tile.ring<2, tensor<256x64xbf16>>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  return
}

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>

// The accumulator read inside the loop besides the dot: it stays in registers
// of the blocked layout, on mma.sync.
// CHECK-LABEL: func.func @acc_read
// CHECK-NOT: tile.warpgroup_dot
// CHECK: tile.dot
func.func @acc_read(%da: !DA, %db: !DB, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x256xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x64xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !DA, !A
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<256x64xbf16>
    tile.ring_issue %db[%c0, %kk] -> %rb[%c0] if %true : !DB, !B
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    %s = tile.reduce %acc {axis = 0 : i32} : tensor<128x256xf32> -> tensor<256xf32> {
    ^bb0(%x: f32, %y: f32):
      %z = arith.addf %x, %y : f32
      tile.reduce.return %z : f32
    }
    scf.yield %d : tensor<128x256xf32>
  }
  return
}
