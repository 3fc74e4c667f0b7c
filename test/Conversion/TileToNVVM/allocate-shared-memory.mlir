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
llvm.mlir.global internal @__kiln_small() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<12288 x f32>
llvm.func @k() attributes {nvvm.kernel} {
  %a = llvm.mlir.addressof @__kiln_small : !llvm.ptr<3>
  %x = llvm.load %a : !llvm.ptr<3> -> f32
  llvm.return
}

// -----

// expected-error @+1 {{the kernel needs 245760 bytes of shared memory, more than the 232448 a block may use}}
module {
  // expected-note @+1 {{__kiln_big: 196608 bytes}}
  llvm.mlir.global internal @__kiln_big() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<49152 x f32>
  // expected-note @+1 {{__kiln_more: 49152 bytes}}
  llvm.mlir.global internal @__kiln_more() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<12288 x f32>
}
