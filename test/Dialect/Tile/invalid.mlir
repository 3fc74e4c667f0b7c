// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// One case per verifier branch: TileTypes.cpp, TileOps.cpp, the ODS
// constraints, and the attribute verifiers of TileDialect.cpp.

//===----------------------------------------------------------------------===//
// !tile.ptr
//===----------------------------------------------------------------------===//

// expected-error @+1 {{expected the pointee of !tile.ptr to be an integer or float type, got 'tensor<4xf32>'}}
func.func private @ptr_to_tensor(!tile.ptr<tensor<4xf32>>)

// -----

// expected-error @+1 {{expected the pointee of !tile.ptr to be an integer or float type, got 'index'}}
func.func private @ptr_to_index(!tile.ptr<index>)

// -----

//===----------------------------------------------------------------------===//
// tile.program_id / tile.num_programs
//===----------------------------------------------------------------------===//

func.func @program_id_bad_axis() {
  // expected-error @+1 {{custom op 'tile.program_id' expected string or keyword containing one of the following enum values for attribute 'axis' [x, y, z]}}
  %0 = tile.program_id w : i32
  return
}

// -----

func.func @program_id_i64() {
  // expected-error @+1 {{'tile.program_id' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = tile.program_id x : i64
  return
}

// -----

func.func @num_programs_index() {
  // expected-error @+1 {{'tile.num_programs' op result #0 must be 32-bit signless integer, but got 'index'}}
  %0 = "tile.num_programs"() <{axis = 1 : i32}> : () -> index
  return
}

// -----

//===----------------------------------------------------------------------===//
// Thread-block clusters
//===----------------------------------------------------------------------===//

func.func @cluster_id_bad_axis() {
  // expected-error @+1 {{custom op 'tile.cluster_id' expected string or keyword containing one of the following enum values for attribute 'axis' [x, y, z]}}
  %0 = tile.cluster_id w : i32
  return
}

// -----

func.func @cluster_cta_id_bad_axis() {
  // expected-error @+1 {{custom op 'tile.cluster_cta_id' expected string or keyword containing one of the following enum values for attribute 'axis' [x, y, z]}}
  %0 = tile.cluster_cta_id 3 : i32
  return
}

// -----

func.func @cluster_size_i64() {
  // expected-error @+1 {{'tile.cluster_size' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = tile.cluster_size : i64
  return
}

// -----

func.func @cluster_load_types_differ(%x: tensor<128xf32>, %r: i32) {
  // expected-error @+1 {{'tile.cluster_load' op failed to verify that all of {src, result} have same type}}
  %0 = "tile.cluster_load"(%x, %r) : (tensor<128xf32>, i32) -> tensor<128xf16>
  return
}

// -----

func.func @cluster_load_of_pointers(%p: tensor<128x!tile.ptr<f32>>, %r: i32) {
  // expected-error @+1 {{'tile.cluster_load' op operand #0 must be ranked tensor of floating-point or signless integer values, but got 'tensor<128x!tile.ptr<f32>>'}}
  %0 = tile.cluster_load %p, %r : tensor<128x!tile.ptr<f32>>
  return
}

// -----

func.func @cluster_load_i64_rank(%x: tensor<128xf32>, %r: i64) {
  // expected-error @+1 {{'tile.cluster_load' op operand #1 must be 32-bit signless integer, but got 'i64'}}
  %0 = "tile.cluster_load"(%x, %r) : (tensor<128xf32>, i64) -> tensor<128xf32>
  return
}

// -----

func.func @cluster_load_rank_outside(%x: tensor<128xf32>) attributes {tile.cluster_dims = array<i32: 2, 1, 1>} {
  %r = arith.constant 2 : i32
  // expected-error @+1 {{'tile.cluster_load' op expected a rank in [0, 2) (the kernel's cluster of 2x1x1), got 2}}
  %0 = tile.cluster_load %x, %r : tensor<128xf32>
  return
}

// -----

func.func @cluster_gather_wrong_size(%x: tensor<128xf32>) attributes {tile.cluster_dims = array<i32: 2, 2, 1>} {
  // expected-error @+1 {{'tile.cluster_gather' op expected result type 'tensor<4x128xf32>' (the cluster size 4, then the source's shape), got 'tensor<2x128xf32>'}}
  %0 = tile.cluster_gather %x : tensor<128xf32> -> tensor<2x128xf32>
  return
}

// -----

func.func @cluster_gather_no_cluster(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.cluster_gather' op expected result type 'tensor<1x128xf32>' (the cluster size 1, then the source's shape), got 'tensor<2x128xf32>'}}
  %0 = tile.cluster_gather %x : tensor<128xf32> -> tensor<2x128xf32>
  return
}

// -----

func.func @cluster_gather_wrong_shape(%x: tensor<4x32xf32>) attributes {tile.cluster_dims = array<i32: 2, 1, 1>} {
  // expected-error @+1 {{'tile.cluster_gather' op expected result type 'tensor<2x4x32xf32>' (the cluster size 2, then the source's shape), got 'tensor<2x128xf32>'}}
  %0 = tile.cluster_gather %x : tensor<4x32xf32> -> tensor<2x128xf32>
  return
}

// -----

func.func @cluster_gather_element_type(%x: tensor<128xf32>) attributes {tile.cluster_dims = array<i32: 2, 1, 1>} {
  // expected-error @+1 {{'tile.cluster_gather' op expected result type 'tensor<2x128xf32>' (the cluster size 2, then the source's shape), got 'tensor<2x128xf16>'}}
  %0 = tile.cluster_gather %x : tensor<128xf32> -> tensor<2x128xf16>
  return
}

// -----

func.func @cluster_gather_not_power_of_two(%x: tensor<128xf32>) attributes {tile.cluster_dims = array<i32: 3, 1, 1>} {
  // expected-error @+1 {{'tile.cluster_gather' op expected a cluster of a power-of-two size, got 3x1x1 (3 blocks)}}
  %0 = tile.cluster_gather %x : tensor<128xf32> -> tensor<3x128xf32>
  return
}

// -----

func.func @cluster_sum_bf16(%x: tensor<128xbf16>) attributes {tile.cluster_dims = array<i32: 2, 1, 1>} {
  // expected-error @+1 {{'tile.cluster_sum' op operand #0 must be variadic of ranked tensor of 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<128xbf16>'}}
  %0 = tile.cluster_sum %x : tensor<128xbf16>
  return
}

// -----

func.func @cluster_sum_nothing() attributes {tile.cluster_dims = array<i32: 2, 1, 1>} {
  // expected-error @+1 {{'tile.cluster_sum' op expected at least one tile}}
  "tile.cluster_sum"() : () -> ()
  return
}

// -----

func.func @cluster_gather_of_pointers(%p: tensor<128x!tile.ptr<f32>>) attributes {tile.cluster_dims = array<i32: 2, 1, 1>} {
  // expected-error @+1 {{'tile.cluster_gather' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tile.cluster_gather %p : tensor<128x!tile.ptr<f32>> -> tensor<2x128x!tile.ptr<f32>>
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.min_programs_per_sm' to be an i32 in [1, 32], got 0 : i32}}
func.func @min_programs_per_sm_zero() attributes {tile.kernel, tile.min_programs_per_sm = 0 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.min_programs_per_sm' to be an i32 in [1, 32], got 2 : i64}}
func.func @min_programs_per_sm_i64() attributes {tile.kernel, tile.min_programs_per_sm = 2 : i64} {
  return
}

// -----

func.func @min_programs_per_sm_on_a_loop(%n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{'scf.for' op 'tile.min_programs_per_sm' applies to func.func only}}
  scf.for %i = %c0 to %n step %c1 : i32 {
  } {tile.min_programs_per_sm = 2 : i32}
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.cluster_dims' to be an array<i32> of 3 entries, got array<i32: 2, 1>}}
func.func @cluster_dims_two_entries() attributes {tile.kernel, tile.cluster_dims = array<i32: 2, 1>} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.cluster_dims' to be an array<i32> of 3 entries, got [2, 1, 1]}}
func.func @cluster_dims_not_an_array() attributes {tile.kernel, tile.cluster_dims = [2, 1, 1]} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected positive 'tile.cluster_dims', got array<i32: 2, 0, 1>}}
func.func @cluster_dims_zero() attributes {tile.kernel, tile.cluster_dims = array<i32: 2, 0, 1>} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected at most 16 blocks per cluster (the non-portable cluster size), got 32}}
func.func @cluster_dims_too_many() attributes {tile.kernel, tile.cluster_dims = array<i32: 4, 4, 2>} {
  return
}

// -----

// expected-error @+1 {{'tile.cluster_barrier' op 'tile.cluster_dims' applies to func.func only}}
tile.cluster_barrier {tile.cluster_dims = array<i32: 2, 1, 1>}

// -----

//===----------------------------------------------------------------------===//
// tile.make_range
//===----------------------------------------------------------------------===//

func.func @make_range_2d() {
  // expected-error @+1 {{'tile.make_range' op expected a 1-D result, got rank 2}}
  %0 = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<2x64xi32>
  return
}

// -----

func.func @make_range_empty() {
  // expected-error @+1 {{'tile.make_range' op expected end > start, got start = 8, end = 8}}
  %0 = tile.make_range {start = 8 : i32, end = 8 : i32} : tensor<1xi32>
  return
}

// -----

func.func @make_range_size_mismatch() {
  // expected-error @+1 {{'tile.make_range' op expected end - start (64) to equal the result size (128)}}
  %0 = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<128xi32>
  return
}

// -----

func.func @make_range_not_power_of_two() {
  // expected-error @+1 {{'tile.make_range' op expected a power-of-two size, got 96}}
  %0 = tile.make_range {start = 32 : i32, end = 128 : i32} : tensor<96xi32>
  return
}

// -----

