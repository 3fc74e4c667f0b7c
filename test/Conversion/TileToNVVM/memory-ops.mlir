// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-tile-vectorize-access -kiln-convert-tile-to-nvvm | FileCheck %s

// tile.addptr -> llvm.getelementptr; tile.load / tile.store -> llvm.load /
// llvm.store of `vec` elements (16 bytes: vector<4xi32>), under scf.if where
// masked; stores from the duplicate threads of a replicated tile are masked
// off.

// f32, vec = 4: one 16-byte load per run, split into 4 floats.
// CHECK-LABEL: llvm.func ptx_kernelcc @load_f32_vec4
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>)
// CHECK: %[[OFF:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.struct<(i32, i32, i32, i32)>
// CHECK: %[[PTR:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
// CHECK: %[[PTRS:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(ptr<1>, ptr<1>, ptr<1>, ptr<1>)>
// CHECK: %[[P0:.*]] = llvm.extractvalue %[[PTRS]][0]
// CHECK-NOT: scf.if
// CHECK: %[[BITS:.*]] = llvm.load %[[P0]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK-NEXT: %[[VEC:.*]] = llvm.bitcast %[[BITS]] : vector<4xi32> to vector<4xf32>
// CHECK: llvm.extractelement %[[VEC]][%{{.*}} : i32] : vector<4xf32>
// CHECK-COUNT-3: llvm.extractelement %[[VEC]]
// CHECK-NOT: llvm.load
// CHECK: llvm.return
func.func @load_f32_vec4(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// bf16, vec = 8: 16 bytes are still vector<4xi32>, then 8 bf16.
// CHECK-LABEL: llvm.func ptx_kernelcc @load_bf16_vec8
// CHECK: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
// CHECK: %[[BITS:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK-NEXT: %[[VEC:.*]] = llvm.bitcast %[[BITS]] : vector<4xi32> to vector<8xbf16>
// CHECK-COUNT-8: llvm.extractelement %[[VEC]]
// CHECK-NOT: llvm.load
// CHECK: llvm.return
func.func @load_bf16_vec8(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// Narrower accesses: bf16 x 2 = one i32 (align 4), i8 x 2 = one i16 (align 2),
// unaligned f32 = one float at a time (align 4).
// CHECK-LABEL: llvm.func ptx_kernelcc @narrow_accesses
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: llvm.bitcast %{{.*}} : i32 to vector<2xbf16>
// CHECK: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr<1> -> i16
// CHECK-NEXT: llvm.bitcast %{{.*}} : i16 to vector<2xi8>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NOT: llvm.bitcast
// CHECK: llvm.return
func.func @narrow_accesses(%x: !tile.ptr<bf16> {tile.divisibility = 4 : i32},
                           %y: !tile.ptr<i8> {tile.divisibility = 2 : i32},
                           %z: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  %ys = tile.splat %y : !tile.ptr<i8> -> tensor<1024x!tile.ptr<i8>>
  %q = tile.addptr %ys, %r : tensor<1024x!tile.ptr<i8>>, tensor<1024xi32>
  %w = tile.load %q : tensor<1024x!tile.ptr<i8>>
  %zs = tile.splat %z : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %s = tile.addptr %zs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %u = tile.load %s : tensor<1024x!tile.ptr<f32>>
  return
}

// -----

// A masked load: the 16-byte load runs under scf.if on the run's mask; the
// other branch yields zero.
// CHECK-LABEL: llvm.func ptx_kernelcc @masked_load
// CHECK: %[[MASKS:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(i1, i1, i1, i1)>
// CHECK: %[[M0:.*]] = llvm.extractvalue %[[MASKS]][0] : !llvm.struct<(i1, i1, i1, i1)>
// CHECK: %[[BITS:.*]] = scf.if %[[M0]] -> (vector<4xi32>) {
// CHECK-NEXT: %[[L:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK-NEXT: scf.yield %[[L]] : vector<4xi32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[Z:.*]] = llvm.mlir.zero : vector<4xi32>
// CHECK-NEXT: scf.yield %[[Z]] : vector<4xi32>
// CHECK-NEXT: }
// CHECK-NEXT: llvm.bitcast %[[BITS]] : vector<4xi32> to vector<4xf32>
func.func @masked_load(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p, %m : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// A masked load with `other`: the else branch packs the `other` elements of
// the run into the same 16 bytes.
// CHECK-LABEL: llvm.func ptx_kernelcc @masked_load_other
// CHECK: %[[TWO:.*]] = llvm.mlir.constant(2.000000e+00 : f32) : f32
// CHECK: %[[OTHERS:.*]] = llvm.insertvalue %[[TWO]], %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[O0:.*]] = llvm.extractvalue %[[OTHERS]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[BITS:.*]] = scf.if %{{.*}} -> (vector<4xi32>) {
// CHECK-NEXT: %[[L:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK-NEXT: scf.yield %[[L]] : vector<4xi32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[PV:.*]] = llvm.mlir.poison : vector<4xf32>
// CHECK-NEXT: %[[I0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[V0:.*]] = llvm.insertelement %[[O0]], %[[PV]][%[[I0]] : i32] : vector<4xf32>
// CHECK: %[[I3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[V3:.*]] = llvm.insertelement %{{.*}}, %{{.*}}[%[[I3]] : i32] : vector<4xf32>
// CHECK-NEXT: %[[OB:.*]] = llvm.bitcast %[[V3]] : vector<4xf32> to vector<4xi32>
// CHECK-NEXT: scf.yield %[[OB]] : vector<4xi32>
// CHECK-NEXT: }
func.func @masked_load_other(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                             %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %o = arith.constant dense<2.0> : tensor<512xf32>
  %v = tile.load %p, %m, %o : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// An unaligned masked load: one scf.if per element.
// CHECK-LABEL: llvm.func ptx_kernelcc @masked_load_scalar_elements
// CHECK-COUNT-4: scf.if %{{.*}} -> (f32) {
// CHECK-NOT: scf.if
// CHECK: llvm.return
func.func @masked_load_scalar_elements(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p, %m : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// A masked store: the 16-byte store is predicated on the run's mask.
// CHECK-LABEL: llvm.func ptx_kernelcc @masked_store
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %[[V:.*]]: f32, %{{.*}}: i32)
// CHECK: %[[MASKS:.*]] = llvm.insertvalue %{{.*}}[3] : !llvm.struct<(i1, i1, i1, i1)>
// CHECK: %[[VALUES:.*]] = llvm.insertvalue %[[V]], %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[V3:.*]] = llvm.extractvalue %[[VALUES]][3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[M0:.*]] = llvm.extractvalue %[[MASKS]][0] : !llvm.struct<(i1, i1, i1, i1)>
// CHECK: %[[I3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[VEC:.*]] = llvm.insertelement %[[V3]], %{{.*}}[%[[I3]] : i32] : vector<4xf32>
// CHECK-NEXT: %[[BITS:.*]] = llvm.bitcast %[[VEC]] : vector<4xf32> to vector<4xi32>
// CHECK-NEXT: scf.if %[[M0]] {
// CHECK-NEXT: llvm.store %[[BITS]], %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NEXT: }
// CHECK-NEXT: llvm.return
func.func @masked_store(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %v: f32,
                        %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %vs = tile.splat %v : f32 -> tensor<512xf32>
  tile.store %p, %vs, %m : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// A replicated tile (64 x f32 = 16 runs of 4 over 128 threads): only threads
// 0..15 own their run; the others hold copies and do not store.
// CHECK-LABEL: llvm.func ptx_kernelcc @replicated_store
// CHECK: %[[RUNS:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[OWNER:.*]] = llvm.icmp "ult" %[[TID]], %[[RUNS]] : i32
// CHECK: scf.if %[[OWNER]] {
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NEXT: }
// CHECK-NOT: llvm.store
// CHECK: llvm.return
func.func @replicated_store(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %v: f32)
    attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %vs = tile.splat %v : f32 -> tensor<64xf32>
  tile.store %p, %vs : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// A replicated masked store: owner and mask.
// CHECK-LABEL: llvm.func ptx_kernelcc @replicated_masked_store
// CHECK: %[[M0:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.struct<(i1, i1, i1, i1)>
// CHECK: %[[OWNER:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// CHECK: %[[PRED:.*]] = llvm.and %[[OWNER]], %[[M0]] : i1
// CHECK-NEXT: scf.if %[[PRED]] {
// CHECK-NEXT: llvm.store
func.func @replicated_masked_store(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %v: f32,
                                   %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %ns = tile.splat %n : i32 -> tensor<64xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %vs = tile.splat %v : f32 -> tensor<64xf32>
  tile.store %p, %vs, %m : tensor<64x!tile.ptr<f32>>
  return
}

// -----

// Scalars: a masked load with `other` yields it; a scalar store is done by
// thread 0 (and its mask).
// CHECK-LABEL: llvm.func ptx_kernelcc @scalar_access
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %[[N:.*]]: i64, %[[B:.*]]: i1, %[[O:.*]]: f32)
// CHECK: %[[Q:.*]] = llvm.getelementptr %[[X]][%[[N]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: %[[V:.*]] = scf.if %[[B]] -> (f32) {
// CHECK-NEXT: %[[L:.*]] = llvm.load %[[Q]] {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NEXT: scf.yield %[[L]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[O]] : f32
// CHECK-NEXT: }
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[IS0:.*]] = llvm.icmp "eq" %[[TID]], %{{.*}} : i32
// CHECK-NEXT: %[[PRED:.*]] = llvm.and %[[IS0]], %[[B]] : i1
// CHECK-NEXT: scf.if %[[PRED]] {
// CHECK-NEXT: llvm.store %[[V]], %[[X]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NEXT: }
func.func @scalar_access(%x: !tile.ptr<f32>, %n: i64, %b: i1, %o: f32) attributes {tile.kernel} {
  %q = tile.addptr %x, %n : !tile.ptr<f32>, i64
  %v = tile.load %q, %b, %o : !tile.ptr<f32>
  tile.store %x, %v, %b : !tile.ptr<f32>
  return
}

// -----

// Booleans in memory move one at a time.
// CHECK-LABEL: llvm.func ptx_kernelcc @i1_load
// CHECK-COUNT-16: llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i1
// CHECK-NOT: llvm.load
func.func @i1_load(%x: !tile.ptr<i1> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32>
  %xs = tile.splat %x : !tile.ptr<i1> -> tensor<2048x!tile.ptr<i1>>
  %p = tile.addptr %xs, %r : tensor<2048x!tile.ptr<i1>>, tensor<2048xi32>
  %v = tile.load %p : tensor<2048x!tile.ptr<i1>>
  return
}

// -----

// Cache hints: one inline ld.global / st.global per vector access, the mask a
// predicate inside the asm (no scf.if): the destinations first take `other`,
// then `@%p ld`. evict_last gives one L2 policy for the op
// (createpolicy, pure) passed to `.L2::cache_hint`; with a cache operator
// (`.cg`) there is no L1 priority qualifier.
// CHECK-LABEL: llvm.func ptx_kernelcc @hinted_masked_f32
// CHECK-NOT: scf.if
// CHECK: %[[POLICY:.*]] = llvm.inline_asm asm_dialect = att "createpolicy.fractional.L2::evict_last.b64 $0, 1.0;", "=l"  : () -> i64
// CHECK: %[[OTHER:.*]] = llvm.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: %[[MASK:.*]] = llvm.zext %{{.*}} : i1 to i32
// CHECK: %[[O0:.*]] = llvm.extractelement %[[OTHER]]
// CHECK: %[[O1:.*]] = llvm.extractelement %[[OTHER]]
// CHECK: %[[O2:.*]] = llvm.extractelement %[[OTHER]]
// CHECK: %[[O3:.*]] = llvm.extractelement %[[OTHER]]
// CHECK: %[[LOADED:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred %p;\0A\09setp.ne.b32 %p, $5, 0;\0A\09mov.b32 $0, $6;\0A\09mov.b32 $1, $7;\0A\09mov.b32 $2, $8;\0A\09mov.b32 $3, $9;\0A\09@%p ld.global.cg.L2::cache_hint.v4.b32 {$0, $1, $2, $3}, [$4], $10;\0A\09}", "=r,=r,=r,=r,l,r,r,r,r,r,l,~{memory}" %{{.*}}, %[[MASK]], %[[O0]], %[[O1]], %[[O2]], %[[O3]], %[[POLICY]] : (!llvm.ptr<1>, i32, i32, i32, i32, i32, i64) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: llvm.extractvalue %[[LOADED]][0] : !llvm.struct<(i32, i32, i32, i32)>
// CHECK: llvm.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// A cache operator alone needs no policy.
// CHECK: %[[SMASK:.*]] = llvm.zext %{{.*}} : i1 to i32
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred %p;\0A\09setp.ne.b32 %p, $5, 0;\0A\09@%p st.global.wt.v4.b32 [$0], {$1, $2, $3, $4};\0A\09}", "l,r,r,r,r,r,~{memory}" %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SMASK]] : (!llvm.ptr<1>, i32, i32, i32, i32, i32) -> ()
// CHECK-NOT: llvm.load
// CHECK-NOT: llvm.store
// CHECK-NOT: scf.if
// CHECK: llvm.return
func.func @hinted_masked_f32(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                             %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %o = arith.constant dense<-1.0> : tensor<512xf32>
  %v = tile.load %p, %m, %o cache cg evict evict_last : tensor<512x!tile.ptr<f32>>
  tile.store %p, %v, %m cache wt : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// Hinted scalar bytes: .b8 in a 16-bit register; evict_normal is the L1
// qualifier alone; a masked load without `other` fills zero; the scalar store
// is predicated on thread 0 inside the asm.
// CHECK-LABEL: llvm.func ptx_kernelcc @hinted_scalar_i8
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %[[B:.*]]: i1)
// CHECK: %[[L:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "ld.global.L1::evict_normal.b8 $0, [$1];", "=h,l,~{memory}" %[[X]] : (!llvm.ptr<1>) -> i16
// CHECK-NEXT: %[[V:.*]] = llvm.trunc %[[L]] : i16 to i8
// CHECK: %[[BM:.*]] = llvm.zext %[[B]] : i1 to i32
// CHECK-NEXT: %[[M:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred %p;\0A\09setp.ne.b32 %p, $2, 0;\0A\09mov.b16 $0, 0;\0A\09@%p ld.global.cv.b8 $0, [$1];\0A\09}", "=h,l,r,~{memory}" %[[X]], %[[BM]] : (!llvm.ptr<1>, i32) -> i16
// CHECK: %[[IS0:.*]] = llvm.icmp "eq" %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[POLICY:.*]] = llvm.inline_asm asm_dialect = att "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;", "=l"  : () -> i64
// CHECK-NEXT: %[[W:.*]] = llvm.zext %[[V]] : i8 to i16
// CHECK-NEXT: %[[OWNER:.*]] = llvm.zext %[[IS0]] : i1 to i32
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred %p;\0A\09setp.ne.b32 %p, $2, 0;\0A\09@%p st.global.L1::evict_first.L2::cache_hint.b8 [$0], $1, $3;\0A\09}", "l,h,r,l,~{memory}" %[[X]], %[[W]], %[[OWNER]], %[[POLICY]] : (!llvm.ptr<1>, i16, i32, i64) -> ()
// CHECK-NOT: scf.if
func.func @hinted_scalar_i8(%x: !tile.ptr<i8>, %b: i1) attributes {tile.kernel} {
  %v = tile.load %x evict evict_normal : !tile.ptr<i8>
  %w = tile.load %x, %b cache cv : !tile.ptr<i8>
  tile.store %x, %v evict evict_first : !tile.ptr<i8>
  tile.store %x, %w cache cs : !tile.ptr<i8>
  return
}

