// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_90a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_100a | FileCheck %s --check-prefix=SM100
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot=arch=sm_103a | FileCheck %s --check-prefix=SM100
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-accelerate-dot="arch=sm_90a mn-major-b=false" | FileCheck %s --check-prefix=NOMN

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
// CHECK-NOT: tile.warp_dot
// CHECK: %[[DONE:.*]] = tile.warpgroup_dot_wait %[[LOOP]]#0 {pending = 0 : i32}
// CHECK: %[[H:.*]] = arith.truncf %[[DONE]] : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>> to tensor<128x256xbf16, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.desc_store %{{.*}}, %[[H]] : {{.*}}, tensor<128x256xbf16, #tile.mma<version = 3, numWarps = 8>>
// mn-major-b=false leaves the K-major form alone.
// NOMN-LABEL: func.func @gemm
// NOMN: tile.warpgroup_dot
// On sm_100a/sm_103a the accumulator lives in Tensor Memory: two commit
// barriers and the TMEM allocation before the loop, which carries the count
// of dots issued in the accumulator's place. Dot n (from zero when n = 0)
// commits to barrier n mod 2; then dot n - 1 is waited for (barrier
// (n + 1) mod 2, parity ((n + 1) / 2 mod 2) xor 1) and the slots refilled.
// After the loop the last dot is waited for the same way, the accumulator
// read into the version 5 mma layout, zero when the loop ran no iteration,
// TMEM freed, and the result narrowed and stored in that layout.
// SM100-LABEL: func.func @gemm
// SM100-NOT: tile.warpgroup_dot
// SM100: %[[BARS:.*]] = tile.mbarrier_alloc : !tile.mbarriers<2>
// SM100: %[[TMEM:.*]] = tile.tmem_alloc : !tile.tmem<tensor<128x256xf32>>
// SM100: %[[C0:.*]] = arith.constant 0 : i32
// SM100: %[[LOOP:.*]]:2 = scf.for {{.*}} iter_args(%[[N:.*]] = %[[C0]], %{{.*}} = %{{.*}}) -> (i32, i32)
// SM100:   tile.ring_wait %{{.*}}[%[[SLOT:.*]]], %{{.*}} : !tile.ring<3, tensor<128x64xbf16>>
// SM100:   tile.ring_wait %{{.*}}[%[[SLOT]]], %{{.*}} : !tile.ring<3, tensor<256x64xbf16>>
// SM100:   %[[ACCUMULATE:.*]] = arith.cmpi ne, %[[N]], %{{.*}} : i32
// SM100:   %[[BAR:.*]] = arith.andi %[[N]], %{{.*}} : i32
// SM100:   tile.tcgen05_dot %{{.*}}[%[[SLOT]]], %{{.*}}[%[[SLOT]]], %[[TMEM]], %[[ACCUMULATE]] -> %[[BARS]][%[[BAR]]] : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<256x64xbf16>>, !tile.tmem<tensor<128x256xf32>>, !tile.mbarriers<2>
// SM100:   %[[NEXT:.*]] = arith.addi %[[N]], %[[ONE:.*]] : i32
// SM100:   %[[PREV:.*]] = arith.andi %[[NEXT]], %[[ONE]] : i32
// SM100:   %[[HALF:.*]] = arith.shrui %[[NEXT]], %[[ONE]] : i32
// SM100:   %[[BIT:.*]] = arith.andi %[[HALF]], %[[ONE]] : i32
// SM100:   %[[PARITY:.*]] = arith.xori %[[BIT]], %[[ONE]] : i32
// SM100:   tile.mbarrier_wait %[[BARS]][%[[PREV]]], %[[PARITY]] : !tile.mbarriers<2>
// SM100:   tile.ring_issue
// SM100:   tile.ring_issue
// SM100:   %[[COUNT:.*]] = arith.addi %[[N]], %{{.*}} : i32
// SM100:   scf.yield %[[COUNT]], %{{.*}} : i32, i32
// SM100-NOT: tile.warp_dot
// SM100: %[[AFTER:.*]] = arith.addi %[[LOOP]]#0, %[[ONE2:.*]] : i32
// SM100: %[[LAST:.*]] = arith.andi %[[AFTER]], %[[ONE2]] : i32
// SM100: %[[LHALF:.*]] = arith.shrui %[[AFTER]], %[[ONE2]] : i32
// SM100: %[[LBIT:.*]] = arith.andi %[[LHALF]], %[[ONE2]] : i32
// SM100: %[[LPARITY:.*]] = arith.xori %[[LBIT]], %[[ONE2]] : i32
// SM100: tile.mbarrier_wait %[[BARS]][%[[LAST]]], %[[LPARITY]] : !tile.mbarriers<2>
// SM100: %[[LOADED:.*]] = tile.tmem_load %[[TMEM]] : !tile.tmem<tensor<128x256xf32>> -> tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100: %[[RAN:.*]] = arith.cmpi ne, %[[LOOP]]#0, %{{.*}} : i32
// SM100: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100: %[[ACC:.*]] = arith.select %[[RAN]], %[[LOADED]], %[[ZEROS]] : tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100: tile.tmem_dealloc %[[TMEM]] : !tile.tmem<tensor<128x256xf32>>
// SM100: %[[H:.*]] = arith.truncf %[[ACC]] : tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>> to tensor<128x256xbf16, #tile.mma<version = 5, numWarps = 8>>
// SM100-NOT: tile.convert_layout
// SM100: tile.desc_store %{{.*}}, %[[H]] : {{.*}}, tensor<128x256xbf16, #tile.mma<version = 5, numWarps = 8>>
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