func.func @make_range_i64() {
  // expected-error @+1 {{'tile.make_range' op result #0 must be ranked tensor of 32-bit signless integer values, but got 'tensor<128xi64>'}}
  %0 = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.iota
//===----------------------------------------------------------------------===//

func.func @iota_0d() {
  // expected-error @+1 {{'tile.iota' op expected a result of rank >= 1, got 'tensor<i32>'}}
  %0 = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<i32>
  return
}

// -----

func.func @iota_dim_too_large() {
  // expected-error @+1 {{'tile.iota' op expected dim in [0, 2), got 2}}
  %0 = tile.iota {dim = 2 : i32, start = 0 : i32} : tensor<16x32xi32>
  return
}

// -----

func.func @iota_negative_dim() {
  // expected-error @+1 {{'tile.iota' op expected dim in [0, 2), got -1}}
  %0 = tile.iota {dim = -1 : i32, start = 0 : i32} : tensor<16x32xi32>
  return
}

// -----

func.func @iota_not_power_of_two() {
  // expected-error @+1 {{'tile.iota' op expected power-of-two dimensions, got 'tensor<16x24xi32>'}}
  %0 = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x24xi32>
  return
}

// -----

func.func @iota_dynamic() {
  // expected-error @+1 {{'tile.iota' op expected power-of-two dimensions, got 'tensor<16x?xi32>'}}
  %0 = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x?xi32>
  return
}

// -----

func.func @iota_overflow() {
  // expected-error @+1 {{'tile.iota' op expected start + size - 1 to fit in i32, got 2147483663}}
  %0 = tile.iota {dim = 1 : i32, start = 2147483632 : i32} : tensor<2x32xi32>
  return
}

// -----

func.func @iota_not_i32() {
  // expected-error @+1 {{'tile.iota' op result #0 must be ranked tensor of 32-bit signless integer values, but got 'tensor<16x32xi64>'}}
  %0 = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<16x32xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.splat
//===----------------------------------------------------------------------===//

func.func @splat_element_mismatch(%x: f32) {
  // expected-error @+1 {{'tile.splat' op failed to verify that result element type matches the scalar}}
  %0 = tile.splat %x : f32 -> tensor<128xf16>
  return
}

// -----

func.func @splat_of_tile(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tile.splat' op operand #0 must be tile scalar, but got 'tensor<4xf32>'}}
  %0 = "tile.splat"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @splat_of_index(%x: index) {
  // expected-error @+1 {{'tile.splat' op operand #0 must be tile scalar, but got 'index'}}
  %0 = tile.splat %x : index -> tensor<4xindex>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.expand_dims
//===----------------------------------------------------------------------===//

func.func @expand_dims_axis_out_of_range(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op expected axis in [0, 1], got 2}}
  %0 = tile.expand_dims %x {axis = 2 : i32} : tensor<128xf32> -> tensor<128x1x1xf32>
  return
}

// -----

func.func @expand_dims_negative_axis(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op expected axis in [0, 1], got -1}}
  %0 = tile.expand_dims %x {axis = -1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
  return
}

// -----

func.func @expand_dims_wrong_shape(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op expected result type 'tensor<128x1xf32>', got 'tensor<1x128xf32>'}}
  %0 = tile.expand_dims %x {axis = 1 : i32} : tensor<128xf32> -> tensor<1x128xf32>
  return
}

// -----

func.func @expand_dims_wrong_element(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.expand_dims' op expected result type 'tensor<1x128xf32>', got 'tensor<1x128xf16>'}}
  %0 = tile.expand_dims %x {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.broadcast
//===----------------------------------------------------------------------===//

func.func @broadcast_element_type(%x: tensor<1x128xf32>) {
  // expected-error @+1 {{'tile.broadcast' op expected the element type to be kept, got 'f32' -> 'f16'}}
  %0 = tile.broadcast %x : tensor<1x128xf32> -> tensor<64x128xf16>
  return
}

// -----

func.func @broadcast_rank(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.broadcast' op expected equal ranks, got 1 -> 2}}
  %0 = tile.broadcast %x : tensor<128xf32> -> tensor<64x128xf32>
  return
}

// -----

func.func @broadcast_non_unit_dim(%x: tensor<2x128xf32>) {
  // expected-error @+1 {{'tile.broadcast' op dimension 0 of size 2 cannot be broadcast to 64}}
  %0 = tile.broadcast %x : tensor<2x128xf32> -> tensor<64x128xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.trans
//===----------------------------------------------------------------------===//

func.func @trans_rank_1(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.trans' op expected a tile of rank >= 2, got 'tensor<128xf32>'}}
  %0 = tile.trans %x {order = array<i64: 0>} : tensor<128xf32> -> tensor<128xf32>
  return
}

// -----

func.func @trans_order_length(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.trans' op expected an order of 2 dimensions (the rank), got 3}}
  %0 = tile.trans %x {order = array<i64: 1, 0, 2>} : tensor<16x64xf32> -> tensor<64x16xf32>
  return
}

// -----

func.func @trans_order_out_of_range(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.trans' op expected order entries in [0, 2), got 2}}
  %0 = tile.trans %x {order = array<i64: 2, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  return
}

// -----

func.func @trans_order_negative(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.trans' op expected order entries in [0, 2), got -1}}
  %0 = tile.trans %x {order = array<i64: -1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  return
}

// -----

func.func @trans_not_a_permutation(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'tile.trans' op expected a permutation, got dimension 1 twice}}
  %0 = tile.trans %x {order = array<i64: 1, 1, 0>} : tensor<2x4x8xf32> -> tensor<4x4x2xf32>
  return
}

// -----

func.func @trans_wrong_shape(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.trans' op expected result type 'tensor<64x16xf32>', got 'tensor<16x64xf32>'}}
  %0 = tile.trans %x {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<16x64xf32>
  return
}

// -----

func.func @trans_wrong_element(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.trans' op expected result type 'tensor<64x16xf32>', got 'tensor<64x16xbf16>'}}
  %0 = tile.trans %x {order = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xbf16>
  return
}

// -----

func.func @trans_missing_order(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.trans' op requires attribute 'order'}}
  %0 = tile.trans %x : tensor<16x64xf32> -> tensor<64x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.reshape, tile.join, tile.split
//===----------------------------------------------------------------------===//

func.func @reshape_element_type(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.reshape' op expected the element type to be kept, got 'f32' -> 'bf16'}}
  %0 = tile.reshape %x : tensor<16x64xf32> -> tensor<1024xbf16>
  return
}

// -----

func.func @reshape_numel(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tile.reshape' op expected 1024 elements (as the source), got 512}}
  %0 = tile.reshape %x : tensor<16x64xf32> -> tensor<512xf32>
  return
}

// -----

func.func @join_operand_types(%a: tensor<16xf32>, %b: tensor<16xf16>) {
  // expected-error @+1 {{'tile.join' op failed to verify that all of {lhs, rhs} have same type}}
  %0 = "tile.join"(%a, %b) : (tensor<16xf32>, tensor<16xf16>) -> tensor<16x2xf32>
  return
}

// -----

func.func @join_result_type(%a: tensor<16xf32>) {
  // expected-error @+1 {{'tile.join' op expected result type 'tensor<16x2xf32>', got 'tensor<2x16xf32>'}}
  %0 = tile.join %a, %a : tensor<16xf32> -> tensor<2x16xf32>
  return
}

// -----

func.func @split_last_dim(%x: tensor<16x4xf32>) {
  // expected-error @+1 {{'tile.split' op expected a tile of rank >= 2 whose last dimension is 2, got 'tensor<16x4xf32>'}}
  %0:2 = tile.split %x : tensor<16x4xf32> -> tensor<16xf32>
  return
}

// -----

func.func @split_rank_1(%x: tensor<2xf32>) {
  // expected-error @+1 {{'tile.split' op expected a tile of rank >= 2 whose last dimension is 2, got 'tensor<2xf32>'}}
  %0:2 = "tile.split"(%x) : (tensor<2xf32>) -> (tensor<1xf32>, tensor<1xf32>)
  return
}

// -----

func.func @split_result_type(%x: tensor<16x2xf32>) {
  // expected-error @+1 {{'tile.split' op expected result type 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %0:2 = tile.split %x : tensor<16x2xf32> -> tensor<8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.addptr
//===----------------------------------------------------------------------===//

func.func @addptr_scalar_and_tile(%p: !tile.ptr<f32>, %o: tensor<128xi32>) {
  // expected-error @+1 {{'tile.addptr' op expected pointer and offset both scalars or both tiles, got '!tile.ptr<f32>' and 'tensor<128xi32>'}}
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, tensor<128xi32>
  return
}

// -----

func.func @addptr_shape_mismatch(%p: tensor<128x!tile.ptr<f32>>, %o: tensor<64xi32>) {
  // expected-error @+1 {{'tile.addptr' op expected the offset shape to match the pointer shape, got 'tensor<64xi32>' for 'tensor<128x!tile.ptr<f32>>'}}
  %0 = tile.addptr %p, %o : tensor<128x!tile.ptr<f32>>, tensor<64xi32>
  return
}

// -----

func.func @addptr_i16_offset(%p: !tile.ptr<f32>, %o: i16) {
  // expected-error @+1 {{'tile.addptr' op expected i32 or i64 offsets, got 'i16'}}
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, i16
  return
}

// -----

func.func @addptr_result_type(%p: !tile.ptr<f32>, %o: i32) {
  // expected-error @+1 {{'tile.addptr' op failed to verify that all of {ptr, result} have same type}}
  %0 = "tile.addptr"(%p, %o) : (!tile.ptr<f32>, i32) -> !tile.ptr<f16>
  return
}

// -----

func.func @addptr_not_a_pointer(%p: i64, %o: i32) {
  // expected-error @+1 {{'tile.addptr' op operand #0 must be}}
  %0 = "tile.addptr"(%p, %o) : (i64, i32) -> i64
  return
}

// -----

func.func @addptr_float_offset(%p: !tile.ptr<f32>, %o: f32) {
  // expected-error @+1 {{'tile.addptr' op operand #1 must be}}
  %0 = "tile.addptr"(%p, %o) : (!tile.ptr<f32>, f32) -> !tile.ptr<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.load
//===----------------------------------------------------------------------===//

func.func @load_result_type(%p: tensor<128x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op failed to verify that result is the pointee of ptr}}
  %0 = "tile.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<128x!tile.ptr<f32>>) -> tensor<128xf16>
  return
}

// -----

func.func @load_result_shape(%p: tensor<128x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op failed to verify that result is the pointee of ptr}}
  %0 = "tile.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<128x!tile.ptr<f32>>) -> tensor<64xf32>
  return
}

// -----

func.func @load_mask_shape(%p: tensor<128x!tile.ptr<f32>>, %m: tensor<64xi1>) {
  // expected-error @+1 {{'tile.load' op failed to verify that mask is i1 of the shape of ptr}}
  %0 = "tile.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<128x!tile.ptr<f32>>, tensor<64xi1>) -> tensor<128xf32>
  return
}

// -----

func.func @load_mask_not_i1(%p: tensor<128x!tile.ptr<f32>>, %m: tensor<128xi8>) {
  // expected-error @+1 {{'tile.load' op operand #1 must be}}
  %0 = "tile.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<128x!tile.ptr<f32>>, tensor<128xi8>) -> tensor<128xf32>
  return
}

// -----

func.func @load_scalar_mask_for_tile(%p: tensor<128x!tile.ptr<f32>>, %m: i1) {
  // expected-error @+1 {{'tile.load' op failed to verify that mask is i1 of the shape of ptr}}
  %0 = "tile.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<128x!tile.ptr<f32>>, i1) -> tensor<128xf32>
  return
}

// -----

func.func @load_other_type(%p: tensor<128x!tile.ptr<f32>>, %m: tensor<128xi1>, %o: tensor<128xf16>) {
  // expected-error @+1 {{'tile.load' op failed to verify that other is the pointee of ptr}}
  %0 = "tile.load"(%p, %m, %o) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<128x!tile.ptr<f32>>, tensor<128xi1>, tensor<128xf16>) -> tensor<128xf32>
  return
}

// -----

func.func @load_other_without_mask(%p: tensor<128x!tile.ptr<f32>>, %o: tensor<128xf32>) {
  // expected-error @+1 {{'tile.load' op 'other' requires a mask}}
  %0 = "tile.load"(%p, %o) <{operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<128x!tile.ptr<f32>>, tensor<128xf32>) -> tensor<128xf32>
  return
}

// -----

func.func @load_not_a_pointer(%p: tensor<128xi64>) {
  // expected-error @+1 {{'tile.load' op operand #0 must be}}
  %0 = "tile.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<128xi64>) -> tensor<128xi64>
  return
}

// -----

func.func @load_vec_not_i32(%p: tensor<128x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op attribute 'vec' failed to satisfy constraint: 32-bit signless integer attribute}}
  %0 = tile.load %p {vec = 4 : i64} : tensor<128x!tile.ptr<f32>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.store
//===----------------------------------------------------------------------===//

func.func @store_value_type(%p: tensor<128x!tile.ptr<f32>>, %v: tensor<128xf16>) {
  // expected-error @+1 {{'tile.store' op failed to verify that value is the pointee of ptr}}
  "tile.store"(%p, %v) : (tensor<128x!tile.ptr<f32>>, tensor<128xf16>) -> ()
  return
}

// -----

func.func @store_value_shape(%p: tensor<128x!tile.ptr<f32>>, %v: tensor<64xf32>) {
  // expected-error @+1 {{'tile.store' op failed to verify that value is the pointee of ptr}}
  "tile.store"(%p, %v) : (tensor<128x!tile.ptr<f32>>, tensor<64xf32>) -> ()
  return
}

// -----

func.func @store_mask_shape(%p: tensor<128x!tile.ptr<f32>>, %v: tensor<128xf32>, %m: tensor<64xi1>) {
  // expected-error @+1 {{'tile.store' op failed to verify that mask is i1 of the shape of ptr}}
  "tile.store"(%p, %v, %m) : (tensor<128x!tile.ptr<f32>>, tensor<128xf32>, tensor<64xi1>) -> ()
  return
}

// -----

func.func @store_not_a_pointer(%p: tensor<128xi64>, %v: tensor<128xi64>) {
  // expected-error @+1 {{'tile.store' op operand #0 must be}}
  "tile.store"(%p, %v) : (tensor<128xi64>, tensor<128xi64>) -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.dot
//===----------------------------------------------------------------------===//

func.func @dot_rank(%a: tensor<16xbf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected 2-D a, b and acc, got 'tensor<16xbf16>', 'tensor<16x16xbf16>' and 'tensor<16x16xf32>'}}
  %0 = tile.dot %a, %b, %c : tensor<16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_mixed(%a: tensor<16x16xbf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected a and b of one element type, got 'bf16' and 'f16'}}
  %0 = tile.dot %a, %b, %c : tensor<16x16xbf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_k(%a: tensor<16x32xbf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected b to have K = 32 rows (the columns of a), got 16}}
  %0 = tile.dot %a, %b, %c : tensor<16x32xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_acc_shape(%a: tensor<16x16xbf16>, %b: tensor<16x32xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected acc of shape 16x32, got 'tensor<16x16xf32>'}}
  %0 = tile.dot %a, %b, %c : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_small_n(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %c: tensor<8x4xf32>) {
  // expected-error @+1 {{'tile.dot' op expected N to be a power of two >= 8, got 4}}
  %0 = tile.dot %a, %b, %c : tensor<8x16xbf16> * tensor<16x4xbf16> -> tensor<8x4xf32>
  return
}

