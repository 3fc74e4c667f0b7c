// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-tile-pipeline-loads | FileCheck %s

// A 3-stage ring: the loads of iterations 0 and 1 are issued before the loop
// (each under iv < ub); iteration `it` waits on slot it mod 3 with parity
// (it / 3) mod 2 and issues the load of iv + 2*step into slot (it + 2) mod 3.
// CHECK-LABEL: func.func @rows
// CHECK: %[[RING:.*]] = tile.ring_alloc : !tile.ring<3, tensor<32x128xf16>>
// CHECK: %[[IV0:.*]] = arith.addi %[[LB:.*]], %{{.*}} : i32
// CHECK: %[[OK0:.*]] = arith.cmpi slt, %[[IV0]], %[[UB:.*]] : i32
// CHECK: tile.ring_issue %{{.*}}[%[[IV0]], %{{.*}}] -> %[[RING]][%{{.*}}] if %[[OK0]]
// CHECK: %[[IV1:.*]] = arith.addi %[[LB]], %{{.*}} : i32
// CHECK: %[[OK1:.*]] = arith.cmpi slt, %[[IV1]], %[[UB]] : i32
// CHECK: tile.ring_issue %{{.*}}[%[[IV1]], %{{.*}}] -> %[[RING]][%{{.*}}] if %[[OK1]]
// CHECK: %[[N:.*]] = arith.constant 3 : i32
// CHECK: scf.for %[[IV:.*]] = %[[LB]] to %[[UB]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[IT:.*]] = %{{.*}}) -> (f32, i32)
// CHECK: %[[SLOT:.*]] = arith.remui %[[IT]], %[[N]] : i32
// CHECK: %[[DIV:.*]] = arith.divui %[[IT]], %[[N]] : i32
// CHECK: %[[PHASE:.*]] = arith.andi %[[DIV]], %{{.*}} : i32
// CHECK: %[[T:.*]] = tile.ring_wait_load %[[RING]][%[[SLOT]]], %[[PHASE]]
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IV]], %{{.*}} : i32
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[AHEAD]], %[[UB]] : i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[IT]], %{{.*}} : i32
// CHECK: %[[NSLOT:.*]] = arith.remui %[[NEXT]], %[[N]] : i32
// CHECK: tile.ring_issue %{{.*}}[%[[AHEAD]], %{{.*}}] -> %[[RING]][%[[NSLOT]]] if %[[OK]]
// CHECK: arith.extf %[[T]]
// CHECK: %[[INC:.*]] = arith.addi %[[IT]], %{{.*}} : i32
// CHECK: scf.yield %{{.*}}, %[[INC]] : f32, i32
// CHECK-NOT: tile.num_stages
// The ring is drained after the loop: released there (its bytes free for
// what follows).
// CHECK-NEXT: }
// CHECK-NEXT: tile.ring_release %[[RING]] : !tile.ring<3, tensor<32x128xf16>>
// CHECK-NEXT: return
func.func @rows(%src: !tile.tensordesc<tensor<32x128xf16>>, %lb: i32, %ub: i32) -> f32 {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  %s = scf.for %row = %lb to %ub step %c32 iter_args(%acc = %zero) -> (f32) : i32 {
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %u = arith.extf %t : tensor<32x128xf16> to tensor<32x128xf32>
    %sum = tile.reduce %u {axis = 0 : i32} : tensor<32x128xf32> -> tensor<128xf32> {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    %all = tile.reduce %sum {axis = 0 : i32} : tensor<128xf32> -> f32 {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    %acc2 = arith.addf %acc, %all : f32
    scf.yield %acc2 : f32
  } {tile.num_stages = 3 : i32}
  return %s : f32
}

// -----

// Coordinates that depend on a loop-carried value are not a function of the
// iteration: the load stays, with a warning naming why.
// CHECK-LABEL: func.func @carried_coordinate
// CHECK-NOT: tile.ring
// CHECK: tile.desc_load
func.func @carried_coordinate(%src: !tile.tensordesc<tensor<32x128xf16>>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-note @+1 {{here}}
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%row = %c0) -> (i32) : i32 {
    // expected-warning @+1 {{'tile.desc_load' is not pipelined (tile.num_stages = 2): its coordinates depend on a value the loop carries (not a function of the iteration)}}
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %next = arith.addi %row, %c1 : i32
    scf.yield %next : i32
  } {tile.num_stages = 2 : i32}
  return
}

// -----

// A 128 KiB box: not even 2 stages fit the 227 KiB of shared memory, so the
// load stays as it is.
// CHECK-LABEL: func.func @too_big
// CHECK-NOT: tile.ring_alloc
// CHECK: tile.desc_load
func.func @too_big(%src: !tile.tensordesc<tensor<256x256xf16>>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-warning @+1 {{the loads of the loop are not pipelined (tile.num_stages = 3): their rings need 263184 bytes of shared memory with 2 stages, more than the 232448 left beside the kernel's other boxes}}
  scf.for %i = %c0 to %ub step %c1 : i32 {
    %t = tile.desc_load %src[%i, %c0] : !tile.tensordesc<tensor<256x256xf16>> -> tensor<256x256xf16>
  } {tile.num_stages = 3 : i32}
  return
}

// -----

// Fewer stages where N would not fit: 64 KiB slots, 3 of the 4 requested.
// CHECK-LABEL: func.func @clamped
// CHECK: tile.ring_alloc : !tile.ring<3, tensor<256x128xf16>>
func.func @clamped(%src: !tile.tensordesc<tensor<256x128xf16>>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %ub step %c1 : i32 {
    %t = tile.desc_load %src[%i, %c0] : !tile.tensordesc<tensor<256x128xf16>> -> tensor<256x128xf16>
  } {tile.num_stages = 4 : i32}
  return
}

// -----

// A bulk load of a row whose pointer and count are functions of the
// iteration becomes a ring with a pointer source: the prologue issues the
// rows of iterations 0 and 1 (their pointers and counts recomputed); in the
// loop the row of iv + 2 is issued into slot (it + 2) mod 3 (the slot read
// last iteration) BEFORE the wait on slot it mod 3, whose read uses the
// current iteration's count.
// CHECK-LABEL: func.func @bulk_rows
// CHECK: %[[RING:.*]] = tile.ring_alloc : !tile.ring<3, tensor<8192xbf16>>
// CHECK: %[[IV0:.*]] = arith.addi %[[LB:.*]], %{{.*}} : i32
// CHECK: %[[OK0:.*]] = arith.cmpi slt, %[[IV0]], %[[UB:.*]] : i32
// CHECK: %[[OFF0:.*]] = arith.muli %[[IV0]], %[[STRIDE:.*]] : i32
// CHECK: %[[P0:.*]] = tile.addptr %[[X:.*]], %[[OFF0]]
// CHECK: %[[N0:.*]] = arith.subi %[[H:.*]], %[[IV0]] : i32
// CHECK: tile.ring_issue %[[P0]] count %[[N0]] -> %[[RING]][%{{.*}}] if %[[OK0]] : !tile.ptr<bf16>, !tile.ring<3, tensor<8192xbf16>>
// CHECK: tile.ring_issue %{{.*}} count %{{.*}} -> %[[RING]][%{{.*}}] if %{{.*}}
// CHECK: scf.for %[[IV:.*]] = %[[LB]] to %[[UB]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[IT:.*]] = %{{.*}}) -> (f32, i32)
// CHECK: %[[OFF:.*]] = arith.muli %[[IV]], %[[STRIDE]] : i32
// CHECK: %[[N:.*]] = arith.subi %[[H]], %[[IV]] : i32
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IV]], %{{.*}} : i32
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[AHEAD]], %[[UB]] : i32
// CHECK: %[[OFF2:.*]] = arith.muli %[[AHEAD]], %[[STRIDE]] : i32
// CHECK: %[[P2:.*]] = tile.addptr %[[X]], %[[OFF2]]
// CHECK: %[[N2:.*]] = arith.subi %[[H]], %[[AHEAD]] : i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[IT]], %{{.*}} : i32
// CHECK: %[[NSLOT:.*]] = arith.remui %[[NEXT]], %[[NSTAGES:.*]] : i32
// CHECK: tile.ring_issue %[[P2]] count %[[N2]] -> %[[RING]][%[[NSLOT]]] if %[[OK]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[IT]], %[[NSTAGES]] : i32
// CHECK: %[[PHASE:.*]] = arith.andi
// CHECK: %[[T:.*]] = tile.ring_wait_load %[[RING]][%[[SLOT]]], %[[PHASE]] count %[[N]] : !tile.ring<3, tensor<8192xbf16>> -> tensor<8192xbf16>
// CHECK: arith.extf %[[T]]
// CHECK-NOT: tile.bulk_load
func.func @bulk_rows(%x: !tile.ptr<bf16>, %lb: i32, %ub: i32, %stride: i32, %h: i32) -> f32 {
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %s = scf.for %row = %lb to %ub step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
    %off = arith.muli %row, %stride : i32
    %p = tile.addptr %x, %off : !tile.ptr<bf16>, i32
    %n = arith.subi %h, %row : i32
    %t = tile.bulk_load %p count %n : !tile.ptr<bf16> -> tensor<8192xbf16>
    %u = arith.extf %t : tensor<8192xbf16> to tensor<8192xf32>
    %all = tile.reduce %u {axis = 0 : i32} : tensor<8192xf32> -> f32 {
    ^bb0(%a: f32, %b: f32):
      %y = arith.addf %a, %b : f32
      tile.reduce.return %y : f32
    }
    %acc2 = arith.addf %acc, %all : f32
    scf.yield %acc2 : f32
  } {tile.num_stages = 3 : i32}
  return %s : f32
}

