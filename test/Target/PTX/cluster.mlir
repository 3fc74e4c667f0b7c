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

// Thread-block clusters: tile.cluster_dims becomes .explicitcluster +
// .reqnctapercluster; the cluster ids read their special registers, except
// what the cluster shape fixes (cluster_size = 4, cluster_cta_id z = 0 fold).
// CHECK-LABEL: .visible .entry cluster_ids(
// CHECK: .reqntid 128, 1, 1
// CHECK-NEXT: .explicitcluster
// CHECK-NEXT: .reqnctapercluster 2, 2, 1
// CHECK-NEXT: {
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %clusterid.x;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %clusterid.y;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %nclusterid.x;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %cluster_ctaid.x;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %cluster_ctaid.y;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %cluster_ctarank;
// CHECK-NOT: %cluster_ctaid.z
// CHECK-NOT: %cluster_nctarank
// CHECK: shl.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 2;
// CHECK: ret;
func.func @cluster_ids(%out: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.cluster_dims = array<i32: 2, 2, 1>} {
  %cx = tile.cluster_id x : i32
  %cy = tile.cluster_id y : i32
  %ncx = tile.num_clusters x : i32
  %ix = tile.cluster_cta_id x : i32
  %iy = tile.cluster_cta_id y : i32
  %iz = tile.cluster_cta_id z : i32
  %rank = tile.cluster_cta_rank : i32
  %size = tile.cluster_size : i32
  %a = arith.addi %cx, %cy : i32
  %b = arith.addi %a, %ncx : i32
  %c = arith.addi %b, %ix : i32
  %d = arith.addi %c, %iy : i32
  %e = arith.addi %d, %iz : i32
  %f = arith.muli %e, %size : i32
  %c512 = arith.constant 512 : i32
  %base = arith.muli %rank, %c512 : i32
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %bs = tile.splat %base : i32 -> tensor<512xi32>
  %offs = arith.addi %bs, %r : tensor<512xi32>
  %fs = tile.splat %f : i32 -> tensor<512xi32>
  %os = tile.splat %out : !tile.ptr<i32> -> tensor<512x!tile.ptr<i32>>
  %op = tile.addptr %os, %offs : tensor<512x!tile.ptr<i32>>, tensor<512xi32>
  tile.store %op, %fs : tensor<512x!tile.ptr<i32>>
  return
}

// tile.cluster_load: each thread stores its four elements (16 bytes) in the
// block's buffer, a cluster barrier, mapa of the buffer to the rank
// (cluster_cta_rank + 1) & 3, one 16-byte ld.shared::cluster of the same
// elements there, then the second cluster barrier's arrive; its wait comes
// after the sum and the store, just before the exit.
// CHECK-LABEL: .visible .entry cluster_sum(
// CHECK: .reqntid 128, 1, 1
// CHECK-NEXT: .explicitcluster
// CHECK-NEXT: .reqnctapercluster 4, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_cluster_smem_0[2048];
// CHECK: mov.u32 %r[[RANK:[0-9]+]], %cluster_ctarank;
// CHECK: add.s32 %r[[NEXT1:[0-9]+]], %r[[RANK]], 1;
// CHECK: and.b32 %r[[NEXT:[0-9]+]], %r[[NEXT1]], 3;
// CHECK: mov.b64 %rd[[BUF:[0-9]+]], __kiln_cluster_smem_0;
// CHECK: add.s64 %rd[[MINE:[0-9]+]], %rd[[BUF]], %rd[[OFF:[0-9]+]];
// CHECK-SM90-NEXT: st.shared.v4.b32 [%rd[[MINE]]], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-SM100-NEXT: st.shared.v2.b64 [%rd[[MINE]]], {%rd{{[0-9]+}}, %rd{{[0-9]+}}};
// CHECK-SM103-NEXT: st.shared.v2.b64 [%rd[[MINE]]], {%rd{{[0-9]+}}, %rd{{[0-9]+}}};
// CHECK-NEXT: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK-NEXT: mapa.shared::cluster.u64 %rd[[REMOTE:[0-9]+]], %rd[[BUF]], %r[[NEXT]];
// CHECK-NEXT: add.s64 %rd[[THEIRS:[0-9]+]], %rd[[REMOTE]], %rd[[OFF]];
// CHECK-NEXT: ld.shared::cluster.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd[[THEIRS]]];
// CHECK-NEXT: barrier.cluster.arrive.aligned;
// CHECK-NOT: barrier.cluster
// CHECK-COUNT-4: add.rn.f32
// CHECK: st.global.v4.b32
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK-NEXT: ret;
func.func @cluster_sum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.cluster_dims = array<i32: 4, 1, 1>} {
  %pid = tile.program_id x : i32
  %c512 = arith.constant 512 : i32
  %base = arith.muli %pid, %c512 : i32
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %bs = tile.splat %base : i32 -> tensor<512xi32>
  %offs = arith.addi %bs, %r : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %xp = tile.addptr %xs, %offs : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %xp : tensor<512x!tile.ptr<f32>>
  %rank = tile.cluster_cta_rank : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %next0 = arith.addi %rank, %c1 : i32
  %next = arith.andi %next0, %c3 : i32
  %w = tile.cluster_load %v, %next : tensor<512xf32>
  %sum = arith.addf %v, %w : tensor<512xf32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %yp = tile.addptr %ys, %offs : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %yp, %sum : tensor<512x!tile.ptr<f32>>
  return
}

