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

// c = a @ b + c for one 32x32x32 bf16 tile on 4 warps (row-major, unit
// strides), tile.warp_dot: the loaded accumulator converted into the mma.sync
// registers (#tile.mma version 2, 2 x 2 warps of 16 x 16) through shared
// memory (two barriers); a and b stored with 16-byte accesses (v4.b32 on
// sm_90a, v2.b64 on Blackwell), one bar.sync, then per k16 step one
// ldmatrix.x4.trans (B, two n-tiles), one ldmatrix.x4 (A) and two mma.sync;
// a closing bar.sync; the result converted back. No accumulator buffer.
// CHECK-LABEL: .visible .entry dot_acc(
// CHECK: .reqntid 128, 1, 1
// CHECK-DAG: .shared .align 16 .b8 __kiln_dot_a_smem_0[2560];
// CHECK-DAG: .shared .align 16 .b8 __kiln_dot_b_smem_0[2560];
// CHECK-NOT: __kiln_dot_acc_smem
// CHECK: bar.sync 0;
// CHECK: bar.sync 0;
// CHECK: st.shared.v{{4.b32|2.b64}}
// CHECK: bar.sync 0;
// CHECK-NOT: bar.sync
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-COUNT-2: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK: bar.sync 0;
// CHECK: st.global
// CHECK: ret;
func.func @dot_acc(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                   %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                   %c: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %rows = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<32x32xi32>
  %cols = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<32x32xi32>
  %c32 = arith.constant dense<32> : tensor<32x32xi32>
  %r32 = arith.muli %rows, %c32 : tensor<32x32xi32>
  %off = arith.addi %r32, %cols : tensor<32x32xi32>
  %as = tile.splat %a : !tile.ptr<bf16> -> tensor<32x32x!tile.ptr<bf16>>
  %ap = tile.addptr %as, %off : tensor<32x32x!tile.ptr<bf16>>, tensor<32x32xi32>
  %av = tile.load %ap : tensor<32x32x!tile.ptr<bf16>>
  %bs = tile.splat %b : !tile.ptr<bf16> -> tensor<32x32x!tile.ptr<bf16>>
  %bp = tile.addptr %bs, %off : tensor<32x32x!tile.ptr<bf16>>, tensor<32x32xi32>
  %bv = tile.load %bp : tensor<32x32x!tile.ptr<bf16>>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %off : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  %cv = tile.load %cp : tensor<32x32x!tile.ptr<f32>>
  %d = tile.dot %av, %bv, %cv : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  return
}

// The f16 form on a 16x8 output: one 16 x 8 tile, which every warp computes
// (warpsN = 1; the rows wrap, warps 1-3 hold copies): no branch.
// CHECK-LABEL: .visible .entry dot_f16(
// CHECK: .reqntid 128, 1, 1
// CHECK: bar.sync 0;
// CHECK-NOT: bra
// CHECK: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: mma.sync
// CHECK: bar.sync 0;
// CHECK: ret;
func.func @dot_f16(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                   %c: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<16x16x!tile.ptr<f16>>
  %x = tile.load %as : tensor<16x16x!tile.ptr<f16>>
  %bs = tile.splat %a : !tile.ptr<f16> -> tensor<16x8x!tile.ptr<f16>>
  %y = tile.load %bs : tensor<16x8x!tile.ptr<f16>>
  %zero = arith.constant dense<0.0> : tensor<16x8xf32>
  %d = tile.dot %x, %y, %zero : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<16x8x!tile.ptr<f32>>
  tile.store %cs, %d : tensor<16x8x!tile.ptr<f32>>
  return
}
