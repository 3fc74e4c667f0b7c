// RUN: kiln-opt %s -split-input-file -kiln-allocate-shared-memory -verify-diagnostics | FileCheck %s

// 40 KiB + 16 KiB of buffers (past the 48 KiB of static shared memory): one
// extern array, each buffer at an offset aligned as it was, the total on the
// kernel.
// CHECK-NOT: @__kiln_a
// CHECK-NOT: @__kiln_b
// CHECK: llvm.mlir.global external @__kiln_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @k
// CHECK-SAME: tile.shared_bytes = 57344 : i32
// CHECK: %[[BASE:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem : !llvm.ptr<3>
// CHECK: llvm.getelementptr %[[BASE]][0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[BASE2:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem : !llvm.ptr<3>
// CHECK: llvm.getelementptr %[[BASE2]][40960] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
llvm.mlir.global internal @__kiln_a() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<10240 x f32>
llvm.mlir.global internal @__kiln_b() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<16384 x i8>
llvm.func @k() attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_a : !llvm.ptr<3>
  %b = llvm.mlir.addressof @__kiln_b : !llvm.ptr<3>
  %x = llvm.load %a : !llvm.ptr<3> -> f32
  %y = llvm.load %b : !llvm.ptr<3> -> f32
  llvm.return
}

// -----

// 48 KiB fit in static shared memory: nothing changes.
// CHECK-LABEL: llvm.mlir.global internal @__kiln_small
// CHECK-NOT: __kiln_dynamic_smem
// CHECK-NOT: tile.shared_bytes
// CHECK: llvm.return
llvm.mlir.global internal @__kiln_small() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<12288 x f32>
llvm.func @k() attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_small : !llvm.ptr<3>
  %x = llvm.load %a : !llvm.ptr<3> -> f32
  llvm.return
}

// -----

// The error is at the buffer that reaches the top; the notes list the buffers
// live beside it, lowest first.
module {
  // expected-note @+1 {{__kiln_big: 196608 bytes at offset 0}}
  llvm.mlir.global internal @__kiln_big() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<49152 x f32>
  // expected-error @+2 {{the kernel needs 245760 bytes of shared memory, more than the 232448 a block may use}}
  // expected-note @+1 {{__kiln_more: 49152 bytes at offset 196608}}
  llvm.mlir.global internal @__kiln_more() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<12288 x f32>
}

// -----

// Past 48 KiB side by side, but the two 32 KiB buffers are live one after the
// other (the bar.sync after the last load of @__kiln_first ends it): both at
// offset 0, the kernel records 32 KiB, not 64.
// CHECK-LABEL: llvm.func @sequential
// CHECK-SAME: tile.shared_bytes = 32768 : i32
// CHECK: %[[A:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[A]][0]
// CHECK: %[[B:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[B]][0]
llvm.mlir.global internal @__kiln_first() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.mlir.global internal @__kiln_second() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.func @sequential(%v: f32) attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_first : !llvm.ptr<3>
  llvm.store %v, %a : f32, !llvm.ptr<3>
  nvvm.barrier
  %x = llvm.load %a : !llvm.ptr<3> -> f32
  nvvm.barrier
  %b = llvm.mlir.addressof @__kiln_second : !llvm.ptr<3>
  llvm.store %x, %b : f32, !llvm.ptr<3>
  nvvm.barrier
  %y = llvm.load %b : !llvm.ptr<3> -> f32
  nvvm.barrier
  llvm.return
}

// -----

// The same buffers with the second written before the first is last read
// (through a derived address): live together, side by side.
// CHECK-LABEL: llvm.func @overlapping
// CHECK-SAME: tile.shared_bytes = 65536 : i32
// CHECK: %[[A:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[A]][0]
// CHECK: %[[B:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[B]][32768]
llvm.mlir.global internal @__kiln_first() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.mlir.global internal @__kiln_second() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.func @overlapping(%v: f32, %i: i32) attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_first : !llvm.ptr<3>
  llvm.store %v, %a : f32, !llvm.ptr<3>
  nvvm.barrier
  %b = llvm.mlir.addressof @__kiln_second : !llvm.ptr<3>
  llvm.store %v, %b : f32, !llvm.ptr<3>
  %a1 = llvm.getelementptr %a[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
  %x = llvm.load %a1 : !llvm.ptr<3> -> f32
  nvvm.barrier
  %y = llvm.load %b : !llvm.ptr<3> -> f32
  nvvm.barrier
  llvm.return
}