// tile.cluster_gather + a sum over axis 0: the thread's 16 bytes stored once,
// ONE cluster barrier, then one mapa + 16-byte ld.shared::cluster per rank (the
// ranks fold to constants: the result's run k of thread t is element
// (k * 128 + t) * 4, rank k), the second cluster barrier's arrive, the sum in
// registers, rank 0 first, the store, and that barrier's wait before the exit.
// CHECK-LABEL: .visible .entry cluster_gather_sum(
// CHECK: .reqnctapercluster 4, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_cluster_smem_[[N:[0-9]+]][2048];
// CHECK: mov.b64 %rd[[BUF:[0-9]+]], __kiln_cluster_smem_[[N]];
// CHECK-NEXT: add.s64 %rd[[MINE:[0-9]+]], %rd[[BUF]], %rd[[OFF:[0-9]+]];
// CHECK-SM90-NEXT: st.shared.v4.b32 [%rd[[MINE]]], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-SM100-NEXT: st.shared.v2.b64 [%rd[[MINE]]], {%rd{{[0-9]+}}, %rd{{[0-9]+}}};
// CHECK-SM103-NEXT: st.shared.v2.b64 [%rd[[MINE]]], {%rd{{[0-9]+}}, %rd{{[0-9]+}}};
// CHECK-NEXT: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK-NEXT: mapa.shared::cluster.u64 %rd[[R0:[0-9]+]], %rd[[BUF]], 0;
// CHECK-NEXT: add.s64 %rd[[A0:[0-9]+]], %rd[[R0]], %rd[[OFF]];
// CHECK-NEXT: ld.shared::cluster.v4.b32 {%r[[X0:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd[[A0]]];
// CHECK-NEXT: mapa.shared::cluster.u64 %rd[[R1:[0-9]+]], %rd[[BUF]], 1;
// CHECK-NEXT: add.s64 %rd[[A1:[0-9]+]], %rd[[R1]], %rd[[OFF]];
// CHECK-NEXT: ld.shared::cluster.v4.b32 {%r[[X1:[0-9]+]], %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd[[A1]]];
// CHECK-NEXT: mapa.shared::cluster.u64 %rd[[R2:[0-9]+]], %rd[[BUF]], 2;
// CHECK-NEXT: add.s64 %rd{{[0-9]+}}, %rd[[R2]], %rd[[OFF]];
// CHECK-NEXT: ld.shared::cluster.v4.b32
// CHECK-NEXT: mapa.shared::cluster.u64 %rd[[R3:[0-9]+]], %rd[[BUF]], 3;
// CHECK-NEXT: add.s64 %rd{{[0-9]+}}, %rd[[R3]], %rd[[OFF]];
// CHECK-NEXT: ld.shared::cluster.v4.b32
// CHECK-NEXT: barrier.cluster.arrive.aligned;
// CHECK-NEXT: add.rn.f32 %r{{[0-9]+}}, %r[[X0]], %r[[X1]];
// CHECK-NOT: barrier.cluster
// CHECK-COUNT-11: add.rn.f32
// CHECK-NOT: barrier.cluster
// CHECK-NOT: bar.sync
// CHECK: st.global.v{{4.b32|2.b64}}
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK-NEXT: ret;
func.func @cluster_gather_sum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                              %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.cluster_dims = array<i32: 4, 1, 1>} {
  %pid = tile.program_id x : i32
  %c512 = arith.constant 512 : i32
  %base = arith.muli %pid, %c512 : i32
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %bs = tile.splat %base : i32 -> tensor<512xi32>
  %offs = arith.addi %bs, %r : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %xp = tile.addptr %xs, %offs : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %xp : tensor<512x!tile.ptr<f32>>
  %g = tile.cluster_gather %v : tensor<512xf32> -> tensor<4x512xf32>
  %sum = tile.reduce %g {axis = 0 : i32} : tensor<4x512xf32> -> tensor<512xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %yp = tile.addptr %ys, %offs : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %yp, %sum : tensor<512x!tile.ptr<f32>>
  return
}