// Unswizzled boxes are not what the wgmma and tcgen05 descriptors describe:
// the slots are loaded into registers, and staged for wgmma (sm_90a) or
// tcgen05 (Blackwell).
// CHECK-LABEL: func.func @unswizzled
// CHECK-NOT: tile.warpgroup_dot %
// CHECK: tile.warpgroup_dot_staged
// SM100-LABEL: func.func @unswizzled
// SM100-SAME: tile.dots = ["{{[0-9]+}} tcgen05 staged"]
// SM100-NOT: tile.tcgen05_dot %
// SM100: tile.tcgen05_dot_staged
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

// The accumulator read inside the loop besides the dot (a column sum, which
// has no form in the mma layout): the staged dot's result, yielded, is
// carried in the wgmma layout, and only the read converts it, once an
// iteration, to the blocked layout; staged for tcgen05 on Blackwell.
// CHECK-LABEL: func.func @acc_read
// CHECK-NOT: tile.warpgroup_dot %
// CHECK: %[[INIT:.*]] = tile.convert_layout %{{.*}} : tensor<128x256xf32> -> tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>)
// CHECK: %[[READ:.*]] = tile.convert_layout %[[ACC]] : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128x256xf32>
// CHECK-NOT: tile.convert_layout
// CHECK: %[[D:.*]] = tile.warpgroup_dot_staged %{{.*}}, %{{.*}}, %[[ACC]]
// CHECK: tile.reduce %[[READ]] {axis = 0 : i32}
// CHECK: scf.yield %[[D]]
// SM100-LABEL: func.func @acc_read
// SM100-SAME: tile.dots = ["{{[0-9]+}} tcgen05 staged"]
// SM100-NOT: tile.tcgen05_dot %
// SM100: tile.tcgen05_dot_staged
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

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>

// A non-zero initial accumulator: wgmma adds to it; the first tcgen05.mma
// would not read TMEM, so Blackwell keeps mma.sync.
// CHECK-LABEL: func.func @nonzero_init
// CHECK: tile.warpgroup_dot
// SM100-LABEL: func.func @nonzero_init
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @nonzero_init(%da: !DA, %db: !DB, %k: i32, %x: f32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %init = tile.splat %x : f32 -> tensor<128x256xf32>
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %init) -> (tensor<128x256xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x64xbf16>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<256x64xbf16>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !DA, !A
    tile.ring_issue %db[%c0, %kk] -> %rb[%c0] if %true : !DB, !B
    scf.yield %d : tensor<128x256xf32>
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x256x!tile.ptr<f32>>
  tile.store %p, %acc : tensor<128x256x!tile.ptr<f32>>
  return
}

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>

// A K loop inside another loop: Tensor Memory is allocated once per kernel
// and the commit barriers start fresh, so Blackwell keeps mma.sync.
// CHECK-LABEL: func.func @nested
// CHECK: tile.warpgroup_dot
// SM100-LABEL: func.func @nested
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @nested(%da: !DA, %db: !DB, %k: i32, %tiles: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  scf.for %t = %c0 to %tiles step %c1 : i32 {
    %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x256xf32>) : i32 {
      %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x64xbf16>
      %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<256x64xbf16>
      %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
      %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      tile.ring_issue %da[%t, %kk] -> %ra[%c0] if %true : !DA, !A
      tile.ring_issue %db[%t, %kk] -> %rb[%c0] if %true : !DB, !B
      scf.yield %d : tensor<128x256xf32>
    }
    %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x256x!tile.ptr<f32>>
    tile.store %p, %acc : tensor<128x256x!tile.ptr<f32>>
  }
  return
}

// -----

!A = !tile.ring<2, tensor<64x64xf16>>
!B = !tile.ring<2, tensor<64x64xf16>>
!D = !tile.tensordesc<tensor<64x64xf16>, swizzle = 128>

// M = 64: one wgmma slab on 4 warps; tcgen05 here takes M = 128 only.
// CHECK-LABEL: func.func @m64
// CHECK: tile.warpgroup_dot
// SM100-LABEL: func.func @m64
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @m64(%d: !D, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<64x64xf16>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<64x64xf16>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<64x64xf16> -> tensor<64x64xf16>
    %dd = tile.dot %a, %bt, %acc : tensor<64x64xf16> * tensor<64x64xf16> -> tensor<64x64xf32>
    tile.ring_issue %d[%c0, %kk] -> %ra[%c0] if %true : !D, !A
    tile.ring_issue %d[%kk, %c0] -> %rb[%c0] if %true : !D, !B
    scf.yield %dd : tensor<64x64xf32>
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %p, %acc : tensor<64x64x!tile.ptr<f32>>
  return
}

// -----

!A = !tile.ring<2, tensor<128x64xf16>>
!B = !tile.ring<2, tensor<128x64xf16>>
!DA = !tile.tensordesc<tensor<128x64xf16>, swizzle = 128>

