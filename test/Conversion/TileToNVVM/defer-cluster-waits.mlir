// RUN: kiln-opt %s -kiln-defer-cluster-waits | FileCheck %s

// The closing wait of each exchange moves to the next op of its block that is
// or holds a cluster op, or to the block's terminator, and the exchange is
// marked to arrive alone: the first cluster_sum's wait lands after the mulf,
// just before the second cluster_sum; that one's just before the scf.for that
// holds a cluster_sum; the one in the loop body before its scf.yield; the
// tile.cluster_barrier is not an exchange and stays as it is (its own arrive
// and wait), and the last exchange before it waits just before it.
// CHECK-LABEL: func.func @deferred_waits
// CHECK: %[[A:.*]] = tile.cluster_sum %{{.*}} {kiln.cluster_wait_deferred}
// CHECK-NEXT: arith.mulf %[[A]], %[[A]]
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: tile.cluster_sum %{{.*}} {kiln.cluster_wait_deferred}
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: scf.for
// CHECK-NEXT: %[[E:.*]] = tile.cluster_sum %{{.*}} {kiln.cluster_wait_deferred}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: scf.yield %[[E]]
// CHECK: tile.store
// CHECK-NEXT: tile.cluster_barrier
// CHECK-NEXT: return
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

// An exchange last in its block waits before the terminator.
// CHECK-LABEL: func.func @last_in_block
// CHECK: tile.cluster_load %{{.*}} {kiln.cluster_wait_deferred}
// CHECK: tile.store
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: return
func.func @last_in_block(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %r: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32, tile.cluster_dims = array<i32: 2, 1, 1>} {
  %o = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  %p = tile.addptr %xs, %o : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
  %v = tile.load %p : tensor<32x!tile.ptr<f32>>
  %w = tile.cluster_load %v, %r : tensor<32xf32>
  tile.store %p, %w : tensor<32x!tile.ptr<f32>>
  return
}
