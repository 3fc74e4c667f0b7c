// RUN: kiln-opt %s -split-input-file -kiln-convert-tile-to-nvvm -verify-diagnostics

// The conversion needs the layout of kiln-tile-assign-layout.
// expected-error @+1 {{kernel has no layout: run kiln-tile-assign-layout first}}
func.func @no_layout(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  return
}

// -----

// expected-error @+1 {{kernel has no layout: run kiln-tile-assign-layout first}}
func.func @half_a_layout(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.elems_per_thread = 4 : i32} {
  return
}

// -----

// All kernels of a module share one layout.
func.func @first(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  return
}
// expected-error @+1 {{all kernels of a module must share one layout; this one has 256 threads x 4 elements, an earlier one 128 x 4}}
func.func @second(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 256 : i32, tile.elems_per_thread = 4 : i32} {
  return
}

// -----

func.func @third(%x: !tile.ptr<bf16>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  return
}
// expected-error @+1 {{all kernels of a module must share one layout; this one has 128 threads x 4 elements, an earlier one 128 x 8}}
func.func @fourth(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  return
}

// -----

// Only splat constants exist on tiles.
func.func @non_splat_constant(%x: !tile.ptr<i32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  // expected-error @+1 {{'arith.constant' op only splat constants are supported on tiles}}
  %c = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<4x!tile.ptr<i32>>
  tile.store %xs, %c : tensor<4x!tile.ptr<i32>>
  return
}

// -----

// kiln-tile-accelerate-dot gives every tile.dot its tensor-core op; one that
// reaches the conversion was not through it.
func.func @dot_not_accelerated(%x: !tile.ptr<bf16>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %v = tile.load %x : !tile.ptr<bf16>
  %a = tile.splat %v : bf16 -> tensor<16x16xbf16>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  // expected-error @+1 {{'tile.dot' op expected kiln-tile-accelerate-dot to have rewritten it (tile.warp_dot, tile.warpgroup_dot, tile.tcgen05_dot)}}
  %d = tile.dot %a, %a, %zero : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

// cp.async.bulk needs a 16-byte aligned source, proved from tile.divisibility.
func.func @bulk_load_unaligned_argument(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  // expected-error @+1 {{'tile.bulk_load' op needs a 16-byte aligned pointer for cp.async.bulk, but it is only known to be 1-byte aligned (give its kernel argument tile.divisibility = 16 and offset it by multiples of 16 bytes)}}
  %t = tile.bulk_load %x : !tile.ptr<f32> -> tensor<512xf32>
  return
}

// -----

// An aligned argument offset by 2 f32 (8 bytes) is only 8-byte aligned.
func.func @bulk_load_unaligned_offset(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %c2 = arith.constant 2 : i32
  %p = tile.addptr %x, %c2 : !tile.ptr<f32>, i32
  // expected-error @+1 {{'tile.bulk_load' op needs a 16-byte aligned pointer for cp.async.bulk, but it is only known to be 8-byte aligned}}
  %t = tile.bulk_load %p : !tile.ptr<f32> -> tensor<512xf32>
  return
}

// -----

// A loop index with a step of 2 f32 elements: 8-byte aligned at best.
func.func @bulk_load_unaligned_loop(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  scf.for %i = %c0 to %n step %c2 : i32 {
    %p = tile.addptr %x, %i : !tile.ptr<f32>, i32
    // expected-error @+1 {{'tile.bulk_load' op needs a 16-byte aligned pointer for cp.async.bulk, but it is only known to be 8-byte aligned}}
    %t = tile.bulk_load %p : !tile.ptr<f32> -> tensor<512xf32>
  }
  return
}

// -----

// A count of bf16 known to be a multiple of 4 only (8 bytes): cp.async.bulk
// copies whole 16-byte units.
func.func @bulk_load_count_units(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 4 : i32})
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  // expected-error @+1 {{'tile.bulk_load' op needs a count of whole 16-byte units for cp.async.bulk (a multiple of 8 'bf16' elements), but it is only known to be a multiple of 4 (give its kernel argument tile.divisibility = 16 or round it)}}
  %t = tile.bulk_load %x count %n : !tile.ptr<bf16> -> tensor<512xbf16>
  return
}