// -----

// A bulk load without a count, its pointer a select of two rows: the ring's
// issue and wait carry no count.
// CHECK-LABEL: func.func @bulk_select
// CHECK: tile.ring_alloc : !tile.ring<2, tensor<1024xf32>>
// CHECK: arith.select
// CHECK: tile.ring_issue %{{.*}} -> %{{.*}}[%{{.*}}] if %{{.*}} : !tile.ptr<f32>, !tile.ring<2, tensor<1024xf32>>
// CHECK: scf.for
// CHECK: arith.select
// CHECK: tile.ring_issue %{{.*}} -> %{{.*}}[%{{.*}}] if %{{.*}} : !tile.ptr<f32>
// CHECK: tile.ring_wait_load %{{.*}}[%{{.*}}], %{{.*}} : !tile.ring<2, tensor<1024xf32>> -> tensor<1024xf32>
func.func @bulk_select(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c8 = arith.constant 8 : i32
  %c1024 = arith.constant 1024 : i32
  scf.for %i = %c0 to %ub step %c1 : i32 {
    %off = arith.muli %i, %c1024 : i32
    %px = tile.addptr %x, %off : !tile.ptr<f32>, i32
    %last = arith.cmpi eq, %i, %c8 : i32
    %p = arith.select %last, %y, %px : !tile.ptr<f32>
    %t = tile.bulk_load %p : !tile.ptr<f32> -> tensor<1024xf32>
  } {tile.num_stages = 2 : i32}
  return
}