// -----

func.func @dot_small_n(%a: tensor<16x16xf16>, %b: tensor<16x4xf16>, %c: tensor<16x4xf32>) {
  // expected-error @+1 {{'tile.dot' op expected N to be a power of two >= 8, got 4}}
  %0 = tile.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x4xf16> -> tensor<16x4xf32>
  return
}

// -----

func.func @dot_k_not_pow2(%a: tensor<16x48xbf16>, %b: tensor<48x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected K to be a power of two >= 16, got 48}}
  %0 = tile.dot %a, %b, %c : tensor<16x48xbf16> * tensor<48x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_f32_operands(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or f8E4M3FN type or f8E5M2 type values}}
  %0 = tile.dot %a, %b, %c : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_acc_type(%a: tensor<16x16xbf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf16>) {
  // expected-error @+1 {{'tile.dot' op operand #2 must be ranked tensor of 32-bit float values}}
  %0 = "tile.dot"(%a, %b, %c) : (tensor<16x16xbf16>, tensor<16x16xbf16>, tensor<16x16xf16>) -> tensor<16x16xf16>
  return
}

// -----

func.func @dot_imprecise_acc_not_fp8(%a: tensor<16x64xbf16>, %b: tensor<64x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected FP8 operands with maxNumImpreciseAcc, got 'bf16'}}
  %0 = tile.dot %a, %b, %c {maxNumImpreciseAcc = 32 : i32} : tensor<16x64xbf16> * tensor<64x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_imprecise_acc_not_power_of_two(%a: tensor<16x128xf8E4M3FN>, %b: tensor<128x16xf8E4M3FN>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected maxNumImpreciseAcc to be a power of two >= 32 (the K of one FP8 MMA), got 96}}
  %0 = tile.dot %a, %b, %c {maxNumImpreciseAcc = 96 : i32} : tensor<16x128xf8E4M3FN> * tensor<128x16xf8E4M3FN> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_imprecise_acc_below_instruction_k(%a: tensor<16x128xf8E5M2>, %b: tensor<128x16xf8E5M2>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected maxNumImpreciseAcc to be a power of two >= 32 (the K of one FP8 MMA), got 16}}
  %0 = tile.dot %a, %b, %c {maxNumImpreciseAcc = 16 : i32} : tensor<16x128xf8E5M2> * tensor<128x16xf8E5M2> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_imprecise_acc_negative(%a: tensor<16x128xf8E5M2>, %b: tensor<128x16xf8E5M2>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected maxNumImpreciseAcc to be a power of two >= 32 (the K of one FP8 MMA), got -64}}
  %0 = tile.dot %a, %b, %c {maxNumImpreciseAcc = -64 : i32} : tensor<16x128xf8E5M2> * tensor<128x16xf8E5M2> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_imprecise_acc_above_k(%a: tensor<16x64xf8E4M3FN>, %b: tensor<64x16xf8E4M3FN>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{'tile.dot' op expected maxNumImpreciseAcc <= K = 64, got 128}}
  %0 = tile.dot %a, %b, %c {maxNumImpreciseAcc = 128 : i32} : tensor<16x64xf8E4M3FN> * tensor<64x16xf8E4M3FN> -> tensor<16x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.reduce / tile.reduce.return
//===----------------------------------------------------------------------===//

func.func @reduce_axis_too_large(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected axis in [0, 2), got 2}}
  %0 = tile.reduce %x {axis = 2 : i32} : tensor<64x128xf32> -> tensor<64xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @reduce_axis_negative(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected axis in [0, 1), got -1}}
  %0 = tile.reduce %x {axis = -1 : i32} : tensor<128xf32> -> f32 {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @reduce_pointers(%p: tensor<128x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.reduce' op cannot reduce a tile of pointers}}
  %0 = tile.reduce %p {axis = 0 : i32} : tensor<128x!tile.ptr<f32>> -> !tile.ptr<f32> {
  ^bb0(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>):
    tile.reduce.return %a : !tile.ptr<f32>
  }
  return
}

// -----

func.func @reduce_scalar_source(%x: f32) {
  // expected-error @+1 {{'tile.reduce' op operand #0 must be}}
  %0 = "tile.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    tile.reduce.return %a : f32
  }) : (f32) -> f32
  return
}

// -----

func.func @reduce_one_argument(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to take two 'f32' arguments}}
  %0 = tile.reduce %x {axis = 0 : i32} : tensor<128xf32> -> f32 {
  ^bb0(%a: f32):
    tile.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_three_arguments(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to take two 'f32' arguments}}
  %0 = tile.reduce %x {axis = 0 : i32} : tensor<128xf32> -> f32 {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @reduce_argument_type(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to take two 'f32' arguments}}
  %0 = tile.reduce %x {axis = 0 : i32} : tensor<128xf32> -> f32 {
  ^bb0(%a: f32, %b: f16):
    tile.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_return_type(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to return one 'f32'}}
  %0 = tile.reduce %x {axis = 0 : i32} : tensor<128xf32> -> f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.truncf %a : f32 to f16
    tile.reduce.return %t : f16
  }
  return
}

// -----

func.func @reduce_empty_region(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.reduce' op region #0 ('combine') failed to verify constraint: region with 1 blocks}}
  %0 = "tile.reduce"(%x) <{axis = 0 : i32}> ({
  }) : (tensor<128xf32>) -> f32
  return
}

// -----

