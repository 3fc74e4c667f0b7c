// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// A peer's workspace: its address read from the peer table becomes a pointer
// (aligned to 16 bytes: the plain loads through it are 16-byte vectors); a
// poll of its words under a mask of unknown runs, one element at a time, each
// its own loop of ld.relaxed.sys reads timed by %globaltimer and backed off
// with nanosleep.
// CHECK-SM90: .target sm_90a
// CHECK-SM100: .target sm_100a
// CHECK-SM103: .target sm_103a
// CHECK-LABEL: .entry peer_poll(
// CHECK: ld.global.b64 %rd{{[0-9]+}}, [
// CHECK: ld.global.v{{4.b32|2.b64}}
// CHECK: mov.u64 %t0, %globaltimer;
// CHECK: kiln_poll:
// CHECK-NEXT: ld.relaxed.sys.global.b32
// CHECK-NEXT: setp.ne.b32 %p
// CHECK: setp.ge.u64 %p, %t, %rd{{[0-9]+}};
// CHECK: nanosleep.u32 %d;
// CHECK: min.u32 %d, %d, 1024;
// CHECK-NEXT: bra kiln_poll;
// CHECK-NEXT: kiln_poll_done:
// CHECK-COUNT-3: kiln_poll:
// CHECK-NOT: kiln_poll:
func.func @peer_poll(%table: !tile.ptr<i64> {tile.divisibility = 16 : i32}, %r: i32,
                     %out: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %slot = tile.addptr %table, %r : !tile.ptr<i64>, i32
  %address = tile.load %slot : !tile.ptr<i64>
  %base = tile.int_to_ptr %address {divisibility = 16 : i64} : !tile.ptr<i32>
  %range = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %bases = tile.splat %base : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %ptrs = tile.addptr %bases, %range : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  %plain = tile.load %ptrs : tensor<128x!tile.ptr<i32>>
  %bound = tile.splat %n : i32 -> tensor<128xi32>
  %mask = arith.cmpi slt, %range, %bound : tensor<128xi32>
  %polled = tile.load %ptrs, %mask ordered relaxed sys {poll_ns = 1000000 : i64} : tensor<128x!tile.ptr<i32>>
  %sum = arith.addi %plain, %polled : tensor<128xi32>
  %outs = tile.splat %out : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %dst = tile.addptr %outs, %range : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  tile.store %dst, %sum : tensor<128x!tile.ptr<i32>>
  return
}

// A poll under a mask constant over runs of 4 (its bound a multiple of 16) of
// 16-byte aligned words reads them 4 at a time (one access a thread here):
// the loop goes on until all four are non-zero.
// CHECK-LABEL: .entry peer_poll_vector(
// CHECK: kiln_poll:
// CHECK-NEXT: ld.relaxed.sys.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-NEXT: setp.ne.b32 %p, %r{{[0-9]+}}, 0;
// CHECK-NEXT: setp.ne.and.b32 %p, %r{{[0-9]+}}, 0, %p;
// CHECK-NEXT: setp.ne.and.b32 %p, %r{{[0-9]+}}, 0, %p;
// CHECK-NEXT: setp.ne.and.b32 %p, %r{{[0-9]+}}, 0, %p;
// CHECK-NEXT: @%p bra kiln_poll_done;
// CHECK-NOT: kiln_poll:
func.func @peer_poll_vector(%base: !tile.ptr<i32> {tile.divisibility = 16 : i32},
                            %n: i32 {tile.divisibility = 16 : i32},
                            %out: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 1 : i32} {
  %range = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %bases = tile.splat %base : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %ptrs = tile.addptr %bases, %range : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  %bound = tile.splat %n : i32 -> tensor<128xi32>
  %mask = arith.cmpi slt, %range, %bound : tensor<128xi32>
  %polled = tile.load %ptrs, %mask ordered relaxed sys {poll_ns = 1000000 : i64} : tensor<128x!tile.ptr<i32>>
  %outs = tile.splat %out : !tile.ptr<i32> -> tensor<128x!tile.ptr<i32>>
  %dst = tile.addptr %outs, %range : tensor<128x!tile.ptr<i32>>, tensor<128xi32>
  tile.store %dst, %polled : tensor<128x!tile.ptr<i32>>
  return
}
