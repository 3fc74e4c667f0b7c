// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// CHECK: .version 8.8
// CHECK-SM90-NEXT: .target sm_90a
// CHECK-SM100-NEXT: .target sm_100a
// CHECK-SM103-NEXT: .target sm_103a
// CHECK-NEXT: .address_size 64

// A masked f32 copy with `other`: one predicated 16-byte load and store per
// thread (where the mask is off the loaded `other` is never stored, so it
// folds away).
// CHECK-LABEL: .visible .entry masked_copy_f32(
// CHECK: .reqntid 128, 1, 1
// CHECK: mov.u32 %r{{[0-9]+}}, %ctaid.x;
// CHECK: mov.u32 %r{{[0-9]+}}, %tid.x;
// CHECK: setp.{{.*}}.s32 %p[[P:[0-9]+]],
// CHECK: @%p[[P]] bra $L__BB0_[[SKIP:[0-9]+]];
// The 16 bytes move as 4 x b32 on sm_90a; on Blackwell the NVPTX backend picks
// 2 x b64 for a copy whose data is never used as f32.
// CHECK-SM90: ld.global.v4.b32 {%r[[A:[0-9]+]], %r[[B:[0-9]+]], %r[[C:[0-9]+]], %r[[D:[0-9]+]]}, [%rd{{[0-9]+}}];
// CHECK-SM90-NEXT: st.global.v4.b32 [%rd{{[0-9]+}}], {%r[[A]], %r[[B]], %r[[C]], %r[[D]]};
// CHECK-SM100: ld.global.v2.b64 {%rd[[A:[0-9]+]], %rd[[B:[0-9]+]]}, [%rd{{[0-9]+}}];
// CHECK-SM100-NEXT: st.global.v2.b64 [%rd{{[0-9]+}}], {%rd[[A]], %rd[[B]]};
// CHECK-SM103: ld.global.v2.b64 {%rd[[A:[0-9]+]], %rd[[B:[0-9]+]]}, [%rd{{[0-9]+}}];
// CHECK-SM103-NEXT: st.global.v2.b64 [%rd{{[0-9]+}}], {%rd[[A]], %rd[[B]]};
// CHECK-NEXT: $L__BB0_[[SKIP]]:
// CHECK-NEXT: ret;
// CHECK-NOT: ld.global
// CHECK-NOT: st.global
func.func @masked_copy_f32(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
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
  %v = tile.load %p, %m, %o : tensor<512x!tile.ptr<f32>>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %q = tile.addptr %ys, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %q, %v, %m : tensor<512x!tile.ptr<f32>>
  return
}