func.func @reduce_result_keeps_axis(%x: tensor<64x128xf32>) {
  // expected-error @+2 {{'tile.reduce' op inferred type(s) 'tensor<64xf32>' are incompatible with return type(s) of operation 'tensor<128xf32>'}}
  // expected-error @+1 {{'tile.reduce' op failed to infer returned types}}
  %0 = tile.reduce %x {axis = 1 : i32} : tensor<64x128xf32> -> tensor<128xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @reduce_1d_to_tile(%x: tensor<128xf32>) {
  // expected-error @+2 {{'tile.reduce' op inferred type(s) 'f32' are incompatible with return type(s) of operation 'tensor<1xf32>'}}
  // expected-error @+1 {{'tile.reduce' op failed to infer returned types}}
  %0 = tile.reduce %x {axis = 0 : i32} : tensor<128xf32> -> tensor<1xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @reduce_no_source() {
  // expected-error @+1 {{'tile.reduce' op expected at least one source tile}}
  "tile.reduce"() <{axis = 0 : i32}> ({
  ^bb0:
    "tile.reduce.return"() : () -> ()
  }) : () -> ()
  return
}

// -----

func.func @reduce_multi_shapes(%x: tensor<64x128xf32>, %y: tensor<128x64xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected every source to have the shape of source #0 ('tensor<64x128xf32>'), got 'tensor<128x64xf32>' for source #1}}
  %0:2 = tile.reduce %x, %y {axis = 1 : i32} : tensor<64x128xf32>, tensor<128x64xf32> -> tensor<64xf32>, tensor<128xf32> {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    tile.reduce.return %a0, %a1 : f32, f32
  }
  return
}

// -----

func.func @reduce_multi_pointers(%x: tensor<128xf32>, %p: tensor<128x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.reduce' op cannot reduce a tile of pointers}}
  %0:2 = tile.reduce %x, %p {axis = 0 : i32} : tensor<128xf32>, tensor<128x!tile.ptr<f32>> -> f32, !tile.ptr<f32> {
  ^bb0(%a0: f32, %a1: !tile.ptr<f32>, %b0: f32, %b1: !tile.ptr<f32>):
    tile.reduce.return %a0, %a1 : f32, !tile.ptr<f32>
  }
  return
}

// -----

func.func @reduce_multi_broadcast(%x: tensor<16x128xf32>, %y: tensor<16x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op expected one source with `broadcast`, got 2}}
  %0:2 = tile.reduce %x, %y {axis = 1 : i32, broadcast} : tensor<16x128xf32>, tensor<16x128xf32> -> tensor<16x128xf32>, tensor<16x128xf32> {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    tile.reduce.return %a0, %a1 : f32, f32
  }
  return
}

// -----

func.func @reduce_multi_two_arguments(%x: tensor<128xf32>, %i: tensor<128xi32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to take 4 arguments, twice ('f32', 'i32'), got ('f32', 'i32')}}
  %0:2 = tile.reduce %x, %i {axis = 0 : i32} : tensor<128xf32>, tensor<128xi32> -> f32, i32 {
  ^bb0(%a: f32, %b: i32):
    tile.reduce.return %a, %b : f32, i32
  }
  return
}

// -----

func.func @reduce_multi_argument_order(%x: tensor<128xf32>, %i: tensor<128xi32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to take 4 arguments, twice ('f32', 'i32'), got ('f32', 'f32', 'i32', 'i32')}}
  %0:2 = tile.reduce %x, %i {axis = 0 : i32} : tensor<128xf32>, tensor<128xi32> -> f32, i32 {
  ^bb0(%a0: f32, %b0: f32, %a1: i32, %b1: i32):
    tile.reduce.return %a0, %a1 : f32, i32
  }
  return
}

// -----

func.func @reduce_multi_return_count(%x: tensor<128xf32>, %i: tensor<128xi32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to return 2 values ('f32', 'i32'), got ('f32')}}
  %0:2 = tile.reduce %x, %i {axis = 0 : i32} : tensor<128xf32>, tensor<128xi32> -> f32, i32 {
  ^bb0(%a0: f32, %a1: i32, %b0: f32, %b1: i32):
    tile.reduce.return %a0 : f32
  }
  return
}

// -----

func.func @reduce_multi_return_type(%x: tensor<128xf32>, %i: tensor<128xi32>) {
  // expected-error @+1 {{'tile.reduce' op expected the combine region to return 2 values ('f32', 'i32'), got ('i32', 'f32')}}
  %0:2 = tile.reduce %x, %i {axis = 0 : i32} : tensor<128xf32>, tensor<128xi32> -> f32, i32 {
  ^bb0(%a0: f32, %a1: i32, %b0: f32, %b1: i32):
    tile.reduce.return %a1, %a0 : i32, f32
  }
  return
}

// -----

func.func @reduce_multi_result_count(%x: tensor<64x128xf32>, %y: tensor<64x128xf32>) {
  // expected-error @+2 {{'tile.reduce' op inferred type(s) 'tensor<64xf32>', 'tensor<64xf32>' are incompatible with return type(s) of operation 'tensor<64xf32>'}}
  // expected-error @+1 {{'tile.reduce' op failed to infer returned types}}
  %0 = tile.reduce %x, %y {axis = 1 : i32} : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64xf32> {
  ^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
    tile.reduce.return %a0, %a1 : f32, f32
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile.scan / tile.scan.return
//===----------------------------------------------------------------------===//

func.func @scan_axis_too_large(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{'tile.scan' op expected axis in [0, 2), got 2}}
  %0 = tile.scan %x {axis = 2 : i32} : tensor<64x128xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.scan.return %s : f32
  }
  return
}

// -----

func.func @scan_axis_negative(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.scan' op expected axis in [0, 1), got -1}}
  %0 = tile.scan %x {axis = -1 : i32} : tensor<128xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.scan.return %s : f32
  }
  return
}

// -----

func.func @scan_pointers(%p: tensor<128x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.scan' op cannot scan a tile of pointers}}
  %0 = tile.scan %p {axis = 0 : i32} : tensor<128x!tile.ptr<f32>> {
  ^bb0(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>):
    tile.scan.return %a : !tile.ptr<f32>
  }
  return
}

// -----

func.func @scan_scalar_source(%x: f32) {
  // expected-error @+1 {{'tile.scan' op operand #0 must be}}
  %0 = "tile.scan"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    tile.scan.return %a : f32
  }) : (f32) -> f32
  return
}

// -----

func.func @scan_result_type(%x: tensor<128xf16>) {
  // expected-error @+1 {{'tile.scan' op requires the same type for all operands and results}}
  %0 = "tile.scan"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: f16, %b: f16):
    %s = arith.addf %a, %b : f16
    tile.scan.return %s : f16
  }) : (tensor<128xf16>) -> tensor<128xf32>
  return
}

// -----

func.func @scan_one_argument(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.scan' op expected the combine region to take two 'f32' arguments}}
  %0 = tile.scan %x {axis = 0 : i32} : tensor<128xf32> {
  ^bb0(%a: f32):
    tile.scan.return %a : f32
  }
  return
}

// -----

func.func @scan_argument_type(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.scan' op expected the combine region to take two 'f32' arguments}}
  %0 = tile.scan %x {axis = 0 : i32} : tensor<128xf32> {
  ^bb0(%a: f32, %b: f16):
    tile.scan.return %a : f32
  }
  return
}

// -----

func.func @scan_return_type(%x: tensor<128xf32>) {
  // expected-error @+1 {{'tile.scan' op expected the combine region to return one 'f32'}}
  %0 = tile.scan %x {axis = 0 : i32} : tensor<128xf32> {
  ^bb0(%a: f32, %b: f32):
    %t = arith.truncf %a : f32 to f16
    tile.scan.return %t : f16
  }
  return
}

// -----

func.func @scan_return_outside_scan(%x: f32) {
  // expected-error @+1 {{'tile.scan.return' op expects parent op 'tile.scan'}}
  tile.scan.return %x : f32
}

// -----