// -----

// A count carried through the loop is not a function of the iteration: the
// bulk load stays.
// CHECK-LABEL: func.func @bulk_carried_count
// CHECK-NOT: tile.ring
// CHECK: tile.bulk_load
func.func @bulk_carried_count(%x: !tile.ptr<bf16>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c8 = arith.constant 8 : i32
  // expected-note @+1 {{here}}
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%n = %c8) -> (i32) : i32 {
    // expected-warning @+1 {{'tile.bulk_load' is not pipelined (tile.num_stages = 3): its pointer or count depend on a value the loop carries}}
    %t = tile.bulk_load %x count %n : !tile.ptr<bf16> -> tensor<1024xbf16>
    %next = arith.addi %n, %c8 : i32
    scf.yield %next : i32
  } {tile.num_stages = 3 : i32}
  return
}

// -----

// A warp-specialized loop's ring is not released after it: its producer warps
// never reach the code after the loop (a CTA barrier there would wait for them).
// CHECK-LABEL: func.func @warp_specialized
// CHECK: tile.ring_alloc
// CHECK: scf.for
// CHECK: } {tile.warp_specialize}
// CHECK-NOT: tile.ring_release
// CHECK: return
func.func @warp_specialized(%src: !tile.tensordesc<tensor<32x128xf16>>, %ub: i32) -> f32 {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  %s = scf.for %row = %c0 to %ub step %c32 iter_args(%acc = %zero) -> (f32) : i32 {
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %u = arith.extf %t : tensor<32x128xf16> to tensor<32x128xf32>
    %all = tile.reduce %u {axis = 0 : i32} : tensor<32x128xf32> -> tensor<128xf32> {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    %one = tile.reduce %all {axis = 0 : i32} : tensor<128xf32> -> f32 {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    %acc2 = arith.addf %acc, %one : f32
    scf.yield %acc2 : f32
  } {tile.num_stages = 3 : i32, tile.warp_specialize}
  return %s : f32
}

// -----

// A paged coordinate: the row is a block-table entry (a scalar load of an
// argument the kernel does not write) times the page size plus the offset in
// the page. The slice, load included, is recomputed for the iterations the
// ring issues ahead, once for the two loads that share it; each recomputed
// table read is masked by that iteration's bound check (the table ends with
// the last page), like the issue itself.
// CHECK-LABEL: func.func @paged
// CHECK-SAME: (%[[SRC:.*]]: !tile.tensordesc<tensor<32x128xf16>>, %[[TABLE:.*]]: !tile.ptr<i32>, %{{.*}}: !tile.ptr<f32>, %[[LB:.*]]: i32, %[[UB:.*]]: i32)
// CHECK: %[[K:.*]] = tile.ring_alloc : !tile.ring<3, tensor<32x128xf16>>
// CHECK: %[[V:.*]] = tile.ring_alloc : !tile.ring<3, tensor<32x128xf16>>
// CHECK: %[[IV0:.*]] = arith.addi %[[LB]], %{{.*}} : i32
// CHECK: %[[OK0:.*]] = arith.cmpi slt, %[[IV0]], %[[UB]] : i32
// CHECK: %[[PAGE0:.*]] = arith.divsi %[[IV0]], %{{.*}} : i32
// CHECK: %[[P0:.*]] = tile.addptr %[[TABLE]], %[[PAGE0]] : !tile.ptr<i32>, i32
// CHECK: %[[ZERO0:.*]] = arith.constant 0 : i32
// CHECK: %[[ID0:.*]] = tile.load %[[P0]], %[[OK0]], %[[ZERO0]] : !tile.ptr<i32>
// CHECK: %[[BASE0:.*]] = arith.muli %[[ID0]], %{{.*}} : i32
// CHECK: %[[ROW0:.*]] = arith.addi %[[BASE0]], %{{.*}} : i32
// CHECK: tile.ring_issue %[[SRC]][%[[ROW0]], %{{.*}}] -> %[[K]][%{{.*}}] if %[[OK0]]
// CHECK-NOT: tile.load
// CHECK: tile.ring_issue %[[SRC]][%[[ROW0]], %{{.*}}] -> %[[V]][%{{.*}}] if %[[OK0]]
// CHECK: %[[OK1:.*]] = arith.cmpi slt, %{{.*}}, %[[UB]] : i32
// CHECK: tile.load %{{.*}}, %[[OK1]], %{{.*}} : !tile.ptr<i32>
// CHECK: tile.ring_issue %[[SRC]]
// CHECK: tile.ring_issue %[[SRC]]
// CHECK: scf.for %[[IV:.*]] = %[[LB]] to %[[UB]] step %{{.*}} iter_args(%[[IT:.*]] = %{{.*}}) -> (i32)
// CHECK: tile.ring_wait_load %[[K]]
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IV]], %{{.*}} : i32
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[AHEAD]], %[[UB]] : i32
// CHECK: %[[PAGE:.*]] = arith.divsi %[[AHEAD]], %{{.*}} : i32
// CHECK: %[[P:.*]] = tile.addptr %[[TABLE]], %[[PAGE]] : !tile.ptr<i32>, i32
// CHECK: %[[ID:.*]] = tile.load %[[P]], %[[OK]], %{{.*}} : !tile.ptr<i32>
// CHECK: %[[BASE:.*]] = arith.muli %[[ID]], %{{.*}} : i32
// CHECK: %[[ROW:.*]] = arith.addi %[[BASE]], %{{.*}} : i32
// CHECK: tile.ring_issue %[[SRC]][%[[ROW]], %{{.*}}] -> %[[K]][%{{.*}}] if %[[OK]]
// CHECK: tile.ring_wait_load %[[V]]
// CHECK-NOT: tile.load
// CHECK: tile.ring_issue %[[SRC]][%[[ROW]], %{{.*}}] -> %[[V]][%{{.*}}] if %[[OK]]
// CHECK-NOT: tile.desc_load
func.func @paged(%src: !tile.tensordesc<tensor<32x128xf16>>, %table: !tile.ptr<i32>, %out: !tile.ptr<f32>, %lb: i32, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c64 = arith.constant 64 : i32
  scf.for %n = %lb to %ub step %c32 : i32 {
    %page = arith.divsi %n, %c64 : i32
    %p = tile.addptr %table, %page : !tile.ptr<i32>, i32
    %id = tile.load %p : !tile.ptr<i32>
    %base = arith.muli %id, %c64 : i32
    %off = arith.remsi %n, %c64 : i32
    %row = arith.addi %base, %off : i32
    %k = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
    %v = tile.desc_load %src[%row, %c64] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
  } {tile.num_stages = 3 : i32}
  // A store through another argument does not touch the table.
  %zero = arith.constant 0.0 : f32
  tile.store %out, %zero : !tile.ptr<f32>
  return
}

