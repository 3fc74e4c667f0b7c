// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A paged key block gathered through a 2-slot ring (kiln-tile-pipeline-loads on
// a tile.load of pointers in a loop of dots) through kiln-tile-to-llvm: the
// slots' mbarriers expect one arrival a thread (128); the block of the first
// iteration issued before the loop, each thread copying its 16-byte runs with
// cp.async.cg (the source size 0 where the row is masked off or the iteration
// is past the bound: zeros), then arriving once its copies land
// (cp.async.mbarrier.arrive.noinc); each iteration refills the slot read last
// iteration after a CTA barrier, waits for its own slot once, and both dots
// read it in place with ldmatrix (the ring `swizzled`: no copy of the keys into
// registers or scratch), the score dot with no CTA barrier (q staged once
// before the loop), the value dot after staging p.
// CHECK-LABEL: .entry gather(
// CHECK-NOT: __kiln_dot_b_smem
// CHECK: .shared .align 1024 .b8 __kiln_tma_ring_0[8208];
// CHECK: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 128;
// CHECK: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 128;
// CHECK: selp.b32 %r{{[0-9]+}}, 16, 0, %p{{[0-9]+}};
// CHECK: cp.async.cg.shared.global [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// CHECK: cp.async.mbarrier.arrive.noinc.shared.b64 [__kiln_tma_ring_0+8192];
// CHECK: bar.sync 0;
// CHECK: cp.async.cg.shared.global
// CHECK: cp.async.mbarrier.arrive.noinc.shared.b64
// CHECK-COUNT-1: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: bar.sync
// CHECK: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: bar.sync 0;
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-NOT: mbarrier.try_wait
// CHECK: mbarrier.inval.shared.b64
func.func @gather(%k: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %table: !tile.ptr<i32>, %qp: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                  %out: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %lb: i32, %ub: i32, %cnt: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c32 = arith.constant 32 : i32
  %acc0 = arith.constant dense<0.0> : tensor<16x64xf32>
  %rows = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %cols = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %qr = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %qs = tile.splat %qp : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %qa = tile.addptr %qs, %qr : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %q1 = tile.load %qa : tensor<1024x!tile.ptr<bf16>>
  %q = tile.reshape %q1 : tensor<1024xbf16> -> tensor<16x64xbf16>
  %r = scf.for %n = %lb to %ub step %c32 iter_args(%acc = %acc0) -> (tensor<16x64xf32>) : i32 {
    %nn = tile.splat %n : i32 -> tensor<32xi32>
    %keys = arith.addi %nn, %rows : tensor<32xi32>
    %tb = tile.splat %table : !tile.ptr<i32> -> tensor<32x!tile.ptr<i32>>
    %tp = tile.addptr %tb, %keys : tensor<32x!tile.ptr<i32>>, tensor<32xi32>
    %page = tile.load %tp : tensor<32x!tile.ptr<i32>>
    %c = tile.splat %cnt : i32 -> tensor<32xi32>
    %ok = arith.cmpi slt, %keys, %c : tensor<32xi32>
    // The block's pointers and mask, built for the score dot ...
    %c64a = arith.constant dense<64> : tensor<32xi32>
    %offa = arith.muli %page, %c64a : tensor<32xi32>
    %offa2 = tile.expand_dims %offa {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %kba = tile.splat %k : !tile.ptr<bf16> -> tensor<32x1x!tile.ptr<bf16>>
    %rowa = tile.addptr %kba, %offa2 : tensor<32x1x!tile.ptr<bf16>>, tensor<32x1xi32>
    %rowab = tile.broadcast %rowa : tensor<32x1x!tile.ptr<bf16>> -> tensor<32x64x!tile.ptr<bf16>>
    %colsa = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %colsab = tile.broadcast %colsa : tensor<1x64xi32> -> tensor<32x64xi32>
    %pa = tile.addptr %rowab, %colsab : tensor<32x64x!tile.ptr<bf16>>, tensor<32x64xi32>
    %oka = tile.expand_dims %ok {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
    %okab = tile.broadcast %oka : tensor<32x1xi1> -> tensor<32x64xi1>
    %za = arith.constant 0.0 : bf16
    %zas = tile.splat %za : bf16 -> tensor<32x64xbf16>
    %ka = tile.load %pa, %okab, %zas : tensor<32x64x!tile.ptr<bf16>>
    %kt = tile.trans %ka {order = array<i64: 1, 0>} : tensor<32x64xbf16> -> tensor<64x32xbf16>
    %s0 = arith.constant dense<0.0> : tensor<16x32xf32>
    %s = tile.dot %q, %kt, %s0 : tensor<16x64xbf16> * tensor<64x32xbf16> -> tensor<16x32xf32>
    %sb = arith.truncf %s : tensor<16x32xf32> to tensor<16x32xbf16>
    // ... and again for the value dot.
    %c64b = arith.constant dense<64> : tensor<32xi32>
    %offb = arith.muli %page, %c64b : tensor<32xi32>
    %offb2 = tile.expand_dims %offb {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %kbb = tile.splat %k : !tile.ptr<bf16> -> tensor<32x1x!tile.ptr<bf16>>
    %rowb = tile.addptr %kbb, %offb2 : tensor<32x1x!tile.ptr<bf16>>, tensor<32x1xi32>
    %rowbb = tile.broadcast %rowb : tensor<32x1x!tile.ptr<bf16>> -> tensor<32x64x!tile.ptr<bf16>>
    %colsb = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %colsbb = tile.broadcast %colsb : tensor<1x64xi32> -> tensor<32x64xi32>
    %pb = tile.addptr %rowbb, %colsbb : tensor<32x64x!tile.ptr<bf16>>, tensor<32x64xi32>
    %okb = tile.expand_dims %ok {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
    %okbb = tile.broadcast %okb : tensor<32x1xi1> -> tensor<32x64xi1>
    %kb = tile.load %pb, %okbb, %zas : tensor<32x64x!tile.ptr<bf16>>
    %acc2 = tile.dot %sb, %kb, %acc : tensor<16x32xbf16> * tensor<32x64xbf16> -> tensor<16x64xf32>
    scf.yield %acc2 : tensor<16x64xf32>
  } {tile.num_stages = 2 : i32}
  %os = tile.splat %out : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %oa = tile.addptr %os, %qr : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %r1 = tile.reshape %r : tensor<16x64xf32> -> tensor<1024xf32>
  tile.store %oa, %r1 : tensor<1024x!tile.ptr<f32>>
  return
}