func.func @scan_with_reduce_return(%x: tensor<128xf32>) {
  %0 = tile.scan %x {axis = 0 : i32} : tensor<128xf32> {
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{'tile.reduce.return' op expects parent op 'tile.reduce'}}
    tile.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_result_element_type(%x: tensor<64x128xf32>) {
  // expected-error @+2 {{'tile.reduce' op inferred type(s) 'tensor<64xf32>' are incompatible with return type(s) of operation 'tensor<64xf16>'}}
  // expected-error @+1 {{'tile.reduce' op failed to infer returned types}}
  %0 = tile.reduce %x {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf16> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

func.func @reduce_return_outside_reduce(%x: f32) {
  // expected-error @+1 {{'tile.reduce.return' op expects parent op 'tile.reduce'}}
  tile.reduce.return %x : f32
}

// -----

func.func @reduce_return_in_scf(%x: f32, %c: i1) {
  scf.if %c {
    // expected-error @+1 {{'tile.reduce.return' op expects parent op 'tile.reduce'}}
    tile.reduce.return %x : f32
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// Discardable attributes (TileDialect.cpp)
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'func.func' op expected 'tile.kernel' to be a unit attribute}}
func.func @kernel_not_unit() attributes {tile.kernel = 1 : i32} {
  return
}

// -----

func.func @kernel_on_other_op() {
  // expected-error @+1 {{'arith.constant' op 'tile.kernel' applies to func.func only}}
  %c = arith.constant {tile.kernel} 0 : i32
  return
}

// -----

// expected-error @+1 {{'func.func' op a tile kernel returns nothing, got 1 results}}
func.func @kernel_with_result() -> i32 attributes {tile.kernel} {
  %c = arith.constant 0 : i32
  return %c : i32
}

// -----

// expected-error @+1 {{'func.func' op a tile kernel takes scalars, pointers and tensor descriptors, got 'tensor<128xf32>'}}
func.func @kernel_tile_argument(%x: tensor<128xf32>) attributes {tile.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.num_warps' to be an i32 attribute, got 4 : i64}}
func.func @num_warps_i64() attributes {tile.kernel, tile.num_warps = 4 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.num_warps' to be a power of two in [1, 32], got 3}}
func.func @num_warps_not_power_of_two() attributes {tile.kernel, tile.num_warps = 3 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.num_warps' to be a power of two in [1, 32], got 64}}
func.func @num_warps_too_many() attributes {tile.kernel, tile.num_warps = 64 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.num_warps' to be a power of two in [1, 32], got 0}}
func.func @num_warps_zero() attributes {tile.kernel, tile.num_warps = 0 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.threads_per_block' to be a power of two in [1, 1024], got 2048}}
func.func @threads_per_block_too_many() attributes {tile.kernel, tile.threads_per_block = 2048 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.elems_per_thread' to be a power of two in [1, 65536], got 6}}
func.func @elems_per_thread_not_power_of_two() attributes {tile.kernel, tile.elems_per_thread = 6 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.elems_per_thread' to be an i32 attribute, got "four"}}
func.func @elems_per_thread_string() attributes {tile.kernel, tile.elems_per_thread = "four"} {
  return
}

// -----

// expected-error @+1 {{'func.func' op unknown tile attribute 'tile.num_threads'}}
func.func @unknown_attribute() attributes {tile.kernel, tile.num_threads = 128 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op unknown tile argument attribute 'tile.alignment'}}
func.func @unknown_argument_attribute(%p: !tile.ptr<f32> {tile.alignment = 16 : i32}) attributes {tile.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.divisibility' applies to integer and pointer arguments, got 'f32'}}
func.func @divisibility_on_float(%x: f32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.divisibility' to be a power of two in [1, 1073741824], got 12}}
func.func @divisibility_not_power_of_two(%n: i32 {tile.divisibility = 12 : i32}) attributes {tile.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.divisibility' to be an i32 attribute, got 16 : i64}}
func.func @divisibility_i64(%n: i32 {tile.divisibility = 16 : i64}) attributes {tile.kernel} {
  return
}

// -----

func.func @atomic_float_max(%p: !tile.ptr<f32>, %v: f32) {
  // expected-error @+1 {{expected an integer element for 'max', got 'f32' (floats support fadd and xchg)}}
  %0 = tile.atomic_rmw max, acq_rel, gpu %p, %v : !tile.ptr<f32>
  return
}

// -----

func.func @atomic_fadd_int(%p: !tile.ptr<i32>, %v: i32) {
  // expected-error @+1 {{expected f16, bf16, f32 or f64 for fadd, got 'i32'}}
  %0 = tile.atomic_rmw fadd, relaxed, gpu %p, %v : !tile.ptr<i32>
  return
}

// -----

func.func @atomic_narrow(%p: !tile.ptr<i16>, %v: i16) {
  // expected-error @+1 {{expected a 32- or 64-bit element, got 'i16'}}
  %0 = tile.atomic_rmw add, relaxed, gpu %p, %v : !tile.ptr<i16>
  return
}

// -----

func.func @atomic_cas_float(%p: !tile.ptr<f32>, %c: f32, %v: f32) {
  // expected-error @+1 {{expected i32 or i64 elements, got 'f32'}}
  %0 = tile.atomic_cas acq_rel, sys %p, %c, %v : !tile.ptr<f32>
  return
}

// -----

// expected-error @+1 {{expected every box dimension to be a power of two in [1, 256] (a TMA box)}}
func.func @desc_box_too_big(%d: !tile.tensordesc<tensor<512x8xf32>>) {
  return
}

// -----

// expected-error @+1 {{expected the box's inner dimension to span a multiple of 16 bytes, got 8 bytes}}
func.func @desc_inner_bytes(%d: !tile.tensordesc<tensor<64x4xbf16>>) {
  return
}

// -----

// expected-error @+1 {{expected a swizzle of 0, 32, 64 or 128 bytes, got 16}}
func.func @desc_bad_swizzle(%d: !tile.tensordesc<tensor<64x64xbf16>, swizzle = 16>) {
  return
}

// -----

// expected-error @+1 {{expected the box's inner dimension (128 bytes) to fit the 64-byte swizzle span}}
func.func @desc_swizzle_span(%d: !tile.tensordesc<tensor<64x64xbf16>, swizzle = 64>) {
  return
}

// -----

// A box wider than the 128-byte span is stored in 128-byte column chunks,
// each of whole 1024-byte swizzle periods: 8 rows at least.
// expected-error @+1 {{expected a box wider than the 128-byte swizzle span to have a multiple of 8 rows (its 128-byte chunks start on the swizzle's 1024-byte period), got 4 rows ('tensor<4x128xbf16>')}}
func.func @desc_wide_rows(%d: !tile.tensordesc<tensor<4x128xbf16>, swizzle = 128>) {
  return
}

// -----

// expected-error @+1 {{expected a tensor descriptor of integers or floats (not i1)}}
func.func @desc_i1(%d: !tile.tensordesc<tensor<64x128xi1>>) {
  return
}

// -----

func.func @desc_load_rank(%d: !tile.tensordesc<tensor<64x128xbf16>>, %i: i32) {
  // expected-error @+1 {{expected 2 box coordinates (the descriptor's rank), got 1}}
  %t = tile.desc_load %d[%i] : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xbf16>
  return
}

// -----

func.func @desc_load_type(%d: !tile.tensordesc<tensor<64x128xbf16>>, %i: i32) {
  // expected-error @+1 {{expected the result to be the descriptor's block type 'tensor<64x128xbf16>', got 'tensor<64x128xf32>'}}
  %t = tile.desc_load %d[%i, %i] : !tile.tensordesc<tensor<64x128xbf16>> -> tensor<64x128xf32>
  return
}

// -----

func.func @desc_store_type(%d: !tile.tensordesc<tensor<64x128xbf16>>, %i: i32, %v: tensor<32x128xbf16>) {
  // expected-error @+1 {{expected the stored value to be the descriptor's block type 'tensor<64x128xbf16>', got 'tensor<32x128xbf16>'}}
  tile.desc_store %d[%i, %i], %v : !tile.tensordesc<tensor<64x128xbf16>>, tensor<32x128xbf16>
  return
}

// -----

func.func @bulk_load_not_1d(%x: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.bulk_load' op expected a 1-D result, got 'tensor<16x16xf32>'}}
  %t = tile.bulk_load %x : !tile.ptr<f32> -> tensor<16x16xf32>
  return
}

// -----

func.func @bulk_load_element_type(%x: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.bulk_load' op expected the result's element type to be the pointee type 'f32', got 'f16'}}
  %t = tile.bulk_load %x : !tile.ptr<f32> -> tensor<256xf16>
  return
}

// -----

func.func @bulk_load_i1(%x: !tile.ptr<i1>) {
  // expected-error @+1 {{'tile.bulk_load' op expected a numeric element type, got i1 (bulk-load the bytes as i8)}}
  %t = tile.bulk_load %x : !tile.ptr<i1> -> tensor<256xi1>
  return
}

// -----

func.func @bulk_load_size(%x: !tile.ptr<f16>) {
  // expected-error @+1 {{'tile.bulk_load' op expected a multiple of 16 bytes, got 8 (4 x 'f16')}}
  %t = tile.bulk_load %x : !tile.ptr<f16> -> tensor<4xf16>
  return
}

// -----

func.func @bulk_load_too_big(%x: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.bulk_load' op expected fewer than 1048576 bytes (one mbarrier phase counts at most 2^20 - 1), got 1048576}}
  %t = tile.bulk_load %x : !tile.ptr<f32> -> tensor<262144xf32>
  return
}

// -----

func.func @bulk_load_tile_of_pointers(%x: tensor<4x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.bulk_load' op operand #0 must be tile pointer}}
  %t = tile.bulk_load %x : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{expected the ring to fit the 227 KiB of shared memory, got 8 stages of 'tensor<128x128xbf16>' (262208 bytes)}}
func.func @ring_too_big(%r: !tile.ring<8, tensor<128x128xbf16>>) {
  return
}

// -----

// expected-error @+1 {{expected 1 to 16 ring stages, got 0}}
func.func @ring_no_stages(%r: !tile.ring<0, tensor<64x128xbf16>>) {
  return
}

// -----

func.func @bulk_load_count_range(%x: !tile.ptr<bf16>) {
  %c = arith.constant 8200 : i32
  // expected-error @+1 {{'tile.bulk_load' op expected a count in [0, 8192], got 8200}}
  %t = tile.bulk_load %x count %c : !tile.ptr<bf16> -> tensor<8192xbf16>
  return
}

// -----

func.func @bulk_load_count_units(%x: !tile.ptr<bf16>) {
  %c = arith.constant 7164 : i32
  // expected-error @+1 {{'tile.bulk_load' op expected the count to span a multiple of 16 bytes, got 7164 x 'bf16' (14328 bytes)}}
  %t = tile.bulk_load %x count %c : !tile.ptr<bf16> -> tensor<8192xbf16>
  return
}

// -----

func.func @bulk_load_count_type(%x: !tile.ptr<bf16>, %n: i64) {
  // expected-error @+1 {{'tile.bulk_load' op operand #1 must be 32-bit signless integer}}
  %t = "tile.bulk_load"(%x, %n) : (!tile.ptr<bf16>, i64) -> tensor<8192xbf16>
  return
}

// -----

func.func @ring_issue_box(%d: !tile.tensordesc<tensor<32x64xbf16>>, %r: !tile.ring<2, tensor<64x64xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected the ring's block to be the descriptor's block type 'tensor<32x64xbf16>', got 'tensor<64x64xbf16>'}}
  tile.ring_issue %d[%i, %i] -> %r[%i] if %p : !tile.tensordesc<tensor<32x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>
  return
}

// -----

func.func @ring_issue_bulk_coordinates(%x: !tile.ptr<bf16>, %r: !tile.ring<2, tensor<1024xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected no coordinates with a pointer source, got 1}}
  tile.ring_issue %x[%i] -> %r[%i] if %p : !tile.ptr<bf16>, !tile.ring<2, tensor<1024xbf16>>
  return
}

// -----

func.func @ring_issue_bulk_element(%x: !tile.ptr<f16>, %r: !tile.ring<2, tensor<1024xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected the ring's block's element type to be the pointee type 'f16', got 'bf16'}}
  tile.ring_issue %x -> %r[%i] if %p : !tile.ptr<f16>, !tile.ring<2, tensor<1024xbf16>>
  return
}

// -----

func.func @ring_issue_gather_shape(%x: tensor<32x64x!tile.ptr<bf16>>, %r: !tile.ring<2, tensor<64x64xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected pointers to the ring's block 'tensor<64x64xbf16>', got 'tensor<32x64x!tile.ptr<bf16>>'}}
  tile.ring_issue %x -> %r[%i] if %p : tensor<32x64x!tile.ptr<bf16>>, !tile.ring<2, tensor<64x64xbf16>>
  return
}

// -----

func.func @ring_issue_gather_count(%x: tensor<32x64x!tile.ptr<bf16>>, %r: !tile.ring<2, tensor<32x64xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected neither a count nor `producer` with a gather}}
  tile.ring_issue %x count %i -> %r[%i] if %p : tensor<32x64x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x64xbf16>>
  return
}

// -----

func.func @ring_issue_bulk_mask(%x: !tile.ptr<bf16>, %m: tensor<1024xi1>, %r: !tile.ring<2, tensor<1024xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected a mask only with a tensor of pointers}}
  tile.ring_issue %x mask %m : tensor<1024xi1> -> %r[%i] if %p : !tile.ptr<bf16>, !tile.ring<2, tensor<1024xbf16>>
  return
}

// -----

func.func @ring_issue_bulk_2d(%x: !tile.ptr<bf16>, %r: !tile.ring<2, tensor<32x64xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected a 1-D ring's block, got 'tensor<32x64xbf16>'}}
  tile.ring_issue %x -> %r[%i] if %p : !tile.ptr<bf16>, !tile.ring<2, tensor<32x64xbf16>>
  return
}

// -----

