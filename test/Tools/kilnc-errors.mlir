// kilnc fails with a non-zero exit status and one diagnostic that says what
// is wrong.
// RUN: split-file %s %t

// RUN: not kilnc %t/copy.mlir -emit=ptx --arch=sm_80 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: kilnc: error: unsupported --arch 'sm_80' (supported: sm_90a, sm_100a, sm_103a)

// The arch is checked before anything is compiled, for every stage.
// RUN: not kilnc %t/copy.mlir -emit=tile --arch=sm_100 2>&1 | FileCheck %s --check-prefix=ARCH100
// ARCH100: kilnc: error: unsupported --arch 'sm_100' (supported: sm_90a, sm_100a, sm_103a)

// RUN: not kilnc %t/parse-error.mlir -emit=tile 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: parse-error.mlir:1:14: error: expected non-function type

// RUN: not kilnc %t/invalid-op.mlir -emit=ptx 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: invalid-op.mlir:3:8: error: 'tile.broadcast' op expected equal ranks, got 1 -> 2

// RUN: not kilnc %t/non-power-of-two.mlir -emit=ptx --arch=sm_90a 2>&1 | FileCheck %s --check-prefix=LAYOUT
// LAYOUT: non-power-of-two.mlir:3:9: error: 'tile.splat' op tiles must have a power-of-two number of elements, got 'tensor<96xf32>'

// RUN: not kilnc %t/missing.mlir -emit=ptx 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: kilnc: error: cannot open input file '{{.*}}missing.mlir': No such file or directory

// RUN: not kilnc %t/copy.mlir -emit=sass 2>&1 | FileCheck %s --check-prefix=EMIT
// EMIT: for the --emit option: Cannot find option named 'sass'!

// The good input works at every stage.
// RUN: kilnc %t/copy.mlir -emit=tile | FileCheck %s --check-prefix=TILE
// TILE: func.func @copy(%{{.*}}: !tile.ptr<f32> {tile.divisibility = 16 : i32}
// TILE: tile.load %{{.*}} : tensor<128x!tile.ptr<f32>>
// RUN: kilnc %t/copy.mlir -emit=nvvm | FileCheck %s --check-prefix=NVVM
// NVVM: llvm.func ptx_kernelcc @copy(%{{.*}}: !llvm.ptr<1>
// RUN: kilnc %t/copy.mlir -emit=llvm --arch=sm_103a | FileCheck %s --check-prefix=LLVMIR
// LLVMIR: target triple = "nvptx64-nvidia-cuda"
// LLVMIR: define ptx_kernel void @copy(

//--- parse-error.mlir
func.func @f(

//--- invalid-op.mlir
func.func @k(%x: tensor<128xf32>) {
  // a rank-changing broadcast
  %0 = tile.broadcast %x : tensor<128xf32> -> tensor<64x128xf32>
  return
}

//--- non-power-of-two.mlir
func.func @k(%p: !tile.ptr<f32>, %x: f32) attributes {tile.kernel} {
  %ps = tile.splat %p : !tile.ptr<f32> -> tensor<96x!tile.ptr<f32>>
  %xs = tile.splat %x : f32 -> tensor<96xf32>
  tile.store %ps, %xs : tensor<96x!tile.ptr<f32>>
  return
}

//--- copy.mlir
func.func @copy(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %v = tile.load %p : tensor<128x!tile.ptr<f32>>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %q = tile.addptr %ys, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  tile.store %q, %v : tensor<128x!tile.ptr<f32>>
  return
}
