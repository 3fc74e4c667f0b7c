// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-defer-cluster-waits -kiln-convert-tile-to-nvvm | FileCheck %s

// Cluster ids read their special registers (nvvm.read.ptx.sreg.*: %clusterid,
// %nclusterid, %cluster_ctaid, %cluster_ctarank, %cluster_nctarank, in the
// order of the ops); tile.cluster_barrier is an aligned arrive + wait.

// CHECK-LABEL: llvm.func ptx_kernelcc @cluster_registers
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK-NEXT: nvvm.read.ptx.sreg.clusterid.x : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.clusterid.y : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.clusterid.z : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.nclusterid.x : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.nclusterid.y : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.nclusterid.z : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.cluster.ctaid.x : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.cluster.ctaid.y : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.cluster.ctaid.z : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.cluster.ctarank : i32
// CHECK-NEXT: nvvm.read.ptx.sreg.cluster.nctarank : i32
// CHECK-COUNT-10: llvm.add
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NOT: tile.
func.func @cluster_registers(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %0 = tile.cluster_id x : i32
  %1 = tile.cluster_id y : i32
  %2 = tile.cluster_id z : i32
  %3 = tile.num_clusters x : i32
  %4 = tile.num_clusters y : i32
  %5 = tile.num_clusters z : i32
  %6 = tile.cluster_cta_id x : i32
  %7 = tile.cluster_cta_id y : i32
  %8 = tile.cluster_cta_id z : i32
  %9 = tile.cluster_cta_rank : i32
  %10 = tile.cluster_size : i32
  %a = arith.addi %0, %1 : i32
  %b = arith.addi %a, %2 : i32
  %c = arith.addi %b, %3 : i32
  %d = arith.addi %c, %4 : i32
  %e = arith.addi %d, %5 : i32
  %f = arith.addi %e, %6 : i32
  %g = arith.addi %f, %7 : i32
  %h = arith.addi %g, %8 : i32
  %i = arith.addi %h, %9 : i32
  %j = arith.addi %i, %10 : i32
  tile.cluster_barrier
  tile.store %x, %j : !tile.ptr<i32>
  return
}

// -----

