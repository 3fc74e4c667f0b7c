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
// strides): a and b stored to shared memory with 16-byte accesses (v4.b32 on
// sm_90a, v2.b64 on Blackwell), the accumulator too; each warp takes 2 of the 8 output tiles of 16x8 (tiles
// warp and warp + 4: the same columns, so LLVM reuses the B fragments) and
// runs 2 K steps of ldmatrix.x4 + ldmatrix.x2.trans + mma.sync on each.
// CHECK-LABEL: .visible .entry dot_acc(
// CHECK: .reqntid 128, 1, 1
// CHECK-DAG: .shared .align 16 .b8 __kiln_dot_a_smem_0[2560];
// CHECK-DAG: .shared .align 16 .b8 __kiln_dot_b_smem_0[2560];
// CHECK-DAG: .shared .align 16 .b8 __kiln_dot_acc_smem_0[5120];
// CHECK: st.shared.v{{4.b32|2.b64}}
// CHECK: bar.sync 0;
// CHECK: ld.shared.v2.b32
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-COUNT-3: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK: st.shared.v2.b32
// CHECK-NOT: ldmatrix
// CHECK: bar.sync 0;
// CHECK: ld.shared.v{{4.b32|2.b64}}
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

// The f16 form on a 16x8 output: one tile, so warps 1-3 branch around it.
// CHECK-LABEL: .visible .entry dot_f16(
// CHECK: .reqntid 128, 1, 1
// CHECK: bar.sync 0;
// CHECK: setp.gt.u32 %p[[P:[0-9]+]], %r{{[0-9]+}}, 31;
// CHECK: @%p[[P]] bra
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