// -----

// The ring's bulk issue is checked like the load: here its pointer.
func.func @ring_issue_bulk_unaligned(%x: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %s: i32, %p: i1)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 4 : i32} {
  %r = tile.ring_alloc : !tile.ring<2, tensor<512xbf16>>
  %c4 = arith.constant 4 : i32
  %q = tile.addptr %x, %c4 : !tile.ptr<bf16>, i32
  // expected-error @+1 {{'tile.ring_issue' op needs a 16-byte aligned pointer for cp.async.bulk, but it is only known to be 8-byte aligned}}
  tile.ring_issue %q -> %r[%s] if %p : !tile.ptr<bf16>, !tile.ring<2, tensor<512xbf16>>
  return
}

// -----

// setmaxnreg moves registers between whole warpgroups: 2 consumer warps are not.
func.func @warp_specialize_two_warps() attributes {tile.kernel, tile.threads_per_block = 64 : i32, tile.elems_per_thread = 1 : i32} {
  // expected-error @+1 {{'tile.warp_specialize' op expected whole warpgroups of consumers (num_warps a multiple of 4, at most 28), got 2 warps}}
  tile.warp_specialize consumer {
  } producer {
  }
  return
}

// -----

func.func @warp_specialize_maxnreg() attributes {tile.kernel, tile.maxnreg = 128 : i32, tile.threads_per_block = 256 : i32, tile.elems_per_thread = 1 : i32} {
  // expected-error @+1 {{'tile.warp_specialize' op expected no maxnreg and no min_programs_per_sm above 1 on a warp-specialized kernel}}
  tile.warp_specialize consumer {
  } producer {
  }
  return
}

// -----

func.func @warp_specialize_two_programs() attributes {tile.kernel, tile.min_programs_per_sm = 2 : i32, tile.threads_per_block = 256 : i32, tile.elems_per_thread = 1 : i32} {
  // expected-error @+1 {{'tile.warp_specialize' op expected no maxnreg and no min_programs_per_sm above 1 on a warp-specialized kernel}}
  tile.warp_specialize consumer {
  } producer {
  }
  return
}

// -----

// A tile too large for a thread: 64 x 4096 bf16 on 128 threads is 2048
// elements a thread. The pointer tile before it (its elements computed where
// they are used) is not reported.
func.func @tile_too_large(%x: !tile.ptr<bf16>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %ptrs = tile.splat %x : !tile.ptr<bf16> -> tensor<64x4096x!tile.ptr<bf16>>
  // expected-error @+1 {{'tile.load' op makes a tile of 2048 elements a thread ('tensor<64x4096xbf16>' on 128 threads), more than the 1024 a tile may hold: a thread has 255 registers, the lowering one value an element; use a smaller tile or more warps}}
  %v = tile.load %ptrs : tensor<64x4096x!tile.ptr<bf16>>
  tile.store %ptrs, %v : tensor<64x4096x!tile.ptr<bf16>>
  return
}

// -----

// 1024 elements a thread lower (f32 [256, 512] on 128 threads), 2048 do not;
// an index tile of any size lowers.
func.func @tile_one_element_too_many(%x: !tile.ptr<f32>)
    attributes {tile.kernel, tile.threads_per_block = 128 : i32, tile.elems_per_thread = 8 : i32} {
  %w = tile.load %x : !tile.ptr<f32>
  %h = tile.splat %w : f32 -> tensor<256x512xf32>
  %i = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<524288xi32>
  // expected-error @+1 {{'tile.splat' op makes a tile of 2048 elements a thread ('tensor<512x512xf32>' on 128 threads)}}
  %f = tile.splat %w : f32 -> tensor<512x512xf32>
  return
}