// Two K loops in one kernel: both on wgmma; on Blackwell only the first uses
// Tensor Memory (its tmem_dealloc gives up the permit to allocate), with
// 128 columns for N = 128 on 4 warps, f16 operands.
// CHECK-LABEL: func.func @two_dots
// CHECK-COUNT-2: tile.warpgroup_dot %
// SM100-LABEL: func.func @two_dots
// SM100: tile.tmem_alloc : !tile.tmem<tensor<128x128xf32>>
// SM100: tile.tcgen05_dot {{.*}} : !tile.ring<2, tensor<128x64xf16>>, !tile.ring<2, tensor<128x64xf16>>, !tile.tmem<tensor<128x128xf32>>, !tile.mbarriers<2>
// SM100: tile.tmem_load {{.*}} -> tensor<128x128xf32, #tile.mma<version = 5, numWarps = 4>>
// SM100: tile.tmem_dealloc
// SM100: tile.convert_layout {{.*}} : tensor<128x128xf32, #tile.mma<version = 5, numWarps = 4>> -> tensor<128x128xf32>
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @two_dots(%da: !DA, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %x = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x64xf16>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<128x64xf16>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<128x64xf16> -> tensor<64x128xf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xf16> * tensor<64x128xf16> -> tensor<128x128xf32>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !DA, !A
    tile.ring_issue %da[%kk, %c0] -> %rb[%c0] if %true : !DA, !B
    scf.yield %d : tensor<128x128xf32>
  }
  %y = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x64xf16>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<128x64xf16>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<128x64xf16> -> tensor<64x128xf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xf16> * tensor<64x128xf16> -> tensor<128x128xf32>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !DA, !A
    tile.ring_issue %da[%kk, %c0] -> %rb[%c0] if %true : !DA, !B
    scf.yield %d : tensor<128x128xf32>
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %p, %x : tensor<128x128x!tile.ptr<f32>>
  tile.store %p, %y : tensor<128x128x!tile.ptr<f32>>
  return
}

// -----

!A = !tile.ring<2, tensor<128x64xbf16>>
!B = !tile.ring<2, tensor<64x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>

// No refill in the loop, so no CTA barrier keeps the threads within one
// iteration of each other (and of the commit barriers' phases): Blackwell
// keeps mma.sync.
// CHECK-LABEL: func.func @no_refill
// CHECK: tile.warpgroup_dot
// SM100-LABEL: func.func @no_refill
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @no_refill(%da: !DA, %db: !DB, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !DA, !A
  tile.ring_issue %db[%c0, %c0] -> %rb[%c0] if %true : !DB, !B
  %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x64xbf16>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<64x64xbf16>
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  tile.store %p, %acc : tensor<128x64x!tile.ptr<f32>>
  return
}

// -----

!A = !tile.ring<3, tensor<128x128xf8E4M3FN>>
!B = !tile.ring<3, tensor<128x128xf8E4M3FN>>
!DA = !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>
!DB = !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>

