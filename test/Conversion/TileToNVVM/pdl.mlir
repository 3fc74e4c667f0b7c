// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_90a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_100a | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_103a | FileCheck %s

// Programmatic dependent launch: tile.pdl_wait / tile.pdl_launch_dependents
// (kl.pdl_wait / kl.pdl_launch_dependents) become nvvm.griddepcontrol in place,
// on every arch, and mark the kernel (tile.pdl, feature "pdl") so that its
// bundle entry is launched with programmatic stream serialization. The
// dependent loads stay after the wait; the stores of the result after the
// launch of the dependents.

// CHECK-LABEL: llvm.func ptx_kernelcc @wait_load_launch_store(
// CHECK-SAME: tile.features = ["pdl"], tile.pdl}
// CHECK-NOT: llvm.load
// CHECK: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.load
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: llvm.store
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: llvm.return
func.func @wait_load_launch_store(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  tile.pdl_wait
  %v = tile.load %x : !tile.ptr<f32>
  tile.pdl_launch_dependents
  tile.store %x, %v : !tile.ptr<f32>
  return
}

// -----

// A loop of dependent loads: the wait stays before it, the launch after it.
// CHECK-LABEL: llvm.func ptx_kernelcc @around_a_loop(
// CHECK-SAME: tile.features = ["pdl"], tile.pdl}
// CHECK: nvvm.griddepcontrol wait
// CHECK-NEXT: scf.for
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: llvm.load
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK: llvm.store
func.func @around_a_loop(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  tile.pdl_wait
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
    %p = tile.addptr %x, %i : !tile.ptr<f32>, i32
    %v = tile.load %p : !tile.ptr<f32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  tile.pdl_launch_dependents
  tile.store %y, %s : !tile.ptr<f32>
  return
}

// -----

// Either op alone makes a PDL kernel (a producer that only launches its
// dependents early).
// CHECK-LABEL: llvm.func ptx_kernelcc @launch_only(
// CHECK-SAME: tile.features = ["pdl"], tile.pdl}
// CHECK-NOT: nvvm.griddepcontrol wait
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: nvvm.griddepcontrol wait
// CHECK: llvm.return
func.func @launch_only(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %v = tile.load %x : !tile.ptr<f32>
  tile.pdl_launch_dependents
  tile.store %x, %v : !tile.ptr<f32>
  return
}

// -----

// Without the ops: no griddepcontrol, no mark.
// CHECK-LABEL: llvm.func ptx_kernelcc @no_pdl(
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>} {
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: llvm.return
func.func @no_pdl(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %v = tile.load %x : !tile.ptr<f32>
  tile.store %x, %v : !tile.ptr<f32>
  return
}
