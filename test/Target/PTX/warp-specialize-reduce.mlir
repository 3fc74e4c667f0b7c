// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin

// A persistent row loop (the block's first row from the program id: the
// producer recomputes it) whose rows are reduced across the 4 consumer warps
// in registers: the ring slot is read into registers, so the previous slot is
// released right after the wait; the reduction's CTA barriers run among the
// consumers only, as the named barrier 1 of 128 threads (the 4 producer warps
// have left). 256 threads, 240 registers a consumer thread.
// CHECK-LABEL: .entry rows(
// CHECK: .reqntid 256, 1, 1
// CHECK-NEXT: .minnctapersm 1
// CHECK: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 4;
// CHECK: bar.sync 0;
// CHECK: setmaxnreg.inc.sync.aligned.u32 240;
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.arrive.shared.b64
// CHECK: bar.sync 1, 128;
// CHECK-NOT: bar.sync 0;
// CHECK: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK: mov.u32 %r{{[0-9]+}}, %ctaid.x;
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: elect.sync
// CHECK: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT: bar.sync
// CHECK: ret;
func.func @rows(%src: !tile.tensordesc<tensor<32x128xf16>>, %out: !tile.ptr<f32>, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %pid = tile.program_id x : i32
  %nprog = tile.num_programs x : i32
  %start = arith.muli %pid, %c32 : i32
  %step = arith.muli %nprog, %c32 : i32
  scf.for %row = %start to %n step %step : i32 {
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %u = arith.extf %t : tensor<32x128xf16> to tensor<32x128xf32>
    %sum = tile.reduce %u {axis = 0 : i32} : tensor<32x128xf32> -> tensor<128xf32> {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
    %rs = tile.splat %row : i32 -> tensor<128xi32>
    %ri = arith.addi %rs, %r : tensor<128xi32>
    %ps = tile.splat %out : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
    %pp = tile.addptr %ps, %ri : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
    tile.store %pp, %sum : tensor<128x!tile.ptr<f32>>
  } {tile.num_stages = 3 : i32, tile.warp_specialize}
  return
}
