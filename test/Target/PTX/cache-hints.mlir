// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// Cache hints (kl.load/kl.store cache_modifier and eviction_policy): every
// hinted access is one inline ld.global / st.global, the same on the three
// archs; its mask is a predicate inside the asm (`setp.ne.b32` of the i1 mask
// as a 32-bit value, `@%p`), so a masked access has no branch. The L2 priority
// of evict_first / evict_last is a `createpolicy.fractional` policy passed to
// `.L2::cache_hint` (sm_80+; `.L2::evict_*` qualifiers would need 256-bit
// accesses), the L1 priority `.L1::evict_*` unless a cache operator is given
// (PTX does not combine the two).
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a

// A masked f32 copy with `other`, 16 bytes per thread: the destinations take
// `other` (-1.0 = 0xBF800000 = -1082130432), then the predicated
// ld.global.L1::evict_first.L2::cache_hint.v4.b32; the store is
// st.global.cs.L2::cache_hint.v4.b32 under the same predicate. One policy for
// both (the createpolicy is pure). On every arch the words stay 4 x b32 (the
// unhinted copy is 2 x b64 on Blackwell, see masked-copy.mlir).
// CHECK-LABEL: .visible .entry hinted_copy_f32(
// CHECK: setp.lt.s32 %p[[M:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}};
// CHECK: createpolicy.fractional.L2::evict_first.b64 %rd[[POLICY:[0-9]+]], 1.0;
// CHECK: selp.b32 %r[[MASK:[0-9]+]], 1, 0, %p[[M]];
// CHECK-NEXT: mov.b32 %r[[OTHER:[0-9]+]], -1082130432;
// CHECK-NEXT: // begin inline asm
// CHECK-NEXT: {
// CHECK-NEXT: .reg .pred %p;
// CHECK-NEXT: setp.ne.b32 %p, %r[[MASK]], 0;
// CHECK-NEXT: mov.b32 %r[[A:[0-9]+]], %r[[OTHER]];
// CHECK-NEXT: mov.b32 %r[[B:[0-9]+]], %r[[OTHER]];
// CHECK-NEXT: mov.b32 %r[[C:[0-9]+]], %r[[OTHER]];
// CHECK-NEXT: mov.b32 %r[[D:[0-9]+]], %r[[OTHER]];
// CHECK-NEXT: @%p ld.global.L1::evict_first.L2::cache_hint.v4.b32 {%r[[A]], %r[[B]], %r[[C]], %r[[D]]}, [%rd{{[0-9]+}}], %rd[[POLICY]];
// CHECK-NEXT: }
// CHECK-NEXT: // end inline asm
// CHECK-NEXT: add.s64 %rd[[Q:[0-9]+]], %rd{{[0-9]+}}, %rd{{[0-9]+}};
// CHECK-NEXT: // begin inline asm
// CHECK-NEXT: {
// CHECK-NEXT: .reg .pred %p;
// CHECK-NEXT: setp.ne.b32 %p, %r[[MASK]], 0;
// CHECK-NEXT: @%p st.global.cs.L2::cache_hint.v4.b32 [%rd[[Q]]], {%r[[A]], %r[[B]], %r[[C]], %r[[D]]}, %rd[[POLICY]];
// CHECK-NEXT: }
// CHECK-NEXT: // end inline asm
// CHECK-NEXT: ret;
// CHECK-NOT: bra
// CHECK: }
func.func @hinted_copy_f32(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                           %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                           %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %pid = tile.program_id x : i32
  %c512 = arith.constant 512 : i32
  %start = arith.muli %pid, %c512 : i32
  %s = tile.splat %start : i32 -> tensor<512xi32>
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %off = arith.addi %s, %r : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %off, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %o = arith.constant dense<-1.0> : tensor<512xf32>
  %v = tile.load %p, %m, %o evict evict_first : tensor<512x!tile.ptr<f32>>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %q = tile.addptr %ys, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %q, %v, %m cache cs evict evict_first : tensor<512x!tile.ptr<f32>>
  return
}
