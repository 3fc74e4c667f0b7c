// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// A tile kernel becomes an llvm.func with the PTX kernel calling convention,
// nvvm.kernel and nvvm.reqntid = threads per block; pointers become
// !llvm.ptr<1>; tile.divisibility does not survive.

// CHECK-LABEL: llvm.func ptx_kernelcc @signature
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i64, %{{.*}}: f32, %{{.*}}: bf16)
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK-NEXT: llvm.return
// CHECK-NOT: func.func
// CHECK-NOT: tile.divisibility
func.func @signature(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32>,
                     %n: i32 {tile.divisibility = 16 : i32}, %m: i64, %a: f32, %b: bf16)
    attributes {tile.kernel} {
  return
}

// -----

// tile.num_warps = 8 -> 256 threads.
// CHECK-LABEL: llvm.func ptx_kernelcc @eight_warps
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 256, 1, 1>}
func.func @eight_warps(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  return
}

// -----

// tile.cluster_dims -> nvvm.cluster_dim (PTX .explicitcluster +
// .reqnctapercluster 2, 2, 1).
// CHECK-LABEL: llvm.func ptx_kernelcc @clustered
// CHECK-SAME: attributes {nvvm.cluster_dim = array<i32: 2, 2, 1>, nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
func.func @clustered(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.cluster_dims = array<i32: 2, 2, 1>} {
  return
}

// -----

// tile.maxnreg -> nvvm.maxnreg (PTX .maxnreg).
// CHECK-LABEL: llvm.func ptx_kernelcc @capped
// CHECK-SAME: attributes {nvvm.kernel, nvvm.maxnreg = 64 : i32, nvvm.reqntid = array<i32: 128, 1, 1>}
func.func @capped(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.maxnreg = 64 : i32} {
  return
}

// -----

// tile.min_programs_per_sm -> nvvm.minctasm (PTX .minnctapersm 2: ptxas keeps
// the registers to 65536 / (2 x 128) a thread).
// CHECK-LABEL: llvm.func ptx_kernelcc @two_an_sm
// CHECK-SAME: attributes {nvvm.kernel, nvvm.minctasm = 2 : i32, nvvm.reqntid = array<i32: 128, 1, 1>}
func.func @two_an_sm(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.min_programs_per_sm = 2 : i32} {
  return
}

// -----

// One warp.
// CHECK-LABEL: llvm.func ptx_kernelcc @one_warp
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 32, 1, 1>}
func.func @one_warp() attributes {tile.kernel, tile.num_warps = 1 : i32} {
  return
}

// -----

// Two kernels of one layout in one module.
// CHECK-LABEL: llvm.func ptx_kernelcc @first
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK-LABEL: llvm.func ptx_kernelcc @second
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
func.func @first(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  return
}
func.func @second(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  return
}
