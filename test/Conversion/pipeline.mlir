// RUN: kiln-opt %s -split-input-file -kiln-tile-to-llvm | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tile-to-llvm="num-warps=8" | FileCheck %s --check-prefix=WARPS8

// The named pipeline kilnc runs: canonicalize, CSE, layout, vector widths,
// tile -> NVVM, scf -> cf -> LLVM, cleanup. What remains is LLVM + NVVM only.

// SiTU (x * tanh(x / beta) * exp(x) style): one row of bf16 per program.
// CHECK-DAG: llvm.func @__nv_tanhf(f32) -> f32
// CHECK-DAG: llvm.func @__nv_expf(f32) -> f32
// CHECK-LABEL: llvm.func ptx_kernelcc @situ
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %[[OUT:.*]]: !llvm.ptr<1>, %[[D:.*]]: i32, %[[XS:.*]]: i32, %{{.*}}: i32, %{{.*}}: f32, %[[IBETA:.*]]: f32)
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK: %[[ROW:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT: %[[PID:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-NEXT: %[[START:.*]] = llvm.mul %[[PID]], %{{.*}} : i32
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[BASE:.*]] = llvm.mul %[[TID]], %{{.*}} : i32
// CHECK-NEXT: %[[IDX:.*]] = llvm.add %[[BASE]], %{{.*}} : i32
// CHECK-NEXT: %[[COL:.*]] = llvm.add %[[START]], %[[IDX]] : i32
// CHECK: %[[MASK:.*]] = llvm.icmp "slt" %[[COL]], %[[D]] : i32
// CHECK: %[[ROFF:.*]] = llvm.mul %[[ROW]], %[[XS]] : i32
// CHECK: %[[XROW:.*]] = llvm.getelementptr %[[X]][%[[ROFF]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
// CHECK: %[[XP:.*]] = llvm.getelementptr %[[XROW]][%[[COL]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
// The masked 16-byte load: scf.if became branches.
// CHECK: llvm.cond_br %[[MASK]], ^[[LOAD:.*]], ^[[SKIP:.*]]
// CHECK: ^[[LOAD]]:
// CHECK-NEXT: %[[L:.*]] = llvm.load %[[XP]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK-NEXT: llvm.br ^[[JOIN:.*]](%[[L]] : vector<4xi32>)
// CHECK: ^[[SKIP]]:
// CHECK-NEXT: llvm.br ^[[JOIN]](%{{.*}} : vector<4xi32>)
// CHECK: ^[[JOIN]](%[[BITS:.*]]: vector<4xi32>):
// CHECK: %[[G:.*]] = llvm.bitcast %[[BITS]] : vector<4xi32> to vector<8xbf16>
// CHECK-COUNT-8: llvm.fpext %{{.*}} : bf16 to f32
// CHECK-COUNT-8: llvm.fmul %{{.*}}, %[[IBETA]] : f32
// CHECK-COUNT-8: llvm.call @__nv_tanhf
// CHECK-COUNT-8: llvm.call @__nv_expf
// CHECK-COUNT-8: llvm.fmul
// CHECK-COUNT-8: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK: %[[OROW:.*]] = llvm.getelementptr %[[OUT]][%[[ROFF]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
// CHECK: %[[OP:.*]] = llvm.getelementptr %[[OROW]][%[[COL]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
// CHECK: %[[Y:.*]] = llvm.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK-NEXT: llvm.cond_br %[[MASK]], ^[[STORE:.*]], ^[[DONE:.*]]
// CHECK: ^[[STORE]]:
// CHECK-NEXT: llvm.store %[[Y]], %[[OP]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK: ^[[DONE]]:
// CHECK-NEXT: llvm.return
// CHECK-NOT: scf.
// CHECK-NOT: tile.
// CHECK-NOT: arith.
// CHECK-NOT: math.
// CHECK-NOT: unrealized_conversion_cast
// WARPS8-LABEL: llvm.func ptx_kernelcc @situ
// WARPS8-SAME: nvvm.reqntid = array<i32: 256, 1, 1>
func.func @situ(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %out: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                %D: i32 {tile.divisibility = 16 : i32}, %xs: i32 {tile.divisibility = 16 : i32},
                %os: i32 {tile.divisibility = 16 : i32}, %beta: f32, %ibeta: f32)
    attributes {tile.kernel} {
  %row = tile.program_id x : i32
  %pid = tile.program_id y : i32
  %c1024 = arith.constant 1024 : i32
  %start = arith.muli %pid, %c1024 : i32
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %s = tile.splat %start : i32 -> tensor<1024xi32>
  %col = arith.addi %s, %r : tensor<1024xi32>
  %Ds = tile.splat %D : i32 -> tensor<1024xi32>
  %mask = arith.cmpi slt, %col, %Ds : tensor<1024xi32>
  %roff = arith.muli %row, %xs : i32
  %xrow = tile.addptr %x, %roff : !tile.ptr<bf16>, i32
  %xrows = tile.splat %xrow : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %gp = tile.addptr %xrows, %col : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %g16 = tile.load %gp, %mask : tensor<1024x!tile.ptr<bf16>>
  %g = arith.extf %g16 : tensor<1024xbf16> to tensor<1024xf32>
  %bs = tile.splat %ibeta : f32 -> tensor<1024xf32>
  %t = arith.mulf %g, %bs : tensor<1024xf32>
  %th = math.tanh %t : tensor<1024xf32>
  %e = math.exp %g : tensor<1024xf32>
  %y = arith.mulf %th, %e : tensor<1024xf32>
  %y16 = arith.truncf %y : tensor<1024xf32> to tensor<1024xbf16>
  %orow = tile.addptr %out, %roff : !tile.ptr<bf16>, i32
  %orows = tile.splat %orow : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %op = tile.addptr %orows, %col : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  tile.store %op, %y16, %mask : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// Canonicalization runs first: a store under an all-false mask disappears, an
// all-true mask drops its branch, a splat of a constant is one constant.
// CHECK-LABEL: llvm.func ptx_kernelcc @canonicalized
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK-NOT: llvm.cond_br
// CHECK-COUNT-4: llvm.insertelement %[[ONE]]
// CHECK-NEXT: %[[BITS:.*]] = llvm.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: llvm.store %[[BITS]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: llvm.return
// WARPS8-LABEL: llvm.func ptx_kernelcc @canonicalized
func.func @canonicalized(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %one = arith.constant 1.0 : f32
  %v = tile.splat %one : f32 -> tensor<512xf32>
  %t = arith.constant dense<true> : tensor<512xi1>
  %f = arith.constant dense<false> : tensor<512xi1>
  tile.store %p, %v, %t : tensor<512x!tile.ptr<f32>>
  tile.store %p, %v, %f : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// What the lowering records on a kernel stays there to the end of the
// pipeline, where the compiler reads it: PDL and the features.
// CHECK-LABEL: llvm.func ptx_kernelcc @pdl(
// CHECK-SAME: tile.features = ["pdl"], tile.pdl}
// CHECK: nvvm.griddepcontrol wait
// CHECK: nvvm.griddepcontrol launch_dependents
// WARPS8-LABEL: llvm.func ptx_kernelcc @pdl(
// WARPS8-SAME: nvvm.reqntid = array<i32: 256, 1, 1>, tile.features = ["pdl"], tile.pdl}
func.func @pdl(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  tile.pdl_wait
  %v = tile.load %x : !tile.ptr<f32>
  tile.pdl_launch_dependents
  tile.store %x, %v : !tile.ptr<f32>
  return
}

// -----

// And the register split of warp specialization.
// CHECK-LABEL: llvm.func ptx_kernelcc @split(
// CHECK-SAME: tile.features = ["setmaxnreg"], tile.register_split = array<i32: 128, 240, 40>}
// CHECK: nvvm.setmaxregister increase 240
// CHECK: nvvm.setmaxregister decrease 40
// WARPS8-LABEL: llvm.func ptx_kernelcc @split(
// WARPS8-SAME: tile.register_split = array<i32: 128, 240, 40>}
func.func @split(%x: !tile.ptr<f32>, %v: f32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  tile.warp_specialize consumer {
    tile.store %x, %v : !tile.ptr<f32>
  } producer {
  }
  return
}