// -----

// A peer's address becomes a global pointer; a poll is one inline-asm loop an
// element, under the mask's branch, the deadline an i64 operand.
// CHECK-LABEL: llvm.func ptx_kernelcc @peer_poll
// CHECK-SAME: (%[[A:.*]]: i64, %[[B:.*]]: i1, %[[O:.*]]: !llvm.ptr<1>)
// CHECK: %[[P:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr<1>
// CHECK: scf.if %[[B]] -> (i32) {
// CHECK-NEXT: %[[T:.*]] = llvm.mlir.constant(5000 : i64) : i64
// CHECK-NEXT: %[[V:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}kiln_poll:{{.*}}ld.relaxed.sys.global.b32 $0, [$1];{{.*}}setp.ge.u64 %p, %t, $2;{{.*}}", "=r,l,l,~{memory}" %[[P]], %[[T]] : (!llvm.ptr<1>, i64) -> i32
// CHECK-NEXT: scf.yield %[[V]] : i32
func.func @peer_poll(%a: i64, %b: i1, %out: !tile.ptr<i32>) attributes {tile.kernel} {
  %p = tile.int_to_ptr %a {divisibility = 16 : i64} : !tile.ptr<i32>
  %v = tile.load %p, %b ordered relaxed sys {poll_ns = 5000 : i64} : !tile.ptr<i32>
  tile.store %out, %v : !tile.ptr<i32>
  return
}