func.func @ring_issue_bulk_count(%x: !tile.ptr<bf16>, %r: !tile.ring<2, tensor<1024xbf16>>, %i: i32, %p: i1) {
  %c = arith.constant 12 : i32
  // expected-error @+1 {{expected the count to span a multiple of 16 bytes, got 12 x 'bf16' (24 bytes)}}
  tile.ring_issue %x count %c -> %r[%i] if %p : !tile.ptr<bf16>, !tile.ring<2, tensor<1024xbf16>>
  return
}

// -----

func.func @ring_issue_desc_count(%d: !tile.tensordesc<tensor<64x64xbf16>>, %r: !tile.ring<2, tensor<64x64xbf16>>, %i: i32, %p: i1) {
  // expected-error @+1 {{expected no count with a descriptor source (the box is whole)}}
  tile.ring_issue %d[%i, %i] count %i -> %r[%i] if %p : !tile.tensordesc<tensor<64x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>
  return
}

// -----

// A ring of rows that are no TMA box (8192 > 256) but whole 16-byte units is
// fine; a row of 8 bytes is neither.
// expected-error @+1 {{expected the box's inner dimension to span a multiple of 16 bytes, got 8 bytes ('tensor<4xbf16>')}}
func.func @ring_bulk_row_units(%r: !tile.ring<2, tensor<8192xbf16>>, %s: !tile.ring<2, tensor<4xbf16>>) {
  return
}

// -----

func.func @ring_wait_count_2d(%r: !tile.ring<2, tensor<64x64xbf16>>, %i: i32) {
  // expected-error @+1 {{expected a 1-D ring with a count, got 'tensor<64x64xbf16>'}}
  %t = tile.ring_wait_load %r[%i], %i count %i : !tile.ring<2, tensor<64x64xbf16>> -> tensor<64x64xbf16>
  return
}

// -----

func.func @ring_wait_type(%r: !tile.ring<2, tensor<64x64xbf16>>, %i: i32) {
  // expected-error @+1 {{expected the result to be the ring's block type 'tensor<64x64xbf16>' (in any layout), got 'tensor<64x64xf16>'}}
  %t = tile.ring_wait_load %r[%i], %i : !tile.ring<2, tensor<64x64xbf16>> -> tensor<64x64xf16>
  return
}

// -----

func.func @num_stages_on_func() attributes {tile.num_stages = 2 : i32} {
  // expected-error @-1 {{'tile.num_stages' applies to scf.for only}}
  return
}

// -----

func.func @load_release(%p: !tile.ptr<i32>) {
  // expected-error @+1 {{expected 'relaxed' or 'acquire' ordering, got 'release'}}
  %v = tile.load %p ordered release gpu : !tile.ptr<i32>
  return
}

// -----

func.func @store_acquire(%p: !tile.ptr<i32>, %v: i32) {
  // expected-error @+1 {{expected 'relaxed' or 'release' ordering, got 'acquire'}}
  tile.store %p, %v ordered acquire gpu : !tile.ptr<i32>
  return
}

// -----

func.func @sem_without_scope(%p: !tile.ptr<i32>) {
  // expected-error @+1 {{expected both 'sem' and 'scope', or neither}}
  %v = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>, sem = 1 : i32} : (!tile.ptr<i32>) -> i32
  return
}

// -----

func.func @poll_unordered(%p: !tile.ptr<i32>) {
  // expected-error @+1 {{expected an ordered load ('sem' and 'scope') to poll}}
  %v = tile.load %p {poll_ns = 1000 : i64} : !tile.ptr<i32>
  return
}

// -----

func.func @poll_not_positive(%p: !tile.ptr<i32>) {
  // expected-error @+1 {{expected a positive 'poll_ns', got 0}}
  %v = tile.load %p ordered relaxed sys {poll_ns = 0 : i64} : !tile.ptr<i32>
  return
}

// -----

func.func @int_to_ptr_divisibility(%a: i64) {
  // expected-error @+1 {{expected a power-of-two divisibility, got 12}}
  %p = tile.int_to_ptr %a {divisibility = 12 : i64} : !tile.ptr<i32>
  return
}

// -----

func.func @ordered_i8(%p: !tile.ptr<i8>) {
  // expected-error @+1 {{expected 16-, 32- or 64-bit elements for an ordered access, got 'i8'}}
  %v = tile.load %p ordered acquire sys : !tile.ptr<i8>
  return
}

// -----

func.func @load_store_cache_modifier(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{expected a load cache modifier ('ca', 'cg', 'cv'), got 'wb'}}
  %v = tile.load %p cache wb : !tile.ptr<f32>
  return
}

// -----

func.func @store_load_cache_modifier(%p: !tile.ptr<f32>, %v: f32) {
  // expected-error @+1 {{expected a store cache modifier ('wb', 'cg', 'cs', 'wt'), got 'cv'}}
  tile.store %p, %v cache cv : !tile.ptr<f32>
  return
}

// -----

func.func @ordered_load_cache_modifier(%p: !tile.ptr<i32>) {
  // expected-error @+1 {{expected no cache modifier or eviction policy on an ordered access, got 'acquire' with 'cg'}}
  %v = tile.load %p ordered acquire gpu cache cg : !tile.ptr<i32>
  return
}

// -----

func.func @ordered_store_eviction_policy(%p: !tile.ptr<i32>, %v: i32) {
  // expected-error @+1 {{expected no cache modifier or eviction policy on an ordered access, got 'release' with 'evict_first'}}
  tile.store %p, %v ordered release sys evict evict_first : !tile.ptr<i32>
  return
}

// -----

func.func @unknown_eviction_policy(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{attribute 'evict' failed to satisfy constraint: cache eviction priority of an access}}
  %v = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>, evict = 7 : i32} : (!tile.ptr<f32>) -> f32
  return
}

// -----

func.func @relaxed_fence() {
  // expected-error @+1 {{expected acquire, release or acq_rel ordering (a relaxed fence orders nothing)}}
  tile.fence relaxed, gpu
  return
}

// -----

// expected-error @+1 {{expected an mma encoding of version 2 (mma.sync), 3 (wgmma) or 5 (tcgen05), got 4}}
func.func @mma_version(%x: tensor<64x64xf32, #tile.mma<version = 4, numWarps = 4>>) {
  return
}

// -----

// expected-error @+1 {{expected warpsN to be a power of two dividing the 1 warpgroups for the version 3 mma encoding, got 2}}
func.func @mma_warps_n_v3(%x: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4, warpsN = 2>>) {
  return
}

// -----

// expected-error @+1 {{expected a [M, N] tile with N 1 or a multiple of 16 for the version 3 mma encoding of warpsN = 2, got 'tensor<64x8xf32>'}}
func.func @mma_warps_n_v3_columns(%x: tensor<64x8xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>) {
  return
}

// -----

// expected-error @+1 {{expected warpsN to be a power of two dividing numWarps (4), got 8}}
func.func @mma_warps_n(%x: tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 8>>) {
  return
}

// -----

// expected-error @+1 {{expected a power of two from 1 to 32 warps, got 3}}
func.func @mma_v2_warps(%x: tensor<16x64xf32, #tile.mma<version = 2, numWarps = 3>>) {
  return
}

// -----

// expected-error @+1 {{expected a [M, N] tile with M a power of two and N 1 or a multiple of 32 for the version 2 mma encoding, got 'tensor<16x16xf32>'}}
func.func @mma_v2_columns(%x: tensor<16x16xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>) {
  return
}

// -----

// expected-error @+1 {{expected a [M, N] tile with M a power of two and N 1 or a multiple of 8 for the version 2 mma encoding, got 'tensor<24x8xf32>'}}
func.func @mma_v2_rows(%x: tensor<24x8xf32, #tile.mma<version = 2, numWarps = 1>>) {
  return
}

// -----

// expected-error @+1 {{expected a 1-D tile of a power-of-two rows for the slice of the version 2 mma encoding, got 'tensor<24xf32>'}}
func.func @slice_v2_rows(%x: tensor<24xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 2, numWarps = 4>>>) {
  return
}

// -----

func.func @reduce_v2_columns(%x: tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>) {
  // expected-error @+1 {{expected a tile in the blocked layout, or a 2-D tile in the #tile.mma encoding of version 2 or 3 reduced along axis 1, got 'tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>>' along axis 0}}
  %m = tile.reduce %x {axis = 0 : i32} : tensor<16x64xf32, #tile.mma<version = 2, numWarps = 4, warpsN = 4>> -> tensor<64xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s : f32
  }
  return
}

// -----

// expected-error @+1 {{expected 4, 8 or 16 warps (whole warpgroups), got 2}}
func.func @mma_warps(%x: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 2>>) {
  return
}

// -----

// expected-error @+1 {{expected the slice along dim 1 of a #tile.mma encoding of version 2 or 3, or along dim 0 of version 2, got dim 0 of #tile.mma<version = 3, numWarps = 4>}}
func.func @slice_dim(%x: tensor<64xf32, #tile.slice<dim = 0, parent = #tile.mma<version = 3, numWarps = 4>>>) {
  return
}

// -----

// expected-error @+1 {{expected the slice along dim 1 of a #tile.mma encoding of version 2 or 3, or along dim 0 of version 2, got dim 1 of #tile.mma<version = 5, numWarps = 4>}}
func.func @slice_version(%x: tensor<128xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 5, numWarps = 4>>>) {
  return
}

// -----

// expected-error @+1 {{expected a 1-D tile of a multiple of 128 rows for the slice of the mma encoding, got 'tensor<64xf32>'}}
func.func @slice_rows(%x: tensor<64xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>>) {
  return
}

// -----

