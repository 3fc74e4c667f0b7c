// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// Flag passing: an acquire load of a flag at gpu scope, a fence, data loads,
// release stores at system scope (one element each, never vectorized), and a
// relaxed f32 load moved as its bits.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry flags(
// CHECK: ld.acquire.gpu.global.b32
// CHECK: fence.acq_rel.gpu;
// CHECK: ld.relaxed.sys.global.b32
// CHECK-COUNT-4: st.release.sys.global.b64
// CHECK-NOT: st.global.v
func.func @flags(%flag: !tile.ptr<i32>, %x: !tile.ptr<f32>, %out: !tile.ptr<i64>) attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %f = tile.load %flag ordered acquire gpu : !tile.ptr<i32>
  tile.fence acq_rel, gpu
  %v = tile.load %x ordered relaxed sys : !tile.ptr<f32>
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %s = tile.splat %out : !tile.ptr<i64> -> tensor<128x!tile.ptr<i64>>
  %p = tile.addptr %s, %r : tensor<128x!tile.ptr<i64>>, tensor<128xi32>
  %fi = arith.extsi %f : i32 to i64
  %vb = arith.bitcast %v : f32 to i32
  %vi = arith.extsi %vb : i32 to i64
  %sum = arith.addi %fi, %vi : i64
  %t = tile.splat %sum : i64 -> tensor<128xi64>
  tile.store %p, %t ordered release sys : tensor<128x!tile.ptr<i64>>
  return
}

// Proxy fences: after an acquire of a flag, the generic proxy's view ordered
// with the async proxy's (a TMA load that reads what peers stored) for global
// memory, the CTA's shared memory, or every space.
// CHECK-LABEL: .entry proxy_fences(
// CHECK: ld.acquire.sys.global.b32
// CHECK: fence.proxy.async.global;
// CHECK: fence.proxy.async.shared::cta;
// CHECK: fence.proxy.async;
func.func @proxy_fences(%flag: !tile.ptr<i32>, %out: !tile.ptr<i64>) attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %f = tile.load %flag ordered acquire sys : !tile.ptr<i32>
  tile.fence_proxy_async global
  tile.fence_proxy_async shared_cta
  tile.fence_proxy_async all
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %s = tile.splat %out : !tile.ptr<i64> -> tensor<128x!tile.ptr<i64>>
  %p = tile.addptr %s, %r : tensor<128x!tile.ptr<i64>>, tensor<128xi32>
  %fi = arith.extsi %f : i32 to i64
  %t = tile.splat %fi : i64 -> tensor<128xi64>
  tile.store %p, %t : tensor<128x!tile.ptr<i64>>
  return
}