// -----

// A masked table read keeps its mask, and its fill value, under the bound
// check of the iteration issued.
// CHECK-LABEL: func.func @paged_masked
// CHECK: %[[OK0:.*]] = arith.cmpi slt
// CHECK: %[[M0:.*]] = arith.andi %{{.*}}, %[[OK0]] : i1
// CHECK: tile.load %{{.*}}, %[[M0]], %[[FILL:.*]] : !tile.ptr<i32>
// CHECK: tile.ring_issue %{{.*}} if %[[OK0]]
func.func @paged_masked(%src: !tile.tensordesc<tensor<32x128xf16>>, %table: !tile.ptr<i32>, %pages: i32, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %fill = arith.constant 7 : i32
  scf.for %n = %c0 to %ub step %c1 : i32 {
    %p = tile.addptr %table, %n : !tile.ptr<i32>, i32
    %ok = arith.cmpi slt, %n, %pages : i32
    %row = tile.load %p, %ok, %fill : !tile.ptr<i32>
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
  } {tile.num_stages = 2 : i32}
  return
}

// -----

// A coordinate read from memory the kernel stores to (through the same
// argument) may change between iterations: not recomputed ahead, the load
// stays, with a warning at it and a note at the store.
// CHECK-LABEL: func.func @written_table
// CHECK-NOT: tile.ring
// CHECK: tile.desc_load
func.func @written_table(%src: !tile.tensordesc<tensor<32x128xf16>>, %table: !tile.ptr<i32>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %n = %c0 to %ub step %c1 : i32 {
    %p = tile.addptr %table, %n : !tile.ptr<i32>, i32
    %row = tile.load %p : !tile.ptr<i32>
    // expected-warning @+1 {{'tile.desc_load' is not pipelined (tile.num_stages = 2): its coordinates depend on 'tile.load' of memory that 'tile.store' writes (the same kernel argument)}}
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
  } {tile.num_stages = 2 : i32}
  %q = tile.addptr %table, %ub : !tile.ptr<i32>, i32
  // expected-note @+1 {{here}}
  tile.store %q, %c0 : !tile.ptr<i32>
  return
}

