// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// arith / math on tiles become one scalar op per element a thread holds, then
// LLVM ops; transcendentals become libdevice calls (__nv_*).

// 512 x f32 over 128 threads: 4 registers, so 4 scalar ops per tile op.
// CHECK-LABEL: llvm.func ptx_kernelcc @arith_f32
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %[[S:.*]]: f32)
// CHECK: %[[V:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[SS:.*]] = llvm.insertvalue %[[S]], %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[A0:.*]] = llvm.extractvalue %[[V]][0]
// CHECK: %[[A3:.*]] = llvm.extractvalue %[[V]][3]
// CHECK: %[[B0:.*]] = llvm.extractvalue %[[SS]][0]
// CHECK: %[[B3:.*]] = llvm.extractvalue %[[SS]][3]
// CHECK: %[[M0:.*]] = llvm.fmul %[[A0]], %[[B0]] : f32
// CHECK: llvm.fmul
// CHECK: llvm.fmul
// CHECK: %[[M3:.*]] = llvm.fmul %[[A3]], %[[B3]] : f32
// CHECK-NOT: llvm.fmul
// CHECK: %[[MS:.*]] = llvm.insertvalue %[[M3]], %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-4: llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4: llvm.fsub %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4: llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4: llvm.fneg %{{.*}} : f32
// CHECK-COUNT-4: llvm.call @__nv_fmaxf(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-NOT: arith.
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
func.func @arith_f32(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %s: f32) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  %ss = tile.splat %s : f32 -> tensor<512xf32>
  %0 = arith.mulf %v, %ss : tensor<512xf32>
  %1 = arith.addf %0, %v : tensor<512xf32>
  %2 = arith.subf %1, %v : tensor<512xf32>
  %3 = arith.divf %2, %ss : tensor<512xf32>
  %4 = arith.negf %3 : tensor<512xf32>
  %5 = arith.maxnumf %4, %v : tensor<512xf32>
  tile.store %p, %5 : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// Transcendentals: libdevice calls, one per element.
// CHECK-DAG: llvm.func @__nv_tanhf(f32) -> f32
// CHECK-DAG: llvm.func @__nv_expf(f32) -> f32
// CHECK-DAG: llvm.func @__nv_exp2f(f32) -> f32
// CHECK-DAG: llvm.func @__nv_logf(f32) -> f32
// CHECK-DAG: llvm.func @__nv_rsqrtf(f32) -> f32
// CHECK-DAG: llvm.func @__nv_exp(f64) -> f64
// CHECK-LABEL: llvm.func ptx_kernelcc @transcendentals
// CHECK-COUNT-4: llvm.call @__nv_tanhf(%{{.*}}) : (f32) -> f32
// CHECK-COUNT-4: llvm.call @__nv_expf(%{{.*}}) : (f32) -> f32
// CHECK-COUNT-4: llvm.call @__nv_exp2f(%{{.*}}) : (f32) -> f32
// CHECK-COUNT-4: llvm.call @__nv_logf(%{{.*}}) : (f32) -> f32
// CHECK-COUNT-4: llvm.call @__nv_rsqrtf(%{{.*}}) : (f32) -> f32
// CHECK: llvm.call @__nv_exp(%{{.*}}) : (f64) -> f64
// CHECK-NOT: math.
func.func @transcendentals(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f64>,
                           %d: f64) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  %0 = math.tanh %v : tensor<512xf32>
  %1 = math.exp %0 : tensor<512xf32>
  %2 = math.exp2 %1 : tensor<512xf32>
  %3 = math.log %2 : tensor<512xf32>
  %4 = math.rsqrt %3 : tensor<512xf32>
  tile.store %p, %4 : tensor<512x!tile.ptr<f32>>
  // A scalar transcendental.
  %e = math.exp %d : f64
  tile.store %y, %e : !tile.ptr<f64>
  return
}

// -----

// Conversions, integer ops, compares and selects; splat constants are one
// constant in every register.
// CHECK-LABEL: llvm.func ptx_kernelcc @convert_compare_select
// CHECK: %[[HALF:.*]] = llvm.mlir.constant(5.000000e-01 : f32) : f32
// CHECK: llvm.insertvalue %[[HALF]], %{{.*}}[0] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: llvm.insertvalue %[[HALF]], %{{.*}}[7] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: llvm.bitcast %{{.*}} : vector<4xi32> to vector<8xbf16>
// CHECK-COUNT-8: llvm.fpext %{{.*}} : bf16 to f32
// CHECK-COUNT-8: llvm.fcmp "ogt" %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-8: llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, f32
// CHECK-COUNT-8: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK-COUNT-8: llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK-COUNT-8: llvm.xor %{{.*}}, %{{.*}} : i32
// CHECK-COUNT-8: llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// The mask is not constant over runs, so the store goes element by element.
// CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} {alignment = 2 : i64} : bf16, !llvm.ptr<1>
// CHECK-NOT: arith.
func.func @convert_compare_select(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                                  %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %half = arith.constant dense<0.5> : tensor<1024xf32>
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  %f = arith.extf %v : tensor<1024xbf16> to tensor<1024xf32>
  %gt = arith.cmpf ogt, %f, %half : tensor<1024xf32>
  %s = arith.select %gt, %f, %half : tensor<1024xi1>, tensor<1024xf32>
  %t = arith.truncf %s : tensor<1024xf32> to tensor<1024xbf16>
  %c1 = arith.constant dense<1> : tensor<1024xi32>
  %sh = arith.shli %r, %c1 : tensor<1024xi32>
  %xo = arith.xori %sh, %r : tensor<1024xi32>
  %ns = tile.splat %n : i32 -> tensor<1024xi32>
  %m = arith.cmpi ult, %xo, %ns : tensor<1024xi32>
  tile.store %p, %t, %m : tensor<1024x!tile.ptr<bf16>>
  return
}
