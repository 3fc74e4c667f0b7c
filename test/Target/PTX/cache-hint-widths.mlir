// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// Hinted accesses of every width VectorAccess gives (see cache-hints.mlir for
// the form of a hinted access): the same inline PTX on the three archs.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a

// 16 elements per thread (one warp): unaligned f16 one .b16 at a time (a masked load without `other` fills zero: mov.b16 0),
// unaligned i8 one .b8 at a time (in a 16-bit register), f64 one .b64 at a
// time, f32 in pairs (.v2.b32), i64 in pairs (16 bytes: .v4.b32).
// CHECK-LABEL: .visible .entry hinted_widths(
// CHECK: setp.ne.b32 %p, %r{{[0-9]+}}, 0;
// CHECK-NEXT: mov.b16 %rs[[H:[0-9]+]], 0;
// CHECK-NEXT: @%p ld.global.cg.b16 %rs[[H]], [%rd{{[0-9]+}}];
// CHECK: @%p st.global.wb.b16 [%rd{{[0-9]+}}], %rs[[H]];
// CHECK: createpolicy.fractional.L2::evict_first.b64 %rd[[FIRST:[0-9]+]], 1.0;
// CHECK: mov.b16 %rs[[B:[0-9]+]], 0;
// CHECK-NEXT: @%p ld.global.L1::evict_first.L2::cache_hint.b8 %rs[[B]], [%rd{{[0-9]+}}], %rd[[FIRST]];
// CHECK: @%p st.global.cg.b8 [%rd{{[0-9]+}}], %rs{{[0-9]+}};
// CHECK: ld.global.cv.b64 %rd{{[0-9]+}}, [%rd{{[0-9]+}}];
// CHECK: createpolicy.fractional.L2::evict_last.b64 %rd[[LAST:[0-9]+]], 1.0;
// CHECK: st.global.L1::evict_last.L2::cache_hint.b64 [%rd{{[0-9]+}}], %rd{{[0-9]+}}, %rd[[LAST]];
// CHECK: mov.b32 %r[[F:[0-9]+]], 1075838976;
// CHECK: mov.b32 %r[[F0:[0-9]+]], %r[[F]];
// CHECK-NEXT: mov.b32 %r[[F1:[0-9]+]], %r[[F]];
// CHECK-NEXT: @%p ld.global.L1::evict_last.L2::cache_hint.v2.b32 {%r[[F0]], %r[[F1]]}, [%rd{{[0-9]+}}], %rd[[LAST]];
// CHECK: @%p st.global.L1::evict_normal.v2.b32 [%rd{{[0-9]+}}], {%r[[F0]], %r[[F1]]};
// CHECK: ld.global.ca.L2::cache_hint.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}], %rd[[FIRST]];
// CHECK: st.global.cs.L2::cache_hint.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd[[FIRST]];
// A scalar hinted store is done by thread 0: its predicate in the asm is
// tid == 0 and the mask.
// CHECK: setp.eq.{{[bs]}}32 %p[[IS0:[0-9]+]], %r{{[0-9]+}}, 0;
// CHECK-NEXT: and.pred %p[[P:[0-9]+]], %p[[IS0]], %p{{[0-9]+}};
// CHECK-NEXT: selp.b32 %r[[PRED:[0-9]+]], 1, 0, %p[[P]];
// CHECK: setp.ne.b32 %p, %r[[PRED]], 0;
// CHECK-NEXT: @%p st.global.wt.b32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-NOT: bra
// CHECK-NOT: createpolicy
// CHECK: ret;
func.func @hinted_widths(%h: !tile.ptr<f16>, %b: !tile.ptr<i8>, %d: !tile.ptr<f64>,
                         %f: !tile.ptr<f32> {tile.divisibility = 8 : i32},
                         %l: !tile.ptr<i64> {tile.divisibility = 16 : i32},
                         %n: i32 {tile.divisibility = 16 : i32},
                         %s: !tile.ptr<i32>, %sv: i32, %sb: i1) attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %hs = tile.splat %h : !tile.ptr<f16> -> tensor<512x!tile.ptr<f16>>
  %hp = tile.addptr %hs, %r : tensor<512x!tile.ptr<f16>>, tensor<512xi32>
  %hv = tile.load %hp, %m cache cg : tensor<512x!tile.ptr<f16>>
  tile.store %hp, %hv, %m cache wb : tensor<512x!tile.ptr<f16>>
  %bs = tile.splat %b : !tile.ptr<i8> -> tensor<512x!tile.ptr<i8>>
  %bp = tile.addptr %bs, %r : tensor<512x!tile.ptr<i8>>, tensor<512xi32>
  %bv = tile.load %bp, %m evict evict_first : tensor<512x!tile.ptr<i8>>
  tile.store %bp, %bv, %m cache cg : tensor<512x!tile.ptr<i8>>
  %ds = tile.splat %d : !tile.ptr<f64> -> tensor<512x!tile.ptr<f64>>
  %dp = tile.addptr %ds, %r : tensor<512x!tile.ptr<f64>>, tensor<512xi32>
  %dv = tile.load %dp cache cv : tensor<512x!tile.ptr<f64>>
  tile.store %dp, %dv evict evict_last : tensor<512x!tile.ptr<f64>>
  %fs = tile.splat %f : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %fp = tile.addptr %fs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %fo = arith.constant dense<2.5> : tensor<512xf32>
  %fv = tile.load %fp, %m, %fo evict evict_last : tensor<512x!tile.ptr<f32>>
  tile.store %fp, %fv, %m evict evict_normal : tensor<512x!tile.ptr<f32>>
  %ls = tile.splat %l : !tile.ptr<i64> -> tensor<512x!tile.ptr<i64>>
  %lp = tile.addptr %ls, %r : tensor<512x!tile.ptr<i64>>, tensor<512xi32>
  %lv = tile.load %lp cache ca evict evict_first : tensor<512x!tile.ptr<i64>>
  tile.store %lp, %lv cache cs evict evict_first : tensor<512x!tile.ptr<i64>>
  tile.store %s, %sv, %sb cache wt : !tile.ptr<i32>
  return
}