// -----

// A store whose pointer is not derived from the kernel's arguments
// (tile.int_to_ptr) might write the table.
// CHECK-LABEL: func.func @unknown_store
// CHECK-NOT: tile.ring
// CHECK: tile.desc_load
func.func @unknown_store(%src: !tile.tensordesc<tensor<32x128xf16>>, %table: !tile.ptr<i32>, %addr: i64, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %n = %c0 to %ub step %c1 : i32 {
    %p = tile.addptr %table, %n : !tile.ptr<i32>, i32
    %row = tile.load %p : !tile.ptr<i32>
    // expected-warning @+1 {{its coordinates depend on 'tile.load' of memory that 'tile.store' may write (its pointer does not derive from kernel arguments)}}
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
  } {tile.num_stages = 2 : i32}
  %q = tile.int_to_ptr %addr {divisibility = 4 : i64} : !tile.ptr<i32>
  // expected-note @+1 {{here}}
  tile.store %q, %c0 : !tile.ptr<i32>
  return
}

// -----

// A loop that orders memory (an acquire load: another agent may have
// written the table before it) keeps the table read in its iteration.
// CHECK-LABEL: func.func @ordered_loop
// CHECK-NOT: tile.ring
// CHECK: tile.desc_load
func.func @ordered_loop(%src: !tile.tensordesc<tensor<32x128xf16>>, %table: !tile.ptr<i32>, %flag: !tile.ptr<i32>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %n = %c0 to %ub step %c1 : i32 {
    // expected-note @+1 {{here}}
    %f = tile.load %flag ordered acquire gpu : !tile.ptr<i32>
    %p = tile.addptr %table, %n : !tile.ptr<i32>, i32
    %row = tile.load %p : !tile.ptr<i32>
    // expected-warning @+1 {{its coordinates depend on 'tile.load' that cannot move across 'tile.load' of the loop (it orders memory)}}
    %t = tile.desc_load %src[%row, %c0] : !tile.tensordesc<tensor<32x128xf16>> -> tensor<32x128xf16>
  } {tile.num_stages = 2 : i32}
  return
}