// -----

// Inside a loop the first buffer's last read comes before the second's first
// write, but the next iteration writes the first again: both are live over
// the whole loop, side by side. The buffer used only before the loop (its
// bar.sync at the top of the body ends it) shares offset 0.
// CHECK-LABEL: llvm.func @loop
// CHECK-SAME: tile.shared_bytes = 65536 : i32
// CHECK: %[[P:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[P]][0]
// CHECK: scf.for
// CHECK: %[[A:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[A]][0]
// CHECK: %[[B:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[B]][32768]
llvm.mlir.global internal @__kiln_before() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.mlir.global internal @__kiln_first() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.mlir.global internal @__kiln_second() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.func @loop(%v: f32, %n: i32) attributes {nvvm.kernel} {
  %p = llvm.mlir.addressof @__kiln_before : !llvm.ptr<3>
  llvm.store %v, %p : f32, !llvm.ptr<3>
  nvvm.barrier
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %a = llvm.mlir.addressof @__kiln_first : !llvm.ptr<3>
    llvm.store %v, %a : f32, !llvm.ptr<3>
    nvvm.barrier
    %x = llvm.load %a : !llvm.ptr<3> -> f32
    nvvm.barrier
    %b = llvm.mlir.addressof @__kiln_second : !llvm.ptr<3>
    llvm.store %x, %b : f32, !llvm.ptr<3>
    nvvm.barrier
    %y = llvm.load %b : !llvm.ptr<3> -> f32
    nvvm.barrier
  }
  llvm.return
}

// -----

// A TMA box (the destination of cp.async.bulk) and its mbarrier are live over
// the whole kernel, though their last use comes before the other buffer's
// first: asynchronous writes are not ordered by bar.sync.
// CHECK-LABEL: llvm.func @async
// CHECK-SAME: tile.shared_bytes = 65544 : i32
// CHECK: %[[BOX:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[BOX]][0]
// CHECK: %[[BAR:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[BAR]][65536]
// CHECK: %[[LATER:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[LATER]][32768]
llvm.mlir.global internal @__kiln_box() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<8192 x f32>
llvm.mlir.global internal @__kiln_bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64
llvm.mlir.global internal @__kiln_later() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.func @async(%src: !llvm.ptr<1>, %v: f32) attributes {nvvm.kernel} {
  %box = llvm.mlir.addressof @__kiln_box : !llvm.ptr<3>
  %bar = llvm.mlir.addressof @__kiln_bar : !llvm.ptr<3>
  %size = llvm.mlir.constant(32768 : i32) : i32
  nvvm.cp.async.bulk.shared.cluster.global %box, %src, %bar, %size : !llvm.ptr<3>, !llvm.ptr<1>
  %x = llvm.load %box : !llvm.ptr<3> -> f32
  nvvm.barrier
  %l = llvm.mlir.addressof @__kiln_later : !llvm.ptr<3>
  llvm.store %x, %l : f32, !llvm.ptr<3>
  nvvm.barrier
  %y = llvm.load %l : !llvm.ptr<3> -> f32
  nvvm.barrier
  llvm.return
}

// -----