// An FP8 dot with maxNumImpreciseAcc: on sm_90a the warpgroup dot keeps the
// bound and waits for its own chunks (promoted in f32 by its lowering), so
// the wait after it is {pending = 0} and the refills follow it. On
// sm_100a/sm_103a FP8 stays on mma.sync, its operands widened to bf16 (exact
// f32 accumulation per k16 step): the attribute is dropped.
// CHECK-LABEL: func.func @fp8_promoted
// CHECK: scf.for
// CHECK:   %[[D:.*]] = tile.warpgroup_dot %{{.*}}[%[[SLOT:.*]]], %{{.*}}[%[[SLOT]]], %{{.*}} {maxNumImpreciseAcc = 64 : i32} : !tile.ring<3, tensor<128x128xf8E4M3FN>>, !tile.ring<3, tensor<128x128xf8E4M3FN>>, tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK:   %[[W:.*]] = tile.warpgroup_dot_wait %[[D]] {pending = 0 : i32}
// CHECK:   tile.ring_issue
// CHECK:   tile.ring_issue
// CHECK:   scf.yield %[[W]], %{{.*}}
// CHECK: tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// SM100-LABEL: func.func @fp8_promoted
// SM100-NOT: tile.warpgroup_dot
// SM100: %[[A:.*]] = arith.extf %{{.*}} : tensor<128x128xf8E4M3FN{{.*}}> to tensor<128x128xbf16
// SM100: %[[B:.*]] = arith.extf %{{.*}} : tensor<128x128xf8E4M3FN{{.*}}> to tensor<128x128xbf16
// SM100-NOT: maxNumImpreciseAcc
// SM100: tile.warp_dot %[[A]], %[[B]], %{{.*}} : tensor<128x128xbf16
// SM100-NOT: maxNumImpreciseAcc
// SM100: return
func.func @fp8_promoted(%da: !DA, %db: !DB, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c128 = arith.constant 128 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !DA, !A
  tile.ring_issue %db[%c0, %c0] -> %rb[%c0] if %true : !DB, !B
  %acc, %n = scf.for %kk = %c0 to %k step %c128 iter_args(%acc = %zero, %it = %c0) -> (tensor<128x128xf32>, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %phase = arith.andi %it, %c1 : i32
    %a = tile.ring_wait_load %ra[%slot], %phase : !A -> tensor<128x128xf8E4M3FN>
    tile.ring_issue %da[%c0, %kk] -> %ra[%slot] if %true : !DA, !A
    %b = tile.ring_wait_load %rb[%slot], %phase : !B -> tensor<128x128xf8E4M3FN>
    tile.ring_issue %db[%c0, %kk] -> %rb[%slot] if %true : !DB, !B
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<128x128xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %d = tile.dot %a, %bt, %acc {maxNumImpreciseAcc = 64 : i32} : tensor<128x128xf8E4M3FN> * tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    %next = arith.addi %it, %c1 : i32
    scf.yield %d, %next : tensor<128x128xf32>, i32
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %p, %acc : tensor<128x128x!tile.ptr<f32>>
  return
}

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<64x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<64x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x64xbf16>>

// An MN-major B: `kl.dot(a, b)` with b the [K, N] box itself (N = 64: one
// 128-byte swizzled row per K), no transpose. sm_90a reads it in place with
// the transpose-B form of wgmma (`bMnMajor`); sm_100a/sm_103a run mma.sync.
// CHECK-LABEL: func.func @mn_major_b
// CHECK: scf.for
// CHECK:   tile.ring_wait %{{.*}}[%[[SLOT:.*]]], %{{.*}} : !tile.ring<3, tensor<128x64xbf16>>
// CHECK:   tile.ring_wait %{{.*}}[%[[SLOT]]], %{{.*}} : !tile.ring<3, tensor<64x64xbf16>>
// CHECK:   %[[D:.*]] = tile.warpgroup_dot %{{.*}}[%[[SLOT]]], %{{.*}}[%[[SLOT]]], %{{.*}} {bMnMajor} : !tile.ring<3, tensor<128x64xbf16>>, !tile.ring<3, tensor<64x64xbf16>>, tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK:   %[[W:.*]] = tile.warpgroup_dot_wait %[[D]] {pending = 1 : i32}
// CHECK:   tile.ring_issue
// CHECK:   tile.ring_issue
// CHECK:   scf.yield %[[W]], %{{.*}}
// CHECK-NOT: tile.warp_dot
// CHECK: tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// With mn-major-b=false the form runs mma.sync on sm_90a too.
// NOMN-LABEL: func.func @mn_major_b
// NOMN-NOT: tile.warpgroup_dot
// NOMN: tile.warp_dot
// NOMN-LABEL: func.func @mn_major_b_narrow
// SM100-LABEL: func.func @mn_major_b
// SM100-NOT: tile.tcgen05_dot
// SM100-NOT: tile.tmem_alloc
// SM100: tile.warp_dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64xbf16{{.*}}> * tensor<64x64xbf16{{.*}}> -> tensor<128x64xf32
func.func @mn_major_b(%da: !DA, %db: !DB, %dc: !DC, %k: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !DA, !A
  tile.ring_issue %db[%c0, %c0] -> %rb[%c0] if %true : !DB, !B
  %acc, %n = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero, %it = %c0) -> (tensor<128x64xf32>, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %phase = arith.andi %it, %c1 : i32
    %a = tile.ring_wait_load %ra[%slot], %phase : !A -> tensor<128x64xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%slot] if %true : !DA, !A
    %b = tile.ring_wait_load %rb[%slot], %phase : !B -> tensor<64x64xbf16>
    tile.ring_issue %db[%kk, %c0] -> %rb[%slot] if %true : !DB, !B
    %d = tile.dot %a, %b, %acc : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
    %next = arith.addi %it, %c1 : i32
    scf.yield %d, %next : tensor<128x64xf32>, i32
  }
  %h = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
  tile.desc_store %dc[%c0, %c0], %h : !DC, tensor<128x64xbf16>
  return
}

// -----

// An MN-major B box of 64-byte rows ([K, 32] bf16) is not the canonical
// MN-major 128-byte swizzle layout (64 elements of N per 128-byte row):
// mma.sync stays.
// CHECK-LABEL: func.func @mn_major_b_narrow
// CHECK-NOT: tile.warpgroup_dot
// CHECK: tile.warp_dot
// SM100-LABEL: func.func @mn_major_b_narrow
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @mn_major_b_narrow(%da: !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>, %db: !tile.tensordesc<tensor<64x32xbf16>, swizzle = 128>, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x32xf32>
  %ra = tile.ring_alloc : !tile.ring<2, tensor<128x64xbf16>>
  %rb = tile.ring_alloc : !tile.ring<2, tensor<64x32xbf16>>
  %acc = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero) -> (tensor<128x32xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !tile.ring<2, tensor<128x64xbf16>> -> tensor<128x64xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>, !tile.ring<2, tensor<128x64xbf16>>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !tile.ring<2, tensor<64x32xbf16>> -> tensor<64x32xbf16>
    tile.ring_issue %db[%kk, %c0] -> %rb[%c0] if %true : !tile.tensordesc<tensor<64x32xbf16>, swizzle = 128>, !tile.ring<2, tensor<64x32xbf16>>
    %d = tile.dot %a, %b, %acc : tensor<128x64xbf16> * tensor<64x32xbf16> -> tensor<128x32xf32>
    scf.yield %d : tensor<128x32xf32>
  }
  return
}

// -----

!A = !tile.ring<2, tensor<128x128xbf16>>
!B = !tile.ring<2, tensor<128x256xbf16>>
!DA = !tile.tensordesc<tensor<128x128xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<128x256xbf16>, swizzle = 128>

