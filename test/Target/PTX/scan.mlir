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

// cumsum of 1024 f32 over 4 warps, 4 per run: two chunks (registers 0-3 and
// 4-7, 512 elements apart). Per chunk: the run is scanned in the thread (3
// adds), its total over the lanes by 5 Kogge-Stone shfl.sync.up (offsets 1..16,
// clamp 0, each kept only where the lane is at least the offset), the lane's
// exclusive prefix by one more shfl.sync.up by 1 and the warp's total by
// shfl.sync.idx from lane 31. The 2 chunks x 4 warps totals go through an
// 8-slot shared buffer between two bar.sync.
// CHECK-LABEL: .visible .entry cumsum_1d(
// CHECK: .reqntid 128, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_scan_smem_0[32];
// CHECK-COUNT-2: ld.global.v4.b32
// CHECK: and.b32 %r[[LANE:[0-9]+]], %r{{[0-9]+}}, 31;
// CHECK-COUNT-3: add.rn.f32
// CHECK-NEXT: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 1, 0, -1;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: setp.eq.b32 %p{{[0-9]+}}, %r[[LANE]], 0;
// CHECK-NEXT: selp.f32
// CHECK-NEXT: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 2, 0, -1;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, %r[[LANE]], 1;
// CHECK-NEXT: selp.f32
// CHECK-NEXT: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 4, 0, -1;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, %r[[LANE]], 3;
// CHECK-NEXT: selp.f32
// CHECK-NEXT: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 8, 0, -1;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, %r[[LANE]], 7;
// CHECK-NEXT: selp.f32
// CHECK-NEXT: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 16, 0, -1;
// CHECK-NEXT: add.rn.f32
// CHECK-NEXT: setp.gt.u32 %p{{[0-9]+}}, %r[[LANE]], 15;
// CHECK-NEXT: selp.f32 %r[[W0:[0-9]+]],
// CHECK-NEXT: shfl.sync.up.b32 %r{{[0-9]+}}, %r[[W0]], 1, 0, -1;
// CHECK-NEXT: shfl.sync.idx.b32 %r[[T0:[0-9]+]], %r[[W0]], 31, 31, -1;
// CHECK-COUNT-5: shfl.sync.up.b32
// CHECK: shfl.sync.up.b32
// CHECK-NEXT: shfl.sync.idx.b32 %r[[T1:[0-9]+]], %r{{[0-9]+}}, 31, 31, -1;
// CHECK-NOT: shfl.sync
// CHECK: st.shared.b32 [%rd[[SLOT:[0-9]+]]], %r[[T0]];
// CHECK-NEXT: st.shared.b32 [%rd[[SLOT]]+16], %r[[T1]];
// CHECK-NEXT: bar.sync 0;
// CHECK-NEXT: ld.shared.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [__kiln_scan_smem_0];
// CHECK: ld.shared.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [__kiln_scan_smem_0+16];
// CHECK: bar.sync 0;
// CHECK-NEXT: add.s64
// CHECK-NEXT: st.global.v4.b32
// CHECK-NEXT: st.global.v4.b32
// CHECK: ret;
func.func @cumsum_1d(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  %s = tile.scan %v {axis = 0 : i32} : tensor<1024xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.scan.return %c : f32
  }
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %q = tile.addptr %ys, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %q, %s : tensor<1024x!tile.ptr<f32>>
  return
}

// A running max of a [32, 32] i32 tile along axis 1 over 4 warps (a module's
// kernels share one layout), 4 per run: a row lies in 8 lanes of one warp
// (offsets 1, 2, 4 and the exclusive 1), so no shared memory, no barrier and no
// warp total; 2 rows per thread.
// CHECK-LABEL: .visible .entry cummax_rows(
// CHECK-NOT: .shared
// CHECK-COUNT-2: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 4, 0, -1;
// CHECK-NOT: shfl.sync.up.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 8,
// CHECK-NOT: shfl.sync.idx
// CHECK-NOT: bar.sync
// CHECK: ret;
func.func @cummax_rows(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %c32 = arith.constant 32 : i32
  %c32s = tile.splat %c32 : i32 -> tensor<32x1xi32>
  %rowoff = arith.muli %rows, %c32s : tensor<32x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %rb = tile.broadcast %rowoff : tensor<32x1xi32> -> tensor<32x32xi32>
  %cb = tile.broadcast %cols : tensor<1x32xi32> -> tensor<32x32xi32>
  %offs = arith.addi %rb, %cb : tensor<32x32xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<32x32x!tile.ptr<i32>>
  %p = tile.addptr %xs, %offs : tensor<32x32x!tile.ptr<i32>>, tensor<32x32xi32>
  %v = tile.load %p : tensor<32x32x!tile.ptr<i32>>
  %s = tile.scan %v {axis = 1 : i32} : tensor<32x32xi32> {
  ^bb0(%a: i32, %b: i32):
    %c = arith.maxsi %a, %b : i32
    tile.scan.return %c : i32
  }
  %ys = tile.splat %y : !tile.ptr<i32> -> tensor<32x32x!tile.ptr<i32>>
  %q = tile.addptr %ys, %offs : tensor<32x32x!tile.ptr<i32>>, tensor<32x32xi32>
  tile.store %q, %s : tensor<32x32x!tile.ptr<i32>>
  return
}
