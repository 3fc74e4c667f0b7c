// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.cubin

// cumsum of a [64, 128] f32 tile down its columns over 8 warps (the KDA
// prefill's chunk-local cumsum): a thread holds a run of 4 columns of rows
// w + 8 c (warp w, chunk c = 0..7), so each of its 32 registers is its own
// segment, and every value goes through the shared buffer
// [chunk][warp][column], 8 x 8 x 128 f32. The columns are swizzled (the run's 2
// bits on top: column 4 L + j at L + 32 j) so that the 32 lanes store and load
// 32 consecutive words: a thread's 4 columns lie 128 bytes apart, its chunks
// 4096 (8 warps x 128 columns x 4 bytes), and the warps it reads 512. Unswizzled
// (columns innermost, 4 apart a lane) a warp's access hits 8 banks 4 times;
// warps innermost, one bank 32 times.
// CHECK-LABEL: .visible .entry cumsum_columns(
// CHECK: .reqntid 256, 1, 1
// CHECK: .shared .align 16 .b8 __kiln_scan_smem_0[32768];
// CHECK-NOT: shfl.sync
// CHECK: st.shared.b32 [%rd[[S:[0-9]+]]], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[S]]+128], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[S]]+256], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[S]]+384], %r{{[0-9]+}};
// CHECK-NEXT: st.shared.b32 [%rd[[S]]+4096], %r{{[0-9]+}};
// CHECK-COUNT-27: st.shared.b32
// CHECK-NEXT: bar.sync 0;
// CHECK: ld.shared.b32 %r{{[0-9]+}}, [%rd[[L:[0-9]+]]];
// CHECK: ld.shared.b32 %r{{[0-9]+}}, [%rd[[L]]+512];
// CHECK: ld.shared.b32 %r{{[0-9]+}}, [%rd[[L]]+3584];
// CHECK-NOT: ld.shared.v
// CHECK: bar.sync 0;
// CHECK: ret;
func.func @cumsum_columns(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %c = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %r1 = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %c0 = tile.expand_dims %c {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %k = arith.constant dense<128> : tensor<64x1xi32>
  %rk = arith.muli %r1, %k : tensor<64x1xi32>
  %rb = tile.broadcast %rk : tensor<64x1xi32> -> tensor<64x128xi32>
  %cb = tile.broadcast %c0 : tensor<1x128xi32> -> tensor<64x128xi32>
  %off = arith.addi %rb, %cb : tensor<64x128xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  %p = tile.addptr %xs, %off : tensor<64x128x!tile.ptr<f32>>, tensor<64x128xi32>
  %v = tile.load %p : tensor<64x128x!tile.ptr<f32>>
  %s = tile.scan %v {axis = 0 : i32} : tensor<64x128xf32> {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tile.scan.return %t : f32
  }
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<64x128x!tile.ptr<f32>>
  %q = tile.addptr %ys, %off : tensor<64x128x!tile.ptr<f32>>, tensor<64x128xi32>
  tile.store %q, %s : tensor<64x128x!tile.ptr<f32>>
  return
}
