// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// Ordering and scope reach the PTX of every atomic.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry flags(
// CHECK: atom.relaxed.gpu.global.add.u32
// CHECK: atom.acq_rel.cta.global.max.s32
// CHECK: atom.release.sys.global.add.f32
// CHECK: atom.acquire.sys.global.exch.b64
// CHECK: atom.acq_rel.sys.global.cas.b32
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// CHECK: ld.shared.b32
func.func @flags(%p: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %f: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %q: !tile.ptr<i64>, %flag: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %s = tile.splat %p : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %ps = tile.addptr %s, %r : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  %old = tile.atomic_rmw add, relaxed, gpu %ps, %r : tensor<128x!tile.ptr<i32>>
  %x = tile.atomic_rmw max, acq_rel, cta %ps, %old : tensor<128x!tile.ptr<i32>>
  %fs = tile.splat %f : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %fp = tile.addptr %fs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %one = arith.constant dense<1.0> : tensor<128xf32>
  %y = tile.atomic_rmw fadd, release, sys %fp, %one : tensor<128x!tile.ptr<f32>>
  %c7 = arith.constant 7 : i64
  %z = tile.atomic_rmw xchg, acquire, sys %q, %c7 : !tile.ptr<i64>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %prev = tile.atomic_cas acq_rel, sys %flag, %c0, %c1 : !tile.ptr<i32>
  tile.store %flag, %prev : !tile.ptr<i32>
  return
}
