// RUN: kiln-opt %s -split-input-file -kiln-tile-vectorize-access | FileCheck %s

// `vec` is the largest power of two of consecutive elements one thread moves
// in one access: bounded by the layout's run (tile.elems_per_thread), the
// pointers' contiguity and alignment (tile.divisibility), the mask's constancy
// and 16 bytes. The layout attributes are set directly here.

// Contiguous, 16-byte aligned bf16: 8 elements.
// CHECK-LABEL: func.func @bf16_contiguous
// CHECK: tile.load %{{.*}} {vec = 8 : i32} : tensor<1024x!tile.ptr<bf16>>
// CHECK: tile.store %{{.*}}, %{{.*}} {vec = 8 : i32} : tensor<1024x!tile.ptr<bf16>>
func.func @bf16_contiguous(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                           %y: !tile.ptr<bf16> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %q = tile.addptr %ys, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  tile.store %q, %v : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// Contiguous, 16-byte aligned f32 at a block offset (pid * 512): 4 elements.
// CHECK-LABEL: func.func @f32_block_offset
// CHECK: tile.load %{{.*}} {vec = 4 : i32} : tensor<512x!tile.ptr<f32>>
func.func @f32_block_offset(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %pid = tile.program_id x : i32
  %c512 = arith.constant 512 : i32
  %start = arith.muli %pid, %c512 : i32
  %s = tile.splat %start : i32 -> tensor<512xi32>
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %off = arith.addi %s, %r : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// A base pointer without tile.divisibility: one element at a time.
// CHECK-LABEL: func.func @unaligned_base
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
func.func @unaligned_base(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// A 4-byte aligned bf16 base: 2 elements.
// CHECK-LABEL: func.func @bf16_base_aligned_4
// CHECK: tile.load %{{.*}} {vec = 2 : i32} : tensor<1024x!tile.ptr<bf16>>
func.func @bf16_base_aligned_4(%x: !tile.ptr<bf16> {tile.divisibility = 4 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// A scalar offset without divisibility misaligns the tile: 1.
// CHECK-LABEL: func.func @unaligned_scalar_offset
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
func.func @unaligned_scalar_offset(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %off = arith.addi %r, %ns : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// A range starting at 2 (8 bytes of f32 past an aligned base): 2.
// CHECK-LABEL: func.func @range_start_2
// CHECK: tile.load %{{.*}} {vec = 2 : i32} : tensor<512x!tile.ptr<f32>>
func.func @range_start_2(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 2 : i32, end = 514 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// 2-D tiles: rows at a multiple of 16 elements apart, 16-byte aligned rows: 4.
// CHECK-LABEL: func.func @rows_aligned
// CHECK: tile.load %{{.*}} {vec = 4 : i32} : tensor<16x64x!tile.ptr<f32>>
func.func @rows_aligned(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %stride: i32 {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %c = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %re = tile.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ss = tile.splat %stride : i32 -> tensor<16x1xi32>
  %ro = arith.muli %re, %ss : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x64xi32>
  %ce = tile.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tile.broadcast %ce : tensor<1x64xi32> -> tensor<16x64xi32>
  %off = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  return
}

// -----

// A row stride without tile.divisibility: rows may start anywhere, 1.
// CHECK-LABEL: func.func @rows_stride_unknown
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<16x64x!tile.ptr<f32>>
// CHECK: tile.store %{{.*}}, %{{.*}} {vec = 1 : i32} : tensor<16x64x!tile.ptr<f32>>
func.func @rows_stride_unknown(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %stride: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %c = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %re = tile.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ss = tile.splat %stride : i32 -> tensor<16x1xi32>
  %ro = arith.muli %re, %ss : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x64xi32>
  %ce = tile.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tile.broadcast %ce : tensor<1x64xi32> -> tensor<16x64xi32>
  %off = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  tile.store %p, %v : tensor<16x64x!tile.ptr<f32>>
  return
}

// -----

// A row stride divisible by 2 (8 bytes of f32): 2.
// CHECK-LABEL: func.func @rows_stride_2
// CHECK: tile.load %{{.*}} {vec = 2 : i32} : tensor<16x64x!tile.ptr<f32>>
func.func @rows_stride_2(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                         %stride: i32 {tile.divisibility = 2 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %c = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %re = tile.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ss = tile.splat %stride : i32 -> tensor<16x1xi32>
  %ro = arith.muli %re, %ss : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x64xi32>
  %ce = tile.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tile.broadcast %ce : tensor<1x64xi32> -> tensor<16x64xi32>
  %off = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  return
}

// -----

// Offsets multiplied by a stride are not contiguous: 1, even for an aligned
// stride.
// CHECK-LABEL: func.func @strided_offsets
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
func.func @strided_offsets(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                           %stride: i32 {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %ss = tile.splat %stride : i32 -> tensor<512xi32>
  %off = arith.muli %r, %ss : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// Multiplying by one keeps the contiguity.
// CHECK-LABEL: func.func @times_one
// CHECK: tile.load %{{.*}} {vec = 4 : i32} : tensor<512x!tile.ptr<f32>>
func.func @times_one(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %one = arith.constant dense<1> : tensor<512xi32>
  %off = arith.muli %r, %one : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// range + range = 0, 2, 4, ...: not contiguous.
// CHECK-LABEL: func.func @range_plus_range
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
func.func @range_plus_range(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %off = arith.addi %r, %r : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// 2-D rows at (r + r) * stride: the rows are 0, 2*stride, ...: an unknown
// stride leaves them unaligned.
// CHECK-LABEL: func.func @rows_doubled_stride_unknown
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<16x64x!tile.ptr<f32>>
func.func @rows_doubled_stride_unknown(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %stride: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %r2 = arith.addi %r, %r : tensor<16xi32>
  %c = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %re = tile.expand_dims %r2 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ss = tile.splat %stride : i32 -> tensor<16x1xi32>
  %ro = arith.muli %re, %ss : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x64xi32>
  %ce = tile.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tile.broadcast %ce : tensor<1x64xi32> -> tensor<16x64xi32>
  %off = arith.addi %rb, %cb : tensor<16x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %v = tile.load %p : tensor<16x64x!tile.ptr<f32>>
  return
}

// -----

// Masks: `offs < n` with n divisible by 16 keeps 4; a bound without
// divisibility forces 1; a bound divisible by 2 gives 2; `n > offs` is the
// same as `offs < n`; `offs <= n` splits between n and n + 1, inside a run: 1.
// CHECK-LABEL: func.func @masks
// CHECK: tile.load %[[P:.*]], %{{.*}} {vec = 4 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.load %[[P]], %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.load %[[P]], %{{.*}} {vec = 2 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.load %[[P]], %{{.*}} {vec = 4 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.load %[[P]], %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.store %[[P]], %{{.*}}, %{{.*}} {vec = 4 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.store %[[P]], %{{.*}}, %{{.*}} {vec = 1 : i32} : tensor<512x!tile.ptr<f32>>
func.func @masks(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                 %n16: i32 {tile.divisibility = 16 : i32}, %n: i32,
                 %n2: i32 {tile.divisibility = 2 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %b16 = tile.splat %n16 : i32 -> tensor<512xi32>
  %b = tile.splat %n : i32 -> tensor<512xi32>
  %b2 = tile.splat %n2 : i32 -> tensor<512xi32>
  %m16 = arith.cmpi slt, %r, %b16 : tensor<512xi32>
  %m = arith.cmpi slt, %r, %b : tensor<512xi32>
  %m2 = arith.cmpi ult, %r, %b2 : tensor<512xi32>
  %mgt = arith.cmpi sgt, %b16, %r : tensor<512xi32>
  %mle = arith.cmpi sle, %r, %b16 : tensor<512xi32>
  %v0 = tile.load %p, %m16 : tensor<512x!tile.ptr<f32>>
  %v1 = tile.load %p, %m : tensor<512x!tile.ptr<f32>>
  %v2 = tile.load %p, %m2 : tensor<512x!tile.ptr<f32>>
  %v3 = tile.load %p, %mgt : tensor<512x!tile.ptr<f32>>
  %v4 = tile.load %p, %mle : tensor<512x!tile.ptr<f32>>
  tile.store %p, %v0, %m16 : tensor<512x!tile.ptr<f32>>
  tile.store %p, %v1, %m : tensor<512x!tile.ptr<f32>>
  return
}

// -----

// Scalars move one element.
// CHECK-LABEL: func.func @scalar
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : !tile.ptr<f32>
// CHECK: tile.store %{{.*}}, %{{.*}} {vec = 1 : i32} : !tile.ptr<f32>
func.func @scalar(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %v = tile.load %x : !tile.ptr<f32>
  tile.store %x, %v : !tile.ptr<f32>
  return
}

// -----

// The layout's run bounds the width (2 elements per thread), and so does a
// tile smaller than one run (a single element).
// CHECK-LABEL: func.func @layout_bound
// CHECK: tile.load %{{.*}} {vec = 2 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<1x!tile.ptr<f32>>
func.func @layout_bound(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 2 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %v = tile.load %p : tensor<512x!tile.ptr<f32>>
  %r1 = tile.make_range {start = 0 : i32, end = 1 : i32} : tensor<1xi32>
  %xs1 = tile.splat %x : !tile.ptr<f32> -> tensor<1x!tile.ptr<f32>>
  %p1 = tile.addptr %xs1, %r1 : tensor<1x!tile.ptr<f32>>, tensor<1xi32>
  %v1 = tile.load %p1 : tensor<1x!tile.ptr<f32>>
  return
}

// -----

// 16 bytes at most: i8 with 32 elements per thread still moves 16.
// CHECK-LABEL: func.func @sixteen_bytes
// CHECK: tile.load %{{.*}} {vec = 16 : i32} : tensor<4096x!tile.ptr<i8>>
func.func @sixteen_bytes(%x: !tile.ptr<i8> {tile.divisibility = 64 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 32 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 4096 : i32} : tensor<4096xi32>
  %xs = tile.splat %x : !tile.ptr<i8> -> tensor<4096x!tile.ptr<i8>>
  %p = tile.addptr %xs, %r : tensor<4096x!tile.ptr<i8>>, tensor<4096xi32>
  %v = tile.load %p : tensor<4096x!tile.ptr<i8>>
  return
}

// -----

// Functions that are not kernels are left alone.
// CHECK-LABEL: func.func @not_a_kernel
// CHECK: tile.load %{{.*}} : !tile.ptr<f32>
// CHECK-NOT: vec
func.func @not_a_kernel(%x: !tile.ptr<f32>) -> f32 {
  %v = tile.load %x : !tile.ptr<f32>
  return %v : f32
}

// -----

// The rematerialized 2-D copy (bf16 [16x512]): tile.iota along the last
// dimension is contiguous, along the rows constant; a per-row index loaded on
// the 2-D shape (through a row-constant pointer) and the division and select
// on it stay constant along the row, so the mask allows 8 elements.
// CHECK-LABEL: func.func @iota_copy_2d
// CHECK: tile.load %{{.*}}, %{{.*}} {vec = 1 : i32} : tensor<16x512x!tile.ptr<i32>>
// CHECK: tile.load %{{.*}}, %{{.*}} {vec = 8 : i32} : tensor<16x512x!tile.ptr<bf16>>
// CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} {vec = 8 : i32} : tensor<16x512x!tile.ptr<bf16>>
func.func @iota_copy_2d(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                        %y: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                        %idx: !tile.ptr<i32> {tile.divisibility = 16 : i32},
                        %s: i32 {tile.divisibility = 16 : i32}, %h: i32)
    attributes {tile.kernel, tile.threads_per_block = 256 : i32, tile.elems_per_thread = 8 : i32} {
  %rows = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x512xi32>
  %cols = tile.iota {dim = 1 : i32, start = 0 : i32} : tensor<16x512xi32>
  %is = tile.splat %idx : !tile.ptr<i32> -> tensor<16x512x!tile.ptr<i32>>
  %ip = tile.addptr %is, %rows : tensor<16x512x!tile.ptr<i32>>, tensor<16x512xi32>
  %hs = tile.splat %h : i32 -> tensor<16x512xi32>
  %valid = arith.cmpi slt, %rows, %hs : tensor<16x512xi32>
  %i = tile.load %ip, %valid : tensor<16x512x!tile.ptr<i32>>
  %t = arith.divsi %i, %hs : tensor<16x512xi32>
  %zero = arith.constant dense<0> : tensor<16x512xi32>
  %pos = arith.cmpi sge, %t, %zero : tensor<16x512xi32>
  %ok = arith.andi %valid, %pos : tensor<16x512xi1>
  %ts = arith.select %ok, %t, %zero : tensor<16x512xi1>, tensor<16x512xi32>
  %ss = tile.splat %s : i32 -> tensor<16x512xi32>
  %ro = arith.muli %ts, %ss : tensor<16x512xi32>
  %off = arith.addi %ro, %cols : tensor<16x512xi32>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<16x512x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %off : tensor<16x512x!tile.ptr<bf16>>, tensor<16x512xi32>
  %v = tile.load %p, %ok : tensor<16x512x!tile.ptr<bf16>>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<16x512x!tile.ptr<bf16>>
  %q = tile.addptr %ys, %off : tensor<16x512x!tile.ptr<bf16>>, tensor<16x512xi32>
  tile.store %q, %v, %ok : tensor<16x512x!tile.ptr<bf16>>
  return
}

// -----

// An iota starting at an odd column is contiguous but misaligned: 1 element.
// CHECK-LABEL: func.func @iota_odd_start
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<4x64x!tile.ptr<f32>>
func.func @iota_odd_start(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 64 : i32, tile.elems_per_thread = 4 : i32} {
  %cols = tile.iota {dim = 1 : i32, start = 1 : i32} : tensor<4x64xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<4x64x!tile.ptr<f32>>
  %p = tile.addptr %xs, %cols : tensor<4x64x!tile.ptr<f32>>, tensor<4x64xi32>
  %v = tile.load %p : tensor<4x64x!tile.ptr<f32>>
  return
}

// -----

// Cache hints do not change the width: a masked, hinted bf16 copy moves 8
// elements per access.
// CHECK-LABEL: func.func @hinted
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} cache cg evict evict_first {vec = 8 : i32} : tensor<1024x!tile.ptr<bf16>>
// CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} cache cs evict evict_last {vec = 8 : i32} : tensor<1024x!tile.ptr<bf16>>
func.func @hinted(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                  %y: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                  %n: i32 {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %ns = tile.splat %n : i32 -> tensor<1024xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<1024xi32>
  %o = arith.constant dense<1.0> : tensor<1024xbf16>
  %xs = tile.splat %x : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %p = tile.addptr %xs, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p, %m, %o cache cg evict evict_first : tensor<1024x!tile.ptr<bf16>>
  %ys = tile.splat %y : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %q = tile.addptr %ys, %r : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  tile.store %q, %v, %m cache cs evict evict_last : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// A pointer chosen per row between two 16-byte aligned rows (arith.select on
// a condition constant along each row) keeps both sides' alignment: 8 bf16.
// CHECK-LABEL: func.func @select_between_aligned_rows
// CHECK: tile.load %{{.*}} {vec = 8 : i32} : tensor<2x1024x!tile.ptr<bf16>>
func.func @select_between_aligned_rows(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                                       %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                                       %n: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %rows = tile.make_range {start = 0 : i32, end = 2 : i32} : tensor<2xi32>
  %r = tile.expand_dims %rows {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
  %ns = tile.splat %n : i32 -> tensor<2x1xi32>
  %c = arith.cmpi slt, %r, %ns : tensor<2x1xi32>
  %as = tile.splat %a : !tile.ptr<bf16> -> tensor<2x1x!tile.ptr<bf16>>
  %bs = tile.splat %b : !tile.ptr<bf16> -> tensor<2x1x!tile.ptr<bf16>>
  %sel = arith.select %c, %as, %bs : tensor<2x1xi1>, tensor<2x1x!tile.ptr<bf16>>
  %base = tile.broadcast %sel : tensor<2x1x!tile.ptr<bf16>> -> tensor<2x1024x!tile.ptr<bf16>>
  %cols = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %c2 = tile.expand_dims %cols {axis = 0 : i32} : tensor<1024xi32> -> tensor<1x1024xi32>
  %cb = tile.broadcast %c2 : tensor<1x1024xi32> -> tensor<2x1024xi32>
  %p = tile.addptr %base, %cb : tensor<2x1024x!tile.ptr<bf16>>, tensor<2x1024xi32>
  %v = tile.load %p : tensor<2x1024x!tile.ptr<bf16>>
  return
}

// -----

// ... but not when one side is unaligned: one element at a time.
// CHECK-LABEL: func.func @select_with_unaligned_side
// CHECK: tile.load %{{.*}} {vec = 1 : i32} : tensor<1024x!tile.ptr<bf16>>
func.func @select_with_unaligned_side(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                                      %b: !tile.ptr<bf16>, %c: i1)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %sel = arith.select %c, %a, %b : !tile.ptr<bf16>
  %s = tile.splat %sel : !tile.ptr<bf16> -> tensor<1024x!tile.ptr<bf16>>
  %cols = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %p = tile.addptr %s, %cols : tensor<1024x!tile.ptr<bf16>>, tensor<1024xi32>
  %v = tile.load %p : tensor<1024x!tile.ptr<bf16>>
  return
}

// -----

// An scf.for induction variable is a multiple of what divides its lower bound
// and its step: offsets i = 0, 8, 16, ... keep f32 16-byte aligned (vec 4);
// a step of 2 leaves 8 bytes (vec 2).
// CHECK-LABEL: func.func @loop_induction_variable
// CHECK: tile.load %{{.*}} {vec = 4 : i32} : tensor<512x!tile.ptr<f32>>
// CHECK: tile.load %{{.*}} {vec = 2 : i32} : tensor<512x!tile.ptr<f32>>
func.func @loop_induction_variable(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c8 = arith.constant 8 : i32
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  scf.for %i = %c0 to %n step %c8 : i32 {
    %b = tile.addptr %x, %i : !tile.ptr<f32>, i32
    %bs = tile.splat %b : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
    %p = tile.addptr %bs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
    %v = tile.load %p : tensor<512x!tile.ptr<f32>>
    tile.store %p, %v : tensor<512x!tile.ptr<f32>>
  }
  scf.for %j = %c0 to %n step %c2 : i32 {
    %b = tile.addptr %x, %j : !tile.ptr<f32>, i32
    %bs = tile.splat %b : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
    %p = tile.addptr %bs, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
    %v = tile.load %p : tensor<512x!tile.ptr<f32>>
    tile.store %p, %v : tensor<512x!tile.ptr<f32>>
  }
  return
}

// -----

// Ordered loads move one element, polls of 32- and 64-bit elements vectors
// (each read again until all its elements are non-zero), polls of narrower
// elements one element.
// CHECK-LABEL: func.func @ordered_and_polls
// CHECK: tile.load %{{.*}} ordered acquire gpu {vec = 1 : i32} : tensor<512x!tile.ptr<i32>>
// CHECK: tile.load %{{.*}} ordered relaxed sys {poll_ns = 1000 : i64, vec = 4 : i32} : tensor<512x!tile.ptr<i32>>
// CHECK: tile.load %{{.*}} ordered relaxed sys {poll_ns = 1000 : i64, vec = 2 : i32} : tensor<512x!tile.ptr<i64>>
// CHECK: tile.load %{{.*}} ordered relaxed sys {poll_ns = 1000 : i64, vec = 1 : i32} : tensor<512x!tile.ptr<i16>>
func.func @ordered_and_polls(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32},
                             %y: !tile.ptr<i64> {tile.divisibility = 16 : i32},
                             %z: !tile.ptr<i16> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<512x!tile.ptr<i32>>
  %p = tile.addptr %xs, %r : tensor<512x!tile.ptr<i32>>, tensor<512xi32>
  %a = tile.load %p ordered acquire gpu : tensor<512x!tile.ptr<i32>>
  %b = tile.load %p ordered relaxed sys {poll_ns = 1000 : i64} : tensor<512x!tile.ptr<i32>>
  %ys = tile.splat %y : !tile.ptr<i64> -> tensor<512x!tile.ptr<i64>>
  %q = tile.addptr %ys, %r : tensor<512x!tile.ptr<i64>>, tensor<512xi32>
  %c = tile.load %q ordered relaxed sys {poll_ns = 1000 : i64} : tensor<512x!tile.ptr<i64>>
  %zs = tile.splat %z : !tile.ptr<i16> -> tensor<512x!tile.ptr<i16>>
  %s = tile.addptr %zs, %r : tensor<512x!tile.ptr<i16>>, tensor<512xi32>
  %d = tile.load %s ordered relaxed sys {poll_ns = 1000 : i64} : tensor<512x!tile.ptr<i16>>
  return
}