// A cluster of 16 blocks (the non-portable size: the runtime opts in at load):
// the same .reqnctapercluster, a gather over 16 ranks, assembled for every arch.
// CHECK-LABEL: .visible .entry cluster_gather_16(
// CHECK: .explicitcluster
// CHECK-NEXT: .reqnctapercluster 16, 1, 1
// CHECK: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK: mapa.shared::cluster.u64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, 15;
// CHECK: ld.shared::cluster.v4.b32
// CHECK: ret;
func.func @cluster_gather_16(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                             %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.cluster_dims = array<i32: 16, 1, 1>} {
  %pid = tile.program_id x : i32
  %c512 = arith.constant 512 : i32
  %base = arith.muli %pid, %c512 : i32
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %bs = tile.splat %base : i32 -> tensor<512xi32>
  %offs = arith.addi %bs, %r : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %xp = tile.addptr %xs, %offs : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %xp : tensor<512x!tile.ptr<f32>>
  %g = tile.cluster_gather %v : tensor<512xf32> -> tensor<16x512xf32>
  %sum = tile.reduce %g {axis = 0 : i32} : tensor<16x512xf32> -> tensor<512xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %yp = tile.addptr %ys, %offs : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  tile.store %yp, %sum : tensor<512x!tile.ptr<f32>>
  return
}

// tile.cluster_sum over 4 blocks of a [4, 4] f32 tile and a [256] i64 tile:
// ld.shared::cluster of the thread's own elements from each rank, add.f32 /
// add.s64 in rank order; no bar.sync, no shuffle; the trailing barrier's wait
// after the stores.
// CHECK-LABEL: .visible .entry cluster_sum_4(
// CHECK: .reqnctapercluster 4, 1, 1
// CHECK: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK-NOT: bar.sync
// CHECK-NOT: shfl.sync
// CHECK: mapa.shared::cluster.u64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, 3;
// CHECK: ld.shared::cluster
// CHECK-NOT: bar.sync
// CHECK: barrier.cluster.arrive.aligned;
// CHECK-NOT: barrier.cluster
// CHECK: st.global
// CHECK: barrier.cluster.wait.aligned;
// CHECK-NEXT: ret;
func.func @cluster_sum_4(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                         %n: !tile.ptr<i64> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.cluster_dims = array<i32: 4, 1, 1>} {
  %o = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x!tile.ptr<f32>>
  %p = tile.addptr %xs, %o : tensor<16x!tile.ptr<f32>>, tensor<16xi32>
  %v = tile.load %p : tensor<16x!tile.ptr<f32>>
  %v2 = tile.reshape %v : tensor<16xf32> -> tensor<4x4xf32>
  %o2 = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %ns = tile.splat %n : !tile.ptr<i64> -> tensor<256x!tile.ptr<i64>>
  %q = tile.addptr %ns, %o2 : tensor<256x!tile.ptr<i64>>, tensor<256xi32>
  %w = tile.load %q : tensor<256x!tile.ptr<i64>>
  %s:2 = tile.cluster_sum %v2, %w : tensor<4x4xf32>, tensor<256xi64>
  %s2 = tile.reshape %s#0 : tensor<4x4xf32> -> tensor<16xf32>
  tile.store %p, %s2 : tensor<16x!tile.ptr<f32>>
  tile.store %q, %s#1 : tensor<256x!tile.ptr<i64>>
  return
}