// Wide boxes (rows of several 128-byte swizzle spans): A [128, K = 128] in two
// 128-byte chunks of K, B the MN-major [K = 128, N = 256] in four 64-column
// chunks of N. sm_90a reads both in place (`bMnMajor`); tcgen05 describes
// K-major B only, so sm_100a/sm_103a run mma.sync.
// CHECK-LABEL: func.func @wide_mn_major_b
// CHECK: tile.warpgroup_dot %{{.*}}, %{{.*}} {bMnMajor} : !tile.ring<2, tensor<128x128xbf16>>, !tile.ring<2, tensor<128x256xbf16>>, tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NOT: tile.warp_dot
// SM100-LABEL: func.func @wide_mn_major_b
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @wide_mn_major_b(%da: !DA, %db: !DB, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %acc = scf.for %kk = %c0 to %k step %c128 iter_args(%acc = %zero) -> (tensor<128x256xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x128xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !DA, !A
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<128x256xbf16>
    tile.ring_issue %db[%kk, %c0] -> %rb[%c0] if %true : !DB, !B
    %d = tile.dot %a, %b, %acc : tensor<128x128xbf16> * tensor<128x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  return
}

// -----

!A = !tile.ring<2, tensor<128x128xbf16>>
!B = !tile.ring<2, tensor<128x128xbf16>>
!D = !tile.tensordesc<tensor<128x128xbf16>, swizzle = 128>

// A K-major B of a wide box ([N, K = 128], transposed): both operands in two
// 128-byte chunks of K, read in place on both archs.
// CHECK-LABEL: func.func @wide_k_major
// CHECK: tile.warpgroup_dot %{{.*}}, %{{.*}} : !tile.ring<2, tensor<128x128xbf16>>, !tile.ring<2, tensor<128x128xbf16>>, tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NOT: tile.warp_dot
// SM100-LABEL: func.func @wide_k_major
// SM100: tile.tcgen05_dot %{{.*}}, %{{.*}} : !tile.ring<2, tensor<128x128xbf16>>, !tile.ring<2, tensor<128x128xbf16>>, !tile.tmem<tensor<128x128xf32>>, !tile.mbarriers<2>
// SM100-NOT: tile.warp_dot
func.func @wide_k_major(%da: !D, %db: !D, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  %acc = scf.for %kk = %c0 to %k step %c128 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !A -> tensor<128x128xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !D, !A
    %b = tile.ring_wait_load %rb[%c0], %c0 : !B -> tensor<128x128xbf16>
    tile.ring_issue %db[%c0, %kk] -> %rb[%c0] if %true : !D, !B
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<128x128xbf16> -> tensor<128x128xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// FP8 has no transpose-B form of wgmma: an MN-major FP8 B goes to mma.sync (its
// operands widened to bf16) on every arch.
// CHECK-LABEL: func.func @mn_major_b_fp8
// CHECK-NOT: tile.warpgroup_dot
// CHECK: arith.extf
// CHECK: tile.warp_dot
// SM100-LABEL: func.func @mn_major_b_fp8
// SM100-NOT: tile.tcgen05_dot
// SM100: tile.warp_dot
func.func @mn_major_b_fp8(%da: !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>, %db: !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>, %k: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %ra = tile.ring_alloc : !tile.ring<2, tensor<128x128xf8E4M3FN>>
  %rb = tile.ring_alloc : !tile.ring<2, tensor<128x128xf8E4M3FN>>
  %acc = scf.for %kk = %c0 to %k step %c128 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %a = tile.ring_wait_load %ra[%c0], %c0 : !tile.ring<2, tensor<128x128xf8E4M3FN>> -> tensor<128x128xf8E4M3FN>
    tile.ring_issue %da[%c0, %kk] -> %ra[%c0] if %true : !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>, !tile.ring<2, tensor<128x128xf8E4M3FN>>
    %b = tile.ring_wait_load %rb[%c0], %c0 : !tile.ring<2, tensor<128x128xf8E4M3FN>> -> tensor<128x128xf8E4M3FN>
    tile.ring_issue %db[%kk, %c0] -> %rb[%c0] if %true : !tile.tensordesc<tensor<128x128xf8E4M3FN>, swizzle = 128>, !tile.ring<2, tensor<128x128xf8E4M3FN>>
    %d = tile.dot %a, %b, %acc : tensor<128x128xf8E4M3FN> * tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<128x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x128xbf16>>

// An epilogue on the accumulator (y = acc + 1, then acc * y: the forms of
// `acc + 1.0` and `acc * sigmoid(acc)`) runs in the mma layout: the splat it
// adds is built in that layout first, then the op on it, so every operand is defined
// before its use; the product of two values in the mma layout stays there;
// only the narrowed result is stored, with no conversion.
// CHECK-LABEL: func.func @epilogue
// CHECK: %[[DONE:.*]] = tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[DONE]], %[[ONE]] : tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: %[[Z:.*]] = arith.mulf %[[DONE]], %[[Y]] : tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: %[[H:.*]] = arith.truncf %[[Z]] : tensor<128x128xf32, #tile.mma<version = 3, numWarps = 8>> to tensor<128x128xbf16, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NOT: tile.convert_layout
// CHECK: tile.desc_store %{{.*}}, %[[H]]
// SM100-LABEL: func.func @epilogue
// SM100: %[[ACC:.*]] = arith.select
// SM100: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<128x128xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100-NEXT: %[[Y:.*]] = arith.addf %[[ACC]], %[[ONE]] : tensor<128x128xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100: %[[Z:.*]] = arith.mulf %[[ACC]], %[[Y]] : tensor<128x128xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100: %[[H:.*]] = arith.truncf %[[Z]]
// SM100-NOT: tile.convert_layout
// SM100: tile.desc_store %{{.*}}, %[[H]]
func.func @epilogue(%da: !DA, %db: !DA, %dc: !DC, %k: i32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %true = arith.constant true
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %one = arith.constant dense<1.0> : tensor<128x128xf32>
  %ra = tile.ring_alloc : !A
  %rb = tile.ring_alloc : !B
  tile.ring_issue %da[%c0, %c0] -> %ra[%c0] if %true : !DA, !A
  tile.ring_issue %db[%c0, %c0] -> %rb[%c0] if %true : !DA, !B
  %acc, %n = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %zero, %it = %c0) -> (tensor<128x128xf32>, i32) : i32 {
    %slot = arith.remui %it, %c3 : i32
    %phase = arith.andi %it, %c1 : i32
    %a = tile.ring_wait_load %ra[%slot], %phase : !A -> tensor<128x64xbf16>
    tile.ring_issue %da[%c0, %kk] -> %ra[%slot] if %true : !DA, !A
    %b = tile.ring_wait_load %rb[%slot], %phase : !B -> tensor<128x64xbf16>
    tile.ring_issue %db[%c0, %kk] -> %rb[%slot] if %true : !DA, !B
    %bt = tile.trans %b {order = array<i64: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %a, %bt, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    %next = arith.addi %it, %c1 : i32
    scf.yield %d, %next : tensor<128x128xf32>, i32
  }
  %y = arith.addf %acc, %one : tensor<128x128xf32>
  %z = arith.mulf %acc, %y : tensor<128x128xf32>
  %h = arith.truncf %z : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.desc_store %dc[%c0, %c0], %h : !DC, tensor<128x128xbf16>
  return
}

// -----

// Attention's q kᵀ: q loaded once before the loop, k in every iteration, both
// register tiles. sm_90a stages q once after its load (tile.stage) and k in
// every iteration for wgmma; the carried accumulator lives in the wgmma
// registers across the loop and is converted back after it.
// On sm_100a/sm_103a the dot is a tile.tcgen05_dot_staged into Tensor Memory
// allocated at the kernel's start (the widest dot's columns) and freed before
// its return; q is staged once as on sm_90a, the accumulator carried in the
// registers of the version 5 layout (tcgen05.ld's: a row a thread).
// CHECK-LABEL: func.func @staged
// CHECK: %[[QV:.*]] = tile.load %{{.*}} : tensor<128x128x!tile.ptr<bf16>>
// CHECK-NEXT: %[[Q:.*]] = tile.stage %[[QV]] : tensor<128x128xbf16> -> !tile.smem<tensor<128x128xbf16>>
// CHECK: %[[INIT:.*]] = tile.convert_layout %{{.*}} : tensor<128x64xf32> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK: %[[LOOP:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>)
// CHECK:   %[[K:.*]] = tile.load
// CHECK:   %[[D:.*]] = tile.warpgroup_dot_staged %[[Q]], %[[K]], %[[ACC]] : !tile.smem<tensor<128x128xbf16>> * tensor<128x64xbf16> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK:   scf.yield %[[D]]
// CHECK: tile.convert_layout %[[LOOP]] : tensor<128x64xf32, #tile.mma<version = 3, numWarps = 8>> -> tensor<128x64xf32>
// SM100-LABEL: func.func @staged
// SM100-SAME: tile.dots = ["{{[0-9]+}} tcgen05 staged"]
// SM100-NEXT: %[[TMEM:.*]] = tile.tmem_alloc : !tile.tmem<tensor<128x64xf32>>
// SM100: %[[Q:.*]] = tile.stage %{{.*}} : tensor<128x128xbf16> -> !tile.smem<tensor<128x128xbf16>>
// SM100: %[[INIT:.*]] = tile.convert_layout %{{.*}} : tensor<128x64xf32> -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100: %[[LOOP:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (tensor<128x64xf32, #tile.mma<version = 5, numWarps = 8>>)
// SM100:   %[[K:.*]] = tile.load
// SM100:   %[[D:.*]] = tile.tcgen05_dot_staged %[[Q]], %[[K]], %[[ACC]], %[[TMEM]] : !tile.smem<tensor<128x128xbf16>> * tensor<128x64xbf16> -> tensor<128x64xf32, #tile.mma<version = 5, numWarps = 8>>, !tile.tmem<tensor<128x64xf32>>
// SM100:   scf.yield %[[D]]
// SM100: tile.convert_layout %[[LOOP]] : tensor<128x64xf32, #tile.mma<version = 5, numWarps = 8>> -> tensor<128x64xf32>
// SM100: tile.tmem_dealloc %[[TMEM]] : !tile.tmem<tensor<128x64xf32>>
// SM100-NEXT: return
func.func @staged(%q: !tile.ptr<bf16>, %kt: !tile.ptr<bf16>, %n: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<128x128x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<128x128x!tile.ptr<bf16>>
  %kp = tile.splat %kt : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %kv = tile.load %kp : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %qv, %kv, %acc : tensor<128x128xbf16> * tensor<128x64xbf16> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  tile.store %p, %acc : tensor<128x64x!tile.ptr<f32>>
  return
}

// -----

// A dot outside any loop: its accumulator is converted in and out around it.
// K = 32 (not a multiple of 64) keeps mma.sync. The kernel records the unit
// of each dot (its line, then wgmma, wgmma staged, tcgen05 or mma.sync with
// the reason): the compile metadata's `dots`, no silent fallback.
// CHECK-LABEL: func.func @staged_once
// CHECK-SAME: tile.dots = ["{{[0-9]+}} wgmma staged", "{{[0-9]+}} mma.sync K = 32, N = 128: wgmma here takes K and N multiples of 64, N <= 256"]
// SM100-LABEL: func.func @staged_once
// SM100-SAME: tile.dots = ["{{[0-9]+}} mma.sync M = 64, K = 64, N = 128: tcgen05 here takes M = 128 (Tensor Memory's lanes), K and N multiples of 64, N <= 256", "{{[0-9]+}} mma.sync M = 64, K = 32
// CHECK: %[[IN:.*]] = tile.convert_layout %{{.*}} : tensor<64x128xf32> -> tensor<64x128xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[D:.*]] = tile.warpgroup_dot_staged %{{.*}}, %{{.*}}, %[[IN]] : tensor<64x64xf16> * tensor<64x128xf16> -> tensor<64x128xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.convert_layout %[[D]] : tensor<64x128xf32, #tile.mma<version = 3, numWarps = 4>> -> tensor<64x128xf32>
// CHECK: tile.warp_dot %{{.*}} : tensor<64x32xf16> * tensor<32x128xf16> -> tensor<64x128xf32, #tile.mma<version = 2, numWarps = 4>>
func.func @staged_once(%x: !tile.ptr<f16>, %acc: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ap = tile.splat %x : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %a = tile.load %ap : tensor<64x64x!tile.ptr<f16>>
  %bp = tile.splat %x : !tile.ptr<f16> -> tensor<64x128x!tile.ptr<f16>>
  %b = tile.load %bp : tensor<64x128x!tile.ptr<f16>>
  %cp = tile.splat %acc : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  %c = tile.load %cp : tensor<64x128x!tile.ptr<f32>>
  %d = tile.dot %a, %b, %c : tensor<64x64xf16> * tensor<64x128xf16> -> tensor<64x128xf32>
  %a2p = tile.splat %x : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %a2 = tile.load %a2p : tensor<64x32x!tile.ptr<f16>>
  %b2p = tile.splat %x : !tile.ptr<f16> -> tensor<32x128x!tile.ptr<f16>>
  %b2 = tile.load %b2p : tensor<32x128x!tile.ptr<f16>>
  %e = tile.dot %a2, %b2, %d : tensor<64x32xf16> * tensor<32x128xf16> -> tensor<64x128xf32>
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  tile.store %p, %e : tensor<64x128x!tile.ptr<f32>>
  return
}

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>

// A bias epilogue: on sm_90a the bias row is broadcast into the wgmma
// registers' layout (64 distinct columns a thread of the 128 elements it
// holds) and the sum stays there, stored from it; the accumulator never
// moves. On sm_100a/sm_103a a thread holds 128 columns of one row of the
// Tensor Memory load, as many as its elements: the accumulator is converted
// to the blocked layout. The rings' releases (after the loop, from
// kiln-tile-pipeline-loads) move up to just after the last dot's wait, before
// the epilogue: a conversion's buffer may then take the rings' bytes (on
// sm_100a/sm_103a after the accumulator's read from Tensor Memory).
// CHECK-LABEL: func.func @gemm_bias
// CHECK: scf.for
// CHECK: %[[DONE:.*]] = tile.warpgroup_dot_wait %{{.*}} {pending = 0 : i32}
// CHECK-NEXT: tile.ring_release %{{.*}} : !tile.ring<3, tensor<128x64xbf16>>
// CHECK-NEXT: tile.ring_release %{{.*}} : !tile.ring<3, tensor<256x64xbf16>>
// CHECK-NOT: tile.convert_layout
// CHECK: %[[ROW:.*]] = tile.expand_dims %{{.*}} {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
// CHECK-NOT: tile.convert_layout
// CHECK: %[[BIAS:.*]] = tile.broadcast %[[ROW]] : tensor<1x256xf32> -> tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[DONE]], %[[BIAS]] : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NEXT: %[[H:.*]] = arith.truncf %[[SUM]] : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>> to tensor<128x256xbf16, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NEXT: tile.desc_store %{{.*}}, %[[H]] : !tile.tensordesc<tensor<128x256xbf16>>, tensor<128x256xbf16, #tile.mma<version = 3, numWarps = 8>>
// SM100-LABEL: func.func @gemm_bias
// SM100: tile.tmem_load
// SM100: tile.ring_release
// SM100-NEXT: tile.ring_release
// SM100: tile.convert_layout
// SM100: arith.addf %{{.*}}, %{{.*}} : tensor<128x256xf32>{{$}}
func.func @gemm_bias(%da: !DA, %db: !DB, %dc: !DC, %k: i32, %pbias: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
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
  tile.ring_release %ra : !A
  tile.ring_release %rb : !B
  %ptrs = tile.splat %pbias : !tile.ptr<f32> -> tensor<256x!tile.ptr<f32>>
  %bias = tile.load %ptrs : tensor<256x!tile.ptr<f32>>
  %row = tile.expand_dims %bias {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
  %wide = tile.broadcast %row : tensor<1x256xf32> -> tensor<128x256xf32>
  %sum = arith.addf %acc, %wide : tensor<128x256xf32>
  %h = arith.truncf %sum : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.desc_store %dc[%c0, %c0], %h : !DC, tensor<128x256xbf16>
  return
}

// -----

!A = !tile.ring<3, tensor<128x64xbf16>>
!B = !tile.ring<3, tensor<256x64xbf16>>
!DA = !tile.tensordesc<tensor<128x64xbf16>, swizzle = 128>
!DB = !tile.tensordesc<tensor<256x64xbf16>, swizzle = 128>
!DC = !tile.tensordesc<tensor<128x256xbf16>>

// A per-row scale (a [128, 1] column broadcast along the rows): a thread of
// the wgmma layout holds 2 distinct rows, one of the Tensor Memory load
// (tcgen05's 32x32b lanes): the product stays in the accumulator's layout on
// every arch, the column broadcast into it.
// CHECK-LABEL: func.func @gemm_row_scale
// CHECK: tile.ring_release
// CHECK-NEXT: tile.ring_release
// CHECK-NOT: tile.convert_layout
// CHECK: %[[COL:.*]] = tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
// CHECK-NOT: tile.convert_layout
// CHECK: %[[SCALE:.*]] = tile.broadcast %[[COL]] : tensor<128x1xf32> -> tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// CHECK-NEXT: arith.mulf %{{.*}}, %[[SCALE]] : tensor<128x256xf32, #tile.mma<version = 3, numWarps = 8>>
// SM100-LABEL: func.func @gemm_row_scale
// SM100: tile.ring_release
// SM100-NEXT: tile.ring_release
// SM100-NOT: tile.convert_layout
// SM100: %[[COL:.*]] = tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
// SM100-NOT: tile.convert_layout
// SM100: %[[SCALE:.*]] = tile.broadcast %[[COL]] : tensor<128x1xf32> -> tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
// SM100-NEXT: arith.mulf %{{.*}}, %[[SCALE]] : tensor<128x256xf32, #tile.mma<version = 5, numWarps = 8>>
func.func @gemm_row_scale(%da: !DA, %db: !DB, %dc: !DC, %k: i32, %pscale: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
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
  tile.ring_release %ra : !A
  tile.ring_release %rb : !B
  %ptrs = tile.splat %pscale : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %scale = tile.load %ptrs : tensor<128x!tile.ptr<f32>>
  %col = tile.expand_dims %scale {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
  %wide = tile.broadcast %col : tensor<128x1xf32> -> tensor<128x256xf32>
  %prod = arith.mulf %acc, %wide : tensor<128x256xf32>
  %h = arith.truncf %prod : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.desc_store %dc[%c0, %c0], %h : !DC, tensor<128x256xbf16>
  return
}

// -----

// A mask of index arithmetic whose pieces two compares share (the keys `kb`,
// visible up to a per-row limit and below a bound: `(kb <= lb) & (kb < hi)`):
// the budget counts each op once (13 distinct, under 16; 19 as a tree), so
// the mask is rebuilt in the accumulator's layout and the scores never leave
// it.
// CHECK-LABEL: func.func @shared_index_mask
// CHECK: %[[S:.*]] = tile.warpgroup_dot_staged
// CHECK-NOT: tile.convert_layout
// CHECK: %[[V:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<64x64xi1, #tile.mma<version = 3, numWarps = 4>>
// CHECK: %[[M:.*]] = arith.select %[[V]], %[[S]], %{{.*}} : tensor<64x64xi1, #tile.mma<version = 3, numWarps = 4>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
// CHECK: tile.convert_layout %[[M]]
func.func @shared_index_mask(%q: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %n: i32, %p: i32, %hi: i32, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<64x64xf32>
  %qp = tile.splat %q : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %qv = tile.load %qp : tensor<64x64x!tile.ptr<bf16>>
  %kp = tile.splat %k : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %kv = tile.load %kp : tensor<64x64x!tile.ptr<bf16>>
  %kt = tile.trans %kv {order = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
  %s = tile.dot %qv, %kt, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %ns = tile.splat %n : i32 -> tensor<64xi32>
  %key = arith.addi %ns, %r : tensor<64xi32>
  %ke = tile.expand_dims %key {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %kb = tile.broadcast %ke : tensor<1x64xi32> -> tensor<64x64xi32>
  %ps = tile.splat %p : i32 -> tensor<64xi32>
  %lim = arith.addi %ps, %r : tensor<64xi32>
  %le = tile.expand_dims %lim {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %lb = tile.broadcast %le : tensor<64x1xi32> -> tensor<64x64xi32>
  %v1 = arith.cmpi sle, %kb, %lb : tensor<64x64xi32>
  %hs = tile.splat %hi : i32 -> tensor<64x64xi32>
  %v2 = arith.cmpi slt, %kb, %hs : tensor<64x64xi32>
  %v = arith.andi %v1, %v2 : tensor<64x64xi1>
  %m = arith.select %v, %s, %ninf : tensor<64x64xi1>, tensor<64x64xf32>
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  tile.store %op, %m : tensor<64x64x!tile.ptr<f32>>
  return
}