// tile.cluster_load of a 1024xf32 tile over 128 threads (two runs of four per
// thread): the kernel carries nvvm.cluster_dim; each thread stores its runs
// (16 bytes each) at their row-major index in a 4 KiB shared buffer, a cluster
// barrier, one mapa of the buffer to %r, the same two 16-byte loads from
// there (!llvm.ptr<7>, shared::cluster), and a second cluster barrier.
// CHECK: llvm.mlir.global internal @__kiln_cluster_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1024 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @cluster_load
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %[[RANK:.*]]: i32)
// CHECK-SAME: attributes {nvvm.cluster_dim = array<i32: 2, 1, 1>, nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK-COUNT-2: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[BASE:.*]] = llvm.mul %[[TID]], %{{.*}} : i32
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_cluster_smem_0 : !llvm.ptr<3>
// CHECK: %[[I0:.*]] = llvm.add %[[BASE]], %{{.*}} : i32
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[BUF]][%[[I0]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK: llvm.store %{{.*}}, %[[P0]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: %[[C512:.*]] = llvm.mlir.constant(512 : i32) : i32
// CHECK: %[[I1:.*]] = llvm.add %[[BASE]], %[[C512]] : i32
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[BUF]][%[[I1]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
// CHECK: llvm.store %{{.*}}, %[[P1]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: %[[REMOTE:.*]] = nvvm.mapa %[[BUF]], %[[RANK]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: %[[Q0:.*]] = llvm.getelementptr %[[REMOTE]][%{{.*}}] : (!llvm.ptr<7>, i32) -> !llvm.ptr<7>, f32
// CHECK-NEXT: llvm.load %[[Q0]] {alignment = 16 : i64} : !llvm.ptr<7> -> vector<4xi32>
// CHECK: %[[Q1:.*]] = llvm.getelementptr %[[REMOTE]][%{{.*}}] : (!llvm.ptr<7>, i32) -> !llvm.ptr<7>, f32
// CHECK-NEXT: llvm.load %[[Q1]] {alignment = 16 : i64} : !llvm.ptr<7> -> vector<4xi32>
// CHECK-NOT: llvm.load
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: llvm.store %{{.*}} : vector<4xi32>, !llvm.ptr<1>
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: llvm.return
func.func @cluster_load(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %r: i32)
    attributes {tile.kernel, tile.cluster_dims = array<i32: 2, 1, 1>} {
  %o = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %p = tile.addptr %xs, %o : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<f32>>
  %w = tile.cluster_load %v, %r : tensor<1024xf32>
  tile.store %p, %w : tensor<1024x!tile.ptr<f32>>
  return
}

// -----

// A tile of i1 travels as bytes (zext, trunc), 16 per access; without
// tile.cluster_dims there is no nvvm.cluster_dim (a cluster of one).
// CHECK: llvm.mlir.global internal @__kiln_cluster_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
// CHECK-LABEL: llvm.func ptx_kernelcc @cluster_load_bool
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 32, 1, 1>}
// CHECK-COUNT-16: llvm.zext %{{.*}} : i1 to i8
// CHECK: llvm.bitcast %{{.*}} : vector<16xi8> to vector<4xi32>
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: nvvm.mapa
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<7> -> vector<4xi32>
// CHECK-NEXT: llvm.bitcast %{{.*}} : vector<4xi32> to vector<16xi8>
// CHECK-COUNT-16: llvm.trunc %{{.*}} : i8 to i1
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: llvm.return
func.func @cluster_load_bool(%x: !tile.ptr<i8> {tile.divisibility = 16 : i32}, %r: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %o = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : !tile.ptr<i8> -> tensor<64x!tile.ptr<i8>>
  %p = tile.addptr %xs, %o : tensor<64x!tile.ptr<i8>>, tensor<64xi32>
  %v = tile.load %p : tensor<64x!tile.ptr<i8>>
  %z = arith.constant dense<0> : tensor<64xi8>
  %m = arith.cmpi ne, %v, %z : tensor<64xi8>
  %w = tile.cluster_load %m, %r : tensor<64xi1>
  %e = arith.extui %w : tensor<64xi1> to tensor<64xi8>
  tile.store %p, %e : tensor<64x!tile.ptr<i8>>
  return
}

// -----

// tile.cluster_gather of a 512xf32 tile (128 threads, one run of four each) in
// a cluster of 2: the thread's run is stored once (16 bytes), ONE cluster
// barrier, then for each of the two runs of the 2x512 result (elements
// 4 tid and 512 + 4 tid) the rank is index >> 9 and the element index & 511:
// one mapa and one 16-byte load each; a second cluster barrier and no more.
// CHECK: llvm.mlir.global internal @__kiln_cluster_smem_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<512 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @cluster_gather
// CHECK-SAME: attributes {nvvm.cluster_dim = array<i32: 2, 1, 1>, nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK: %[[BUF:.*]] = llvm.mlir.addressof @__kiln_cluster_smem_0 : !llvm.ptr<3>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: %[[I0:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[R0:.*]] = llvm.lshr %[[I0]], %{{.*}} : i32
// CHECK-NEXT: %[[E0:.*]] = llvm.and %[[I0]], %{{.*}} : i32
// CHECK-NEXT: %[[M0:.*]] = nvvm.mapa %[[BUF]], %[[R0]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: %[[Q0:.*]] = llvm.getelementptr %[[M0]][%[[E0]]] : (!llvm.ptr<7>, i32) -> !llvm.ptr<7>, f32
// CHECK-NEXT: llvm.load %[[Q0]] {alignment = 16 : i64} : !llvm.ptr<7> -> vector<4xi32>
// CHECK-NOT: nvvm.cluster
// CHECK: %[[I1:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[R1:.*]] = llvm.lshr %[[I1]], %{{.*}} : i32
// CHECK-NEXT: %[[E1:.*]] = llvm.and %[[I1]], %{{.*}} : i32
// CHECK-NEXT: %[[M1:.*]] = nvvm.mapa %[[BUF]], %[[R1]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: %[[Q1:.*]] = llvm.getelementptr %[[M1]][%[[E1]]] : (!llvm.ptr<7>, i32) -> !llvm.ptr<7>, f32
// CHECK-NEXT: llvm.load %[[Q1]] {alignment = 16 : i64} : !llvm.ptr<7> -> vector<4xi32>
// CHECK-NOT: llvm.load
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: llvm.return
func.func @cluster_gather(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                          %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.cluster_dims = array<i32: 2, 1, 1>} {
  %o = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %o : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  %g = tile.cluster_gather %v : tensor<512xf32> -> tensor<2x512xf32>
  %r = tile.reshape %g : tensor<2x512xf32> -> tensor<1024xf32>
  %o2 = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %q = tile.addptr %ys, %o2 : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %q, %r : tensor<1024x!tile.ptr<f32>>
  return
}

// -----

// Booleans travel as bytes; a cluster of one (no tile.cluster_dims) gathers a
// [1, 64] tile: one publish, rank index >> 6 (always 0), two barriers.
// CHECK-LABEL: llvm.func ptx_kernelcc @cluster_gather_bool
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 32, 1, 1>}
// CHECK-COUNT-16: llvm.zext %{{.*}} : i1 to i8
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.mapa
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<7> -> vector<4xi32>
// CHECK-NEXT: llvm.bitcast %{{.*}} : vector<4xi32> to vector<16xi8>
// CHECK-COUNT-16: llvm.trunc %{{.*}} : i8 to i1
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: llvm.return
func.func @cluster_gather_bool(%x: !tile.ptr<i8> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %o = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : !tile.ptr<i8> -> tensor<64x!tile.ptr<i8>>
  %p = tile.addptr %xs, %o : tensor<64x!tile.ptr<i8>>, tensor<64xi32>
  %v = tile.load %p : tensor<64x!tile.ptr<i8>>
  %z = arith.constant dense<0> : tensor<64xi8>
  %m = arith.cmpi ne, %v, %z : tensor<64xi8>
  %g = tile.cluster_gather %m : tensor<64xi1> -> tensor<1x64xi1>
  %r = tile.reshape %g : tensor<1x64xi1> -> tensor<64xi1>
  %e = arith.extui %r : tensor<64xi1> to tensor<64xi8>
  tile.store %p, %e : tensor<64x!tile.ptr<i8>>
  return
}

// -----

// tile.cluster_sum of an f32 tile held whole by every thread (8 elements: one
// run, 32 threads) and an i32 tile (512 elements, 16 a thread) in a cluster of
// 4: both stored (a buffer each), ONE cluster barrier, then per rank 0..3 one
// mapa of each buffer and loads of the thread's own runs, added in rank order
// (fadd / add), a second cluster barrier; nothing moves between threads.
// CHECK-LABEL: llvm.func ptx_kernelcc @cluster_sum
// CHECK: llvm.mlir.addressof @__kiln_cluster_smem_{{[0-9]+}} : !llvm.ptr<3>
// CHECK: llvm.mlir.addressof @__kiln_cluster_smem_{{[0-9]+}} : !llvm.ptr<3>
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NOT: nvvm.shfl
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-3: nvvm.mapa
// CHECK: llvm.fadd
// CHECK-COUNT-5: nvvm.mapa
// CHECK-NOT: nvvm.mapa
// CHECK-NOT: nvvm.shfl
// CHECK-NOT: nvvm.barrier
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: llvm.store %{{.*}} : vector<4xi32>, !llvm.ptr<1>
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: llvm.return
func.func @cluster_sum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %n: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32, tile.cluster_dims = array<i32: 4, 1, 1>} {
  %o = tile.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<8x!tile.ptr<f32>>
  %p = tile.addptr %xs, %o : tensor<8x!tile.ptr<f32>>, tensor<8xi32>
  %v = tile.load %p : tensor<8x!tile.ptr<f32>>
  %o2 = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : !tile.ptr<i32> -> tensor<512x!tile.ptr<i32>>
  %q = tile.addptr %ns, %o2 : tensor<512x!tile.ptr<i32>>, tensor<512xi32>
  %w = tile.load %q : tensor<512x!tile.ptr<i32>>
  %s:2 = tile.cluster_sum %v, %w : tensor<8xf32>, tensor<512xi32>
  tile.store %p, %s#0 : tensor<8x!tile.ptr<f32>>
  tile.store %q, %s#1 : tensor<512x!tile.ptr<i32>>
  return
}

// -----

// The trailing wait of an exchange (after its remote reads) moves to the next
// op of its block that is or holds a cluster op, or to the terminator: here
// the arrive of the first cluster_sum, its arithmetic (the fmul), then the
// wait just before the second cluster_sum's buffer store; a cluster_sum in a
// loop body waits before the scf.yield (the next iteration's store comes
// after it); the scf.for that holds one takes the wait of the exchange before
// it; the tile.cluster_barrier at the end is its own arrive + wait.
// CHECK-LABEL: llvm.func ptx_kernelcc @deferred_waits
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.mapa
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: llvm.fmul
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: llvm.mlir.addressof @__kiln_cluster_smem_1
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.mapa
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: scf.for
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.mapa
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.wait {aligned}
// CHECK-NEXT: scf.yield
// CHECK-NOT: nvvm.cluster
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: llvm.return
func.func @deferred_waits(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32, tile.cluster_dims = array<i32: 2, 1, 1>} {
  %o = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  %p = tile.addptr %xs, %o : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
  %v = tile.load %p : tensor<32x!tile.ptr<f32>>
  %a = tile.cluster_sum %v : tensor<32xf32>
  %b = arith.mulf %a, %a : tensor<32xf32>
  %c = tile.cluster_sum %b : tensor<32xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %d = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<32xf32>) : i32 {
    %e = tile.cluster_sum %acc : tensor<32xf32>
    scf.yield %e : tensor<32xf32>
  }
  tile.store %p, %d : tensor<32x!tile.ptr<f32>>
  tile.cluster_barrier
  return
}