// -----

// A gather in a loop of dots: the block's pointers come from a block of table
// entries (a tile load of an argument the kernel does not write, recomputed for
// the iteration ahead under that iteration's bound check, splat over the
// block), the rows past a count masked (masked-off lanes zero). Its refill is
// issued before the wait, like a bulk row's. The second load of the same
// pointers and mask (built again, as two inlined helpers build them) reads the
// slot again: one ring.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[K:.*]]: !tile.ptr<bf16>, %[[TABLE:.*]]: !tile.ptr<i32>, %{{.*}}: tensor<16x64xbf16>, %[[LB:.*]]: i32, %[[UB:.*]]: i32, %{{.*}}: i32)
// CHECK: %[[RING:.*]] = tile.ring_alloc : !tile.ring<2, tensor<32x64xbf16>>
// CHECK: %[[OK0:.*]] = arith.cmpi slt, %{{.*}}, %[[UB]] : i32
// CHECK: %[[OKS0:.*]] = tile.splat %[[OK0]] : i1 -> tensor<32xi1>
// CHECK: tile.load %{{.*}}, %[[OKS0]], %{{.*}} : tensor<32x!tile.ptr<i32>>
// CHECK: tile.ring_issue %{{.*}} mask %{{.*}} : tensor<32x64xi1> -> %[[RING]][%{{.*}}] if %[[OK0]] : tensor<32x64x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x64xbf16>>
// CHECK: scf.for %[[IV:.*]] = %[[LB]] to %[[UB]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[IT:.*]] = %{{.*}}) -> (tensor<16x64xf32>, i32)
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IV]], %{{.*}} : i32
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[AHEAD]], %[[UB]] : i32
// CHECK: %[[OKS:.*]] = tile.splat %[[OK]] : i1 -> tensor<32xi1>
// CHECK: tile.load %{{.*}}, %[[OKS]], %{{.*}} : tensor<32x!tile.ptr<i32>>
// CHECK: tile.ring_issue %{{.*}} mask %{{.*}} : tensor<32x64xi1> -> %[[RING]][%{{.*}}] if %[[OK]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[IT]], %{{.*}} : i32
// CHECK: %[[PHASE:.*]] = arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: %[[T:.*]] = tile.ring_wait_load %[[RING]][%[[SLOT]]], %[[PHASE]] : !tile.ring<2, tensor<32x64xbf16>> -> tensor<32x64xbf16>
// CHECK: tile.trans %[[T]]
// CHECK: %[[T2:.*]] = tile.ring_wait_load %[[RING]][%[[SLOT]]], %[[PHASE]] {again} : !tile.ring<2, tensor<32x64xbf16>> -> tensor<32x64xbf16>
// CHECK: tile.dot %{{.*}}, %[[T2]], %{{.*}}
// CHECK-NOT: tile.load {{.*}}bf16
// CHECK: tile.ring_release %[[RING]]
func.func @gather(%k: !tile.ptr<bf16>, %table: !tile.ptr<i32>, %q: tensor<16x64xbf16>, %lb: i32, %ub: i32, %cnt: i32) -> tensor<16x64xf32> {
  %c32 = arith.constant 32 : i32
  %acc0 = arith.constant dense<0.0> : tensor<16x64xf32>
  %rows = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %cols = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
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
    %kb = tile.load %pb, %okbb : tensor<32x64x!tile.ptr<bf16>>
    %acc2 = tile.dot %sb, %kb, %acc : tensor<16x32xbf16> * tensor<32x64xbf16> -> tensor<16x64xf32>
    scf.yield %acc2 : tensor<16x64xf32>
  } {tile.num_stages = 2 : i32}
  return %r : tensor<16x64xf32>
}