// Alignment: @__kiln_whole (40000 bytes) is live throughout, @__kiln_early
// (12000 bytes) and @__kiln_late (8000 bytes, 512-aligned) one after the
// other. Largest first: whole at 0, early after it at 40000, late clear of
// whole only, at 40000 rounded up to 512.
// CHECK-LABEL: llvm.func @aligned
// CHECK-SAME: tile.shared_bytes = 52000 : i32
// CHECK: %[[W:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[W]][0]
// CHECK: %[[E:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[E]][40000]
// CHECK: %[[L:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[L]][40448]
llvm.mlir.global internal @__kiln_whole() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<40000 x i8>
llvm.mlir.global internal @__kiln_early() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<12000 x i8>
llvm.mlir.global internal @__kiln_late() {addr_space = 3 : i32, alignment = 512 : i64} : !llvm.array<8000 x i8>
llvm.func @aligned(%v: i8) attributes {nvvm.kernel} {
  %w = llvm.mlir.addressof @__kiln_whole : !llvm.ptr<3>
  llvm.store %v, %w : i8, !llvm.ptr<3>
  %e = llvm.mlir.addressof @__kiln_early : !llvm.ptr<3>
  llvm.store %v, %e : i8, !llvm.ptr<3>
  nvvm.barrier
  %l = llvm.mlir.addressof @__kiln_late : !llvm.ptr<3>
  llvm.store %v, %l : i8, !llvm.ptr<3>
  nvvm.barrier
  %x = llvm.load %w : !llvm.ptr<3> -> i8
  llvm.return
}

// -----

// 2 x 120 KiB one after the other fit the 227 KiB once they share bytes.
// CHECK-LABEL: llvm.func @fits_after_reuse
// CHECK-SAME: tile.shared_bytes = 122880 : i32
llvm.mlir.global internal @__kiln_first() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<30720 x f32>
llvm.mlir.global internal @__kiln_second() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<30720 x f32>
llvm.func @fits_after_reuse(%v: f32) attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_first : !llvm.ptr<3>
  llvm.store %v, %a : f32, !llvm.ptr<3>
  nvvm.barrier
  %b = llvm.mlir.addressof @__kiln_second : !llvm.ptr<3>
  llvm.store %v, %b : f32, !llvm.ptr<3>
  nvvm.barrier
  llvm.return
}

// -----

// The error counts the bytes after reuse: 160 KiB and 80 KiB live together
// (240 KiB), the 100 KiB used after them shares their bytes (not 340 KiB) and
// is not listed: it is not live beside the top buffer.
module {
  // expected-note @+1 {{__kiln_big: 163840 bytes at offset 0}}
  llvm.mlir.global internal @__kiln_big() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<40960 x f32>
  // expected-error @+2 {{the kernel needs 245760 bytes of shared memory, more than the 232448 a block may use}}
  // expected-note @+1 {{__kiln_more: 81920 bytes at offset 163840}}
  llvm.mlir.global internal @__kiln_more() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<20480 x f32>
  llvm.mlir.global internal @__kiln_after() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<25600 x f32>
  llvm.func @k(%v: f32) attributes {nvvm.kernel} {
    %a = llvm.mlir.addressof @__kiln_big : !llvm.ptr<3>
    %b = llvm.mlir.addressof @__kiln_more : !llvm.ptr<3>
    llvm.store %v, %a : f32, !llvm.ptr<3>
    llvm.store %v, %b : f32, !llvm.ptr<3>
    nvvm.barrier
    %c = llvm.mlir.addressof @__kiln_after : !llvm.ptr<3>
    llvm.store %v, %c : f32, !llvm.ptr<3>
    llvm.return
  }
}

// -----

// Only the six lowest of the buffers beside the top one are listed, the others
// counted: seven of 36 KiB, placed in module order.
// expected-note @+1 {{and 1 more}}
module {
  // expected-note @+1 {{__kiln_a: 36864 bytes at offset 0}}
  llvm.mlir.global internal @__kiln_a() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
  // expected-note @+1 {{__kiln_b: 36864 bytes at offset 36864}}
  llvm.mlir.global internal @__kiln_b() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
  // expected-note @+1 {{__kiln_c: 36864 bytes at offset 73728}}
  llvm.mlir.global internal @__kiln_c() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
  // expected-note @+1 {{__kiln_d: 36864 bytes at offset 110592}}
  llvm.mlir.global internal @__kiln_d() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
  // expected-note @+1 {{__kiln_e: 36864 bytes at offset 147456}}
  llvm.mlir.global internal @__kiln_e() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
  // expected-note @+1 {{__kiln_f: 36864 bytes at offset 184320}}
  llvm.mlir.global internal @__kiln_f() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
  // expected-error @+1 {{the kernel needs 258048 bytes of shared memory, more than the 232448 a block may use}}
  llvm.mlir.global internal @__kiln_g() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x f32>
}