func.func @warp_dot_version(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>) {
  // expected-error @+1 {{expected an accumulator with the #tile.mma encoding of version 2, got 'tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>'}}
  %d = tile.warp_dot %a, %b, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_k_major_shape(%a: tensor<16x64xbf16>, %b: tensor<64x32xbf16>, %acc: tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>) {
  // expected-error @+1 {{expected [M, K] * [K, N] -> [M, N], got 'tensor<16x64xbf16>' * 'tensor<32x64xbf16>' -> 'tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>'}}
  %d = tile.warp_dot %a, %b, %acc {bKMajor} : tensor<16x64xbf16> * tensor<64x32xbf16> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_k(%a: tensor<16x8xbf16>, %b: tensor<8x16xbf16>, %acc: tensor<16x16xf32, #tile.mma<version = 2, numWarps = 4>>) {
  // expected-error @+1 {{expected M and N powers of two, N a multiple of 8 and K a multiple of 16, got 16, 16 and 8}}
  %d = tile.warp_dot %a, %b, %acc : tensor<16x8xbf16> * tensor<8x16xbf16> -> tensor<16x16xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_ring_slot(%a: tensor<16x128xbf16>, %r: !tile.ring<2, tensor<32x128xbf16>>, %acc: tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>) {
  // expected-error @+1 {{expected a slot exactly when `b` is a ring}}
  %d = tile.warp_dot %a, %r, %acc {bKMajor} : tensor<16x128xbf16> * !tile.ring<2, tensor<32x128xbf16>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_fp8_slot_register_a(%a: tensor<16x128xbf16>, %r: !tile.ring<2, tensor<32x128xf8E4M3FN>>, %i: i32, %acc: tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>) {
  // expected-error @+1 {{expected an 8-bit float slot `b` only with `bKMajor` and a staged 16-bit `a`}}
  %d = tile.warp_dot %a, %r[%i], %acc {bKMajor} : tensor<16x128xbf16> * !tile.ring<2, tensor<32x128xf8E4M3FN>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_fp8_slot_n_major(%a: !tile.smem<tensor<16x64xbf16>>, %r: !tile.ring<2, tensor<64x128xf8E4M3FN>>, %i: i32, %acc: tensor<16x128xf32, #tile.mma<version = 2, numWarps = 4>>) {
  // expected-error @+1 {{expected an 8-bit float slot `b` only with `bKMajor` and a staged 16-bit `a`}}
  %d = tile.warp_dot %a, %r[%i], %acc : !tile.smem<tensor<16x64xbf16>> * !tile.ring<2, tensor<64x128xf8E4M3FN>> -> tensor<16x128xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_ring_unswizzled(%a: tensor<16x128xbf16>, %p: tensor<32x128x!tile.ptr<bf16>>, %s: i32, %acc: tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>, %t: i1) {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x128xbf16>>
  tile.ring_issue %p -> %r[%s] if %t : tensor<32x128x!tile.ptr<bf16>>, !tile.ring<2, tensor<32x128xbf16>>
  // expected-error @+1 {{expected a ring of 128-byte swizzled boxes (TMA with the 128-byte swizzle, or a `swizzled` gather ring)}}
  %d = tile.warp_dot %a, %r[%s], %acc {bKMajor} : tensor<16x128xbf16> * !tile.ring<2, tensor<32x128xbf16>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @warp_dot_ring_rows(%a: tensor<16x32xbf16>, %s: i32, %acc: tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>) {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x32xbf16>>
  // expected-error @+1 {{expected a ring of 2-D boxes with rows of whole 128-byte spans, got '!tile.ring<2, tensor<32x32xbf16>>'}}
  %d = tile.warp_dot %a, %r[%s], %acc {bKMajor} : tensor<16x32xbf16> * !tile.ring<2, tensor<32x32xbf16>> -> tensor<16x32xf32, #tile.mma<version = 2, numWarps = 4>>
  return
}

// -----

func.func @ring_swizzled_rows() {
  // expected-error @+1 {{expected a `swizzled` ring's block to have rows of a power of two 128-byte spans, got 'tensor<32x32xbf16>'}}
  %r = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<32x32xbf16>>
  return
}

// -----

!D = !tile.tensordesc<tensor<32x128xbf16>, swizzle = 128>
func.func @ring_covered_tma(%d: !D, %i: i32, %t: i1) {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32x128xbf16>>
  // expected-error @+1 {{expected `covered` only on a gather}}
  tile.ring_issue %d[%i, %i] -> %r[%i] if %t {covered} : !D, !tile.ring<2, tensor<32x128xbf16>>
  return
}

// -----

!D = !tile.tensordesc<tensor<32x128xbf16>, swizzle = 128>
func.func @ring_swizzled_tma(%d: !D, %i: i32, %t: i1) {
  %r = tile.ring_alloc {swizzled} : !tile.ring<2, tensor<32x128xbf16>>
  // expected-error @+1 {{expected only gathers into a `swizzled` ring}}
  tile.ring_issue %d[%i, %i] -> %r[%i] if %t : !D, !tile.ring<2, tensor<32x128xbf16>>
  return
}

// -----

func.func @staged_register_a_encoding(%a: tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 8>>, %b: tensor<64x64xbf16>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>) {
  // expected-error @+1 {{expected `a` in the blocked layout or in the accumulator's encoding of warpsN = 1 (A from registers)}}
  %d = tile.warpgroup_dot_staged %a, %b, %acc : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 8>> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @staged_register_a_k(%a: tensor<64x8xbf16, #tile.mma<version = 3, numWarps = 4>>, %b: tensor<8x64xbf16>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>) {
  // expected-error @+1 {{expected M a multiple of 64, K a multiple of 16 and N a multiple of 64 up to 256, got 64, 8 and 64}}
  %d = tile.warpgroup_dot_staged %a, %b, %acc : tensor<64x8xbf16, #tile.mma<version = 3, numWarps = 4>> * tensor<8x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_blocked_acc(%ra: !tile.ring<2, tensor<64x64xbf16>>, %rb: !tile.ring<2, tensor<64x64xbf16>>, %acc: tensor<64x64xf32>, %i: i32) {
  // expected-error @+1 {{expected an accumulator with the #tile.mma encoding}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc : !tile.ring<2, tensor<64x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>, tensor<64x64xf32>
  return
}

// -----

func.func @warpgroup_dot_k(%ra: !tile.ring<2, tensor<64x32xbf16>>, %rb: !tile.ring<2, tensor<64x32xbf16>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{expected K a multiple of 64 (whole 128-byte swizzle spans per row), got 32}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc : !tile.ring<2, tensor<64x32xbf16>>, !tile.ring<2, tensor<64x32xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_shapes(%ra: !tile.ring<2, tensor<64x64xbf16>>, %rb: !tile.ring<2, tensor<128x64xbf16>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{expected a [M, K] box, a [N, K] box and a [M, N] accumulator}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc : !tile.ring<2, tensor<64x64xbf16>>, !tile.ring<2, tensor<128x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_warpgroups(%ra: !tile.ring<2, tensor<64x64xbf16>>, %rb: !tile.ring<2, tensor<64x64xbf16>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8>>, %i: i32) {
  // expected-error @+1 {{expected M a multiple of 128 and N a multiple of 8 up to 256}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc : !tile.ring<2, tensor<64x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8>>
  return
}

// -----

func.func @warpgroup_dot_mn_major_shapes(%ra: !tile.ring<2, tensor<64x64xbf16>>, %rb: !tile.ring<2, tensor<32x64xbf16>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{expected a [M, K] box, a [K, N] box and a [M, N] accumulator}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc {bMnMajor} : !tile.ring<2, tensor<64x64xbf16>>, !tile.ring<2, tensor<32x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_mn_major_fp8(%ra: !tile.ring<2, tensor<64x128xf8E4M3FN>>, %rb: !tile.ring<2, tensor<128x64xf8E4M3FN>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{expected bf16 or f16 boxes with bMnMajor (wgmma transposes only 16-bit operands), got 'f8E4M3FN'}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc {bMnMajor} : !tile.ring<2, tensor<64x128xf8E4M3FN>>, !tile.ring<2, tensor<128x64xf8E4M3FN>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_mn_major_n(%ra: !tile.ring<2, tensor<64x64xbf16>>, %rb: !tile.ring<2, tensor<64x32xbf16>>, %acc: tensor<64x32xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{expected N a multiple of 64 with bMnMajor (whole 128-byte swizzle spans per row of the [K, N] box, a warpgroup's columns each), got 32}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc {bMnMajor} : !tile.ring<2, tensor<64x64xbf16>>, !tile.ring<2, tensor<64x32xbf16>>, tensor<64x32xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_version5_acc(%ra: !tile.ring<2, tensor<128x64xbf16>>, %rb: !tile.ring<2, tensor<64x64xbf16>>, %acc: tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{expected an accumulator with the #tile.mma encoding of version 3, got 'tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>'}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc : !tile.ring<2, tensor<128x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>, tensor<128x64xf32, #tile.mma<version = 5, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_imprecise_acc_not_fp8(%ra: !tile.ring<2, tensor<64x64xbf16>>, %rb: !tile.ring<2, tensor<64x64xbf16>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{'tile.warpgroup_dot' op expected FP8 operands with maxNumImpreciseAcc, got 'bf16'}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc {maxNumImpreciseAcc = 64 : i32} : !tile.ring<2, tensor<64x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @warpgroup_dot_imprecise_acc_above_k(%ra: !tile.ring<2, tensor<64x128xf8E4M3FN>>, %rb: !tile.ring<2, tensor<64x128xf8E4M3FN>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>, %i: i32) {
  // expected-error @+1 {{'tile.warpgroup_dot' op expected maxNumImpreciseAcc <= K = 128, got 256}}
  %d = tile.warpgroup_dot %ra[%i], %rb[%i], %acc {maxNumImpreciseAcc = 256 : i32} : !tile.ring<2, tensor<64x128xf8E4M3FN>>, !tile.ring<2, tensor<64x128xf8E4M3FN>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

// expected-error @+1 {{expected a [128, N] tile with N a multiple of 2 for the version 5 mma encoding, got 'tensor<64x64xf32>'}}
func.func @mma_version5_rows(%x: tensor<64x64xf32, #tile.mma<version = 5, numWarps = 8>>) {
  return
}

// -----

// expected-error @+1 {{expected a [128, N] tile with N a multiple of 4 for the version 5 mma encoding, got 'tensor<128x2xf32>'}}
func.func @mma_version5_columns(%x: tensor<128x2xf32, #tile.mma<version = 5, numWarps = 16>>) {
  return
}

// -----

// expected-error @+1 {{expected a 2-D f32 tile without encoding in tensor memory, got 'tensor<128x64xbf16>'}}
func.func @tmem_element(%t: !tile.tmem<tensor<128x64xbf16>>) {
  return
}

// -----

// expected-error @+1 {{expected M = 128 (one row per TMEM lane), got 64}}
func.func @tmem_rows(%t: !tile.tmem<tensor<64x64xf32>>) {
  return
}

// -----

// expected-error @+1 {{expected N in [1, 512] (TMEM columns), got 1024}}
func.func @tmem_columns(%t: !tile.tmem<tensor<128x1024xf32>>) {
  return
}

// -----

// expected-error @+1 {{expected 1 to 16 mbarriers, got 0}}
func.func @mbarriers_count(%b: !tile.mbarriers<0>) {
  return
}

// -----

func.func @tmem_load_shape(%t: !tile.tmem<tensor<128x64xf32>>) {
  // expected-error @+1 {{expected the result to have the accumulator's shape 'tensor<128x64xf32>', got 'tensor<128x128xf32, #tile.mma<version = 5, numWarps = 4>>'}}
  %r = tile.tmem_load %t : !tile.tmem<tensor<128x64xf32>> -> tensor<128x128xf32, #tile.mma<version = 5, numWarps = 4>>
  return
}

// -----

func.func @tmem_load_layout(%t: !tile.tmem<tensor<128x64xf32>>) {
  // expected-error @+1 {{expected the result in the #tile.mma encoding of version 5, got 'tensor<128x64xf32, #tile.mma<version = 3, numWarps = 4>>'}}
  %r = tile.tmem_load %t : !tile.tmem<tensor<128x64xf32>> -> tensor<128x64xf32, #tile.mma<version = 3, numWarps = 4>>
  return
}

// -----

func.func @tcgen05_dot_rank(%ra: !tile.ring<2, tensor<2x64x64xbf16>>, %rb: !tile.ring<2, tensor<64x64xbf16>>, %t: !tile.tmem<tensor<128x64xf32>>, %p: i1, %d: !tile.mbarriers<2>, %i: i32) {
  // expected-error @+1 {{expected 2-D boxes, got 'tensor<2x64x64xbf16>' and 'tensor<64x64xbf16>'}}
  tile.tcgen05_dot %ra[%i], %rb[%i], %t, %p -> %d[%i] : !tile.ring<2, tensor<2x64x64xbf16>>, !tile.ring<2, tensor<64x64xbf16>>, !tile.tmem<tensor<128x64xf32>>, !tile.mbarriers<2>
  return
}

// -----

func.func @tcgen05_dot_element(%ra: !tile.ring<2, tensor<128x64xbf16>>, %rb: !tile.ring<2, tensor<64x64xf16>>, %t: !tile.tmem<tensor<128x64xf32>>, %p: i1, %d: !tile.mbarriers<2>, %i: i32) {
  // expected-error @+1 {{expected bf16 or f16 boxes of one element type, got 'bf16' and 'f16'}}
  tile.tcgen05_dot %ra[%i], %rb[%i], %t, %p -> %d[%i] : !tile.ring<2, tensor<128x64xbf16>>, !tile.ring<2, tensor<64x64xf16>>, !tile.tmem<tensor<128x64xf32>>, !tile.mbarriers<2>
  return
}

// -----

func.func @tcgen05_dot_shapes(%ra: !tile.ring<2, tensor<128x64xbf16>>, %rb: !tile.ring<2, tensor<128x64xbf16>>, %t: !tile.tmem<tensor<128x64xf32>>, %p: i1, %d: !tile.mbarriers<2>, %i: i32) {
  // expected-error @+1 {{expected a [M, K] box, a [N, K] box and a [M, N] accumulator}}
  tile.tcgen05_dot %ra[%i], %rb[%i], %t, %p -> %d[%i] : !tile.ring<2, tensor<128x64xbf16>>, !tile.ring<2, tensor<128x64xbf16>>, !tile.tmem<tensor<128x64xf32>>, !tile.mbarriers<2>
  return
}

// -----

func.func @tcgen05_dot_k(%ra: !tile.ring<2, tensor<128x32xbf16>>, %rb: !tile.ring<2, tensor<64x32xbf16>>, %t: !tile.tmem<tensor<128x64xf32>>, %p: i1, %d: !tile.mbarriers<2>, %i: i32) {
  // expected-error @+1 {{expected K a multiple of 64 (whole 128-byte swizzle spans per row), got 32}}
  tile.tcgen05_dot %ra[%i], %rb[%i], %t, %p -> %d[%i] : !tile.ring<2, tensor<128x32xbf16>>, !tile.ring<2, tensor<64x32xbf16>>, !tile.tmem<tensor<128x64xf32>>, !tile.mbarriers<2>
  return
}

// -----

func.func @tcgen05_dot_n(%ra: !tile.ring<2, tensor<128x64xbf16>>, %rb: !tile.ring<2, tensor<8x64xbf16>>, %t: !tile.tmem<tensor<128x8xf32>>, %p: i1, %d: !tile.mbarriers<2>, %i: i32) {
  // expected-error @+1 {{expected N a multiple of 16 from 16 to 256 (tcgen05.mma with M = 128), got 8}}
  tile.tcgen05_dot %ra[%i], %rb[%i], %t, %p -> %d[%i] : !tile.ring<2, tensor<128x64xbf16>>, !tile.ring<2, tensor<8x64xbf16>>, !tile.tmem<tensor<128x8xf32>>, !tile.mbarriers<2>
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.maxnreg' in [24, 255] (registers a thread), got 16}}
func.func @maxnreg_too_small() attributes {tile.kernel, tile.maxnreg = 16 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.maxnreg' in [24, 255] (registers a thread), got 256}}
func.func @maxnreg_too_large() attributes {tile.kernel, tile.maxnreg = 256 : i32} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.maxnreg' to be an i32 attribute, got 64 : i64}}
func.func @maxnreg_i64() attributes {tile.kernel, tile.maxnreg = 64 : i64} {
  return
}

// -----

func.func @maxnreg_not_a_func() {
  // expected-error @+1 {{'arith.constant' op 'tile.maxnreg' applies to func.func only}}
  %c = arith.constant {tile.maxnreg = 64 : i32} 0 : i32
  return
}

// -----

func.func @warp_specialize_producer_tile(%x: f32) {
  tile.warp_specialize consumer {
  } producer {
    // expected-error @+1 {{expected no tiles in the producer region of a tile.warp_specialize}}
    %t = tile.splat %x : f32 -> tensor<128xf32>
  }
  return
}

// -----

func.func @warp_specialize_nested() {
  tile.warp_specialize consumer {
    // expected-error @+1 {{expected no enclosing tile.warp_specialize}}
    tile.warp_specialize consumer {
    } producer {
    }
  } producer {
  }
  return
}

// -----

// expected-error @+1 {{'tile.warp_specialize' applies to scf.for only}}
func.func @warp_specialize_attr_on_func() attributes {tile.warp_specialize} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expected 'tile.pdl' to be a unit attribute}}
func.func @pdl_not_unit() attributes {tile.kernel, tile.pdl = 1 : i32} {
  return
}

// -----

func.func @pdl_not_a_function() {
  // expected-error @+1 {{'arith.constant' op 'tile.pdl' applies to functions only}}
  %c = arith.constant {tile.pdl} 0 : i32
  return
}

// -----

// expected-error @+1 {{'func.func' op expected each 'tile.dots' entry to be "line unit[ reason]" (unit wgmma, wgmma staged, tcgen05, tcgen05 staged or mma.sync), got "12 tensor cores"}}
func.func @dots_unknown_unit() attributes {tile.dots = ["12 tensor cores"]} {
  return
}

// -----

// expected-error @+1 {{'llvm.func' op expected 'tile.features' to be an array of strings, got ["tma", 1 : i32]}}
llvm.func @features_not_strings() attributes {tile.features = ["tma", 1 : i32]} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op unknown feature 'vector16' in 'tile.features' (expected one of elect, mbarrier, pdl, setmaxnreg, sys_atomics, tcgen05, tma, wgmma)}}
llvm.func @features_unknown() attributes {tile.features = ["vector16"]} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op expected 'tile.features' sorted and unique, got 'tma' after 'wgmma'}}
llvm.func @features_unsorted() attributes {tile.features = ["wgmma", "tma"]} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op expected 'tile.features' sorted and unique, got 'tma' after 'tma'}}
llvm.func @features_repeated() attributes {tile.features = ["tma", "tma"]} {
  llvm.return
}

// -----

func.func @features_not_a_function() {
  // expected-error @+1 {{'arith.constant' op 'tile.features' applies to functions only}}
  %c = arith.constant {tile.features = ["tma"]} 0 : i32
  return
}

// -----

// expected-error @+1 {{'llvm.func' op expected 'tile.register_split' to be an array<i32> of 3 entries (consumer threads, consumer registers, producer registers), got array<i32: 232, 40>}}
llvm.func @register_split_two() attributes {tile.register_split = array<i32: 232, 40>} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op expected whole warpgroups of consumer threads in 'tile.register_split', got 96}}
llvm.func @register_split_threads() attributes {tile.register_split = array<i32: 96, 232, 40>} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op expected 'tile.register_split' registers to be a multiple of 8 in [24, 256] (setmaxnreg), got 236}}
llvm.func @register_split_registers() attributes {tile.register_split = array<i32: 256, 236, 40>} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op expected 'tile.register_split' registers to be a multiple of 8 in [24, 256] (setmaxnreg), got 16}}
llvm.func @register_split_producer() attributes {tile.register_split = array<i32: 256, 232, 16>} {
  llvm.return
}

// -----

func.func @register_split_not_a_function() {
  // expected-error @+1 {{'arith.constant' op 'tile.register_split' applies to functions only}}
  %c = arith.constant {tile.register_split = array<i32: 256, 232, 40>} 0 : i32
  return
}

// -----

func.func @bad_turn() {
  // expected-error @+1 {{expected the step "start", "wait", "pass" or "end", got "go"}}
  tile.warpgroup_turn "go"
  return
}

// -----

func.func @stage_encoded(%t: tensor<128x64xbf16, #tile.mma<version = 3, numWarps = 8>>) {
  // expected-error @+1 {{expected the result to stage 'tensor<128x64xbf16>', got '!tile.smem<tensor<64x64xbf16>>'}}
  %s = tile.stage %t : tensor<128x64xbf16, #tile.mma<version = 3, numWarps = 8>> -> !tile.smem<tensor<64x64xbf16>>
  return
}

// -----

func.func @warpgroup_dot_register_a_split_n(%a: tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>, %rb: !tile.ring<2, tensor<64x64xbf16>>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>, %i: i32) {
  // expected-error @+1 {{expected `a` staged or a ring slot where warpgroups split N (a warpgroup's registers hold only its own columns)}}
  %d = tile.warpgroup_dot %a, %rb[%i], %acc : tensor<64x64xbf16, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>, !tile.ring<2, tensor<64x64xbf16>>, tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
  return
}

// -----

func.func @warpgroup_dot_staged_split_n(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %acc: tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>) {
  // expected-error @+1 {{expected M a multiple of 64, K a multiple of 64 and N a multiple of 128 up to 512, got 64, 64 and 64}}
  %d = tile.warpgroup_dot_staged %a, %b, %acc : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32, #tile.mma<version = 3, numWarps = 8, warpsN = 2>>
  return
}

// -----

func.func @columns_not_whole_warps(%x: f32) {
  // expected-error @+1 {{expected a 1-D tile of a multiple of 32 columns for the slice along dim 0 of the version 2 mma encoding, got 'tensor<16xf32>'}}
  %t = tile.splat %x : f32 -> tensor<16xf32, #tile.slice<dim = 0, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 4>>>
  return
}