// -----

// Two gathers (two column groups of the same rows): each its own ring, both
// refilled before their waits; the second refill of an iteration is `covered`
// (the first one's CTA barrier follows every read of both refilled slots, made
// in the iteration before), the prologue's are not.
// CHECK-LABEL: func.func @two_gathers
// CHECK: %[[R0:.*]] = tile.ring_alloc : !tile.ring<2, tensor<32x64xbf16>>
// CHECK: %[[R1:.*]] = tile.ring_alloc : !tile.ring<2, tensor<32x64xbf16>>
// CHECK: tile.ring_issue %{{.*}} -> %[[R0]][%{{.*}}] if %{{.*}} : tensor
// CHECK: tile.ring_issue %{{.*}} -> %[[R1]][%{{.*}}] if %{{.*}} : tensor
// CHECK: scf.for
// CHECK: tile.ring_issue %{{.*}} -> %[[R0]][%{{.*}}] if %{{.*}} : tensor
// CHECK: tile.ring_wait_load %[[R0]]
// CHECK: tile.ring_issue %{{.*}} -> %[[R1]][%{{.*}}] if %{{.*}} {covered} : tensor
// CHECK: tile.ring_wait_load %[[R1]]
func.func @two_gathers(%k: !tile.ptr<bf16>, %q: tensor<16x64xbf16>, %lb: i32, %ub: i32) -> tensor<16x32xf32> {
  %c32 = arith.constant 32 : i32
  %acc0 = arith.constant dense<0.0> : tensor<16x32xf32>
  %rows = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %cols = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %c128 = arith.constant dense<128> : tensor<32xi32>
  %c64 = arith.constant dense<64> : tensor<1x64xi32>
  %r = scf.for %n = %lb to %ub step %c32 iter_args(%acc = %acc0) -> (tensor<16x32xf32>) : i32 {
    %nn = tile.splat %n : i32 -> tensor<32xi32>
    %keys = arith.addi %nn, %rows : tensor<32xi32>
    %off = arith.muli %keys, %c128 : tensor<32xi32>
    %off2 = tile.expand_dims %off {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %kb = tile.splat %k : !tile.ptr<bf16> -> tensor<32x1x!tile.ptr<bf16>>
    %row = tile.addptr %kb, %off2 : tensor<32x1x!tile.ptr<bf16>>, tensor<32x1xi32>
    %rowb = tile.broadcast %row : tensor<32x1x!tile.ptr<bf16>> -> tensor<32x64x!tile.ptr<bf16>>
    %c0 = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %c0b = tile.broadcast %c0 : tensor<1x64xi32> -> tensor<32x64xi32>
    %p0 = tile.addptr %rowb, %c0b : tensor<32x64x!tile.ptr<bf16>>, tensor<32x64xi32>
    %k0 = tile.load %p0 : tensor<32x64x!tile.ptr<bf16>>
    %k0t = tile.trans %k0 {order = array<i64: 1, 0>} : tensor<32x64xbf16> -> tensor<64x32xbf16>
    %s0 = tile.dot %q, %k0t, %acc : tensor<16x64xbf16> * tensor<64x32xbf16> -> tensor<16x32xf32>
    %c1 = arith.addi %c0, %c64 : tensor<1x64xi32>
    %c1b = tile.broadcast %c1 : tensor<1x64xi32> -> tensor<32x64xi32>
    %p1 = tile.addptr %rowb, %c1b : tensor<32x64x!tile.ptr<bf16>>, tensor<32x64xi32>
    %k1 = tile.load %p1 : tensor<32x64x!tile.ptr<bf16>>
    %k1t = tile.trans %k1 {order = array<i64: 1, 0>} : tensor<32x64xbf16> -> tensor<64x32xbf16>
    %s1 = tile.dot %q, %k1t, %s0 : tensor<16x64xbf16> * tensor<64x32xbf16> -> tensor<16x32xf32>
    scf.yield %s1 : tensor<16x32xf32>
  } {tile.num_stages = 2 : i32}
  return %r : tensor<16x32xf32>
}