// -----

// Scratch buffers (tile.scratch) in a loop: each live from its address to the
// bar.sync after its last use in the loop body (a wgmma reading a descriptor
// of @__kiln_s1 is a use like any other), so both sit at offset 0. The plain
// buffer used in the same loop holds its bytes over the whole loop: it lands
// past them.
// CHECK-LABEL: llvm.func @scratch_in_loop
// CHECK-SAME: tile.shared_bytes = 98304 : i32
// CHECK: scf.for
// CHECK: %[[S1:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[S1]][0]
// CHECK: %[[S2:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[S2]][0]
// CHECK: %[[P:.*]] = llvm.mlir.addressof @__kiln_dynamic_smem
// CHECK: llvm.getelementptr %[[P]][65536]
llvm.mlir.global internal @__kiln_s1() {addr_space = 3 : i32, alignment = 1024 : i64, tile.scratch} : !llvm.array<65536 x i8>
llvm.mlir.global internal @__kiln_s2() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<16384 x f32>
llvm.mlir.global internal @__kiln_plain() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32>
llvm.func @scratch_in_loop(%n: i32, %v: f32) attributes {nvvm.kernel} {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %s1 = llvm.mlir.addressof @__kiln_s1 : !llvm.ptr<3>
    llvm.store %v, %s1 : f32, !llvm.ptr<3>
    %a = llvm.ptrtoint %s1 : !llvm.ptr<3> to i32
    %d = llvm.zext %a : i32 to i64
    llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned; // $0", "l" %d : (i64) -> ()
    nvvm.barrier
    %s2 = llvm.mlir.addressof @__kiln_s2 : !llvm.ptr<3>
    llvm.store %v, %s2 : f32, !llvm.ptr<3>
    %x = llvm.load %s2 : !llvm.ptr<3> -> f32
    nvvm.barrier
    %p = llvm.mlir.addressof @__kiln_plain : !llvm.ptr<3>
    llvm.store %x, %p : f32, !llvm.ptr<3>
  }
  llvm.return
}

// -----

// A scratch buffer with no CTA barrier after its last use keeps the general
// rule (live over the loop), beside the other one.
// CHECK-LABEL: llvm.func @scratch_without_barrier
// CHECK-SAME: tile.shared_bytes = 131072 : i32
llvm.mlir.global internal @__kiln_t1() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<65536 x i8>
llvm.mlir.global internal @__kiln_t2() {addr_space = 3 : i32, alignment = 16 : i64, tile.scratch} : !llvm.array<65536 x i8>
llvm.func @scratch_without_barrier(%n: i32, %v: f32) attributes {nvvm.kernel} {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %t1 = llvm.mlir.addressof @__kiln_t1 : !llvm.ptr<3>
    llvm.store %v, %t1 : f32, !llvm.ptr<3>
    nvvm.barrier
    %t2 = llvm.mlir.addressof @__kiln_t2 : !llvm.ptr<3>
    llvm.store %v, %t2 : f32, !llvm.ptr<3>
  }
  llvm.return
}

// -----

// The plan on the kernel: one string a buffer, largest first, "name bytes
// offset first-last" with the first and last source line (in the file of the
// buffer's statement) of the ops over which it is live (ops of other files,
// here the barriers, do not count): from its first access to the barrier
// after its last. Two 32 KiB phases, one after the other (lines 11-12, then
// 21-22), share offset 0; the 16 KiB buffer read in both phases is live over
// lines 11-22, beside them.
// CHECK-LABEL: llvm.func @two_phases
// CHECK-SAME: tile.shared_bytes = 49152 : i32
// CHECK-SAME: tile.shared_plan = ["__kiln_p1 32768 0 11-12", "__kiln_p2 32768 0 21-22", "__kiln_both 16384 32768 11-22"]
llvm.mlir.global internal @__kiln_p1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32> loc("k.py":10:1)
llvm.mlir.global internal @__kiln_p2() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x f32> loc("k.py":20:1)
llvm.mlir.global internal @__kiln_both() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4096 x f32> loc("k.py":10:1)
llvm.func @two_phases(%v: f32) attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_p1 : !llvm.ptr<3> loc("k.py":10:1)
  %c = llvm.mlir.addressof @__kiln_both : !llvm.ptr<3> loc("k.py":10:1)
  llvm.store %v, %a : f32, !llvm.ptr<3> loc("k.py":11:1)
  llvm.store %v, %c : f32, !llvm.ptr<3> loc("k.py":11:1)
  %x = llvm.load %a : !llvm.ptr<3> -> f32 loc("k.py":12:1)
  nvvm.barrier
  %b = llvm.mlir.addressof @__kiln_p2 : !llvm.ptr<3> loc("k.py":20:1)
  llvm.store %x, %b : f32, !llvm.ptr<3> loc("k.py":21:1)
  %y = llvm.load %b : !llvm.ptr<3> -> f32 loc("k.py":22:1)
  %z = llvm.load %c : !llvm.ptr<3> -> f32 loc("k.py":22:1)
  nvvm.barrier
  llvm.return loc("k.py":24:1)
}

// -----

// Buffers that fit side by side stay static: the plan lists them with offset
// -1 (the assembler places them), live to the end of the kernel here (no
// barrier follows the load).
// CHECK-LABEL: llvm.func @static_plan
// CHECK-SAME: tile.shared_plan = ["__kiln_s 4096 -1 31-32"]
// CHECK-NOT: tile.shared_bytes
llvm.mlir.global internal @__kiln_s() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1024 x f32> loc("s.py":30:1)
llvm.func @static_plan() attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_s : !llvm.ptr<3> loc("s.py":30:1)
  %x = llvm.load %a : !llvm.ptr<3> -> f32 loc("s.py":31:1)
  llvm.return loc("s.py":32:1)
}

// -----

// A `tile.drained` buffer (a TMA box, a released ring) is live from its first
// use to the barrier after its last whatever its uses are (here an
// asynchronous copy through inline PTX, which would make any other buffer
// live over the whole kernel): the 96 KiB buffer after the barrier takes its
// bytes. Without the attribute the copy's buffer stays live throughout.
// CHECK-LABEL: llvm.func @drained
// CHECK-SAME: tile.shared_bytes = 98304 : i32
// CHECK-SAME: tile.shared_plan = ["__kiln_later 98304 0 {{[0-9]+}}-{{[0-9]+}}", "__kiln_ring 65536 0 {{[0-9]+}}-{{[0-9]+}}"]
// CHECK-LABEL: llvm.func @not_drained
// CHECK-SAME: tile.shared_bytes = 163840 : i32
llvm.mlir.global internal @__kiln_ring() {addr_space = 3 : i32, alignment = 1024 : i64, tile.drained} : !llvm.array<65536 x i8>
llvm.mlir.global internal @__kiln_later() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<24576 x f32>
llvm.func @drained(%v: f32) attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_ring : !llvm.ptr<3>
  %i = llvm.ptrtoint %a : !llvm.ptr<3> to i32
  llvm.inline_asm has_side_effects "cp.async.bulk.wait_group.read 0; // $0", "r" %i : (i32) -> ()
  nvvm.barrier
  %b = llvm.mlir.addressof @__kiln_later : !llvm.ptr<3>
  llvm.store %v, %b : f32, !llvm.ptr<3>
  nvvm.barrier
  llvm.return
}

// -----

llvm.mlir.global internal @__kiln_copy() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<65536 x i8>
llvm.mlir.global internal @__kiln_after() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<24576 x f32>
llvm.func @not_drained(%v: f32) attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_copy : !llvm.ptr<3>
  %i = llvm.ptrtoint %a : !llvm.ptr<3> to i32
  llvm.inline_asm has_side_effects "cp.async.bulk.wait_group.read 0; // $0", "r" %i : (i32) -> ()
  nvvm.barrier
  %b = llvm.mlir.addressof @__kiln_after : !llvm.ptr<3>
  llvm.store %v, %b : f32, !llvm.ptr<3>
  nvvm.barrier
  llvm.return
}
