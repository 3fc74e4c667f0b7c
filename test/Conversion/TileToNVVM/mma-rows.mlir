// RUN: kiln-opt %s -split-input-file -kiln-tile-assign-layout -kiln-convert-tile-to-nvvm=arch=sm_90a | FileCheck %s

#mma = #tile.mma<version = 3, numWarps = 8>
#rows = #tile.slice<dim = 1, parent = #tile.mma<version = 3, numWarps = 8>>

// The rows of a [128, 64] wgmma accumulator on 8 warps (converted in from a
// loaded tile: stores, a barrier, loads, a barrier): one 64-row slab a
// warpgroup, 32 registers a thread, 16 of row h = register / 2 mod 2. Each
// row's 16 combine pairwise in the thread (15 maxnums: libdevice fmaxf), then the quad's 4
// lanes through shfl.sync.bfly 1 and 2 (a maxnum each): no shared memory, no
// barrier. The slice holds 2 registers a thread; the sum with itself runs on
// them in place (2 fadds); expand_dims and the broadcast back to [128, 64]
// copy registers (32 fsubs, one a register, each with its row's value). The
// conversion of the slice to the blocked layout goes through shared memory,
// as any other.
// CHECK-LABEL: llvm.func ptx_kernelcc @rows(
// CHECK: nvvm.barrier
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-15: llvm.call @__nv_fmaxf
// CHECK-NOT: llvm.call @__nv_fmaxf
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}} : i32 -> i32
// CHECK: llvm.call @__nv_fmaxf
// CHECK: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[TWO]], %{{.*}} : i32 -> i32
// CHECK: llvm.call @__nv_fmaxf
// CHECK-COUNT-15: llvm.call @__nv_fmaxf
// CHECK-COUNT-2: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-2: llvm.fadd {{.*}} : f32
// CHECK-NOT: llvm.fadd
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-32: llvm.fsub {{.*}} : f32
// CHECK-NOT: llvm.fsub
// CHECK: llvm.store
// CHECK: nvvm.barrier
// CHECK: llvm.load
// CHECK: nvvm.barrier
func.func @rows(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>, %outh: !tile.ptr<bf16>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %xp = tile.splat %x : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  %l = tile.load %xp : tensor<128x64x!tile.ptr<f32>>
  %t = tile.convert_layout %l : tensor<128x64xf32> -> tensor<128x64xf32, #mma>
  %m = tile.reduce %t {axis = 1 : i32} : tensor<128x64xf32, #mma> -> tensor<128xf32, #rows> {
  ^bb0(%a: f32, %b: f32):
    %z = arith.maxnumf %a, %b : f32
    tile.reduce.return %z : f32
  }
  %m2 = arith.addf %m, %m : tensor<128xf32, #rows>
  %e = tile.expand_dims %m2 {axis = 1 : i32} : tensor<128xf32, #rows> -> tensor<128x1xf32, #mma>
  %b = tile.broadcast %e : tensor<128x1xf32, #mma> -> tensor<128x64xf32, #mma>
  %d = arith.subf %t, %b : tensor<128x64xf32, #mma>
  %r = tile.convert_layout %m2 : tensor<128xf32, #rows> -> tensor<128xf32>
  %p = tile.splat %out : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  tile.store %p, %r : tensor<128x!tile.ptr<f32>>
  %h = arith.truncf %d : tensor<128x64xf32, #mma> to tensor<128x64xbf16, #mma>
  %hb = tile.convert_layout %h : tensor<128x64xbf16, #mma> -> tensor<128x64xbf16>
  %hp = tile.splat %outh : !tile.ptr<bf16> -> tensor<128x64x!tile.ptr<bf16>>
  tile.store %hp, %hb : tensor<128x64x!tile.ptr<bf16>>
  return
}

// -----

#mma = #tile.mma<version = 3, numWarps = 4>

// p v with p in the mma layout (A from registers): only v is staged (no A
// buffer); per k16 step c its registers 8c .. 8c + 7 pack pairwise into four
// i32 words of bf16x2 for one inline-PTX wgmma m64n64k16 with A from
// registers (the 32 accumulators tied to the results), B's descriptor (the
// transpose-B immediate 1), scale-d true; 4 steps for K = 64.
// CHECK-NOT: __kiln_wgmma_a_smem
// CHECK: llvm.mlir.global internal @__kiln_wgmma_b_smem_0() {addr_space = 3 : i32, alignment = 1024 : i64, tile.scratch} : !llvm.array<4096 x bf16>
// CHECK-NOT: __kiln_wgmma_a_smem
// CHECK-LABEL: llvm.func ptx_kernelcc @register_a(
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier
// CHECK: llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $69, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;\0A}", "=f,{{.*}},=f,0,1,{{.*}},31,r,r,r,r,l,r"
// CHECK-COUNT-3: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 0;
func.func @register_a(%x: !tile.ptr<bf16>, %y: f32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %s = tile.splat %y : f32 -> tensor<64x64xf32, #mma>
  %p = arith.truncf %s : tensor<64x64xf32, #mma> to tensor<64x64xbf16, #mma>
  %bp = tile.splat %x : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %b = tile.load %bp : tensor<64x64x!tile.ptr<bf16>>
  %d = tile.warpgroup_dot_staged %p, %b, %s : tensor<64x64xbf16, #mma> * tensor<64x64xbf16> -> tensor<64x64xf32, #mma>
  %c = tile.convert_layout %d : tensor<64x64xf32, #mma> -> tensor<64x64xf32>
  %op = tile.splat %y : f32 -> tensor<64x64xf32>
  %e = arith.addf %c, %op : tensor<64x64xf32>
  %ep = tile.splat %x : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %h = arith.truncf %e : tensor<64x64xf32> to tensor<64x64xbf16>
  tile.store %ep, %h : tensor<64x64x!tile.ptr<bf16>>
  return
}

// -----

#mma = #tile.mma<version = 3, numWarps = 8>

// tile.iota in the wgmma accumulator layout ([128, 64] on two warpgroups):
// a register's element is the thread's base (row 64 (tid / 128) + 16 (warp
// mod 4) + lane / 4, column 2 (lane mod 4)) plus a per-register offset that
// never carries from the column into the row, so each coordinate is one
// shift and mask of the base plus a constant: the row + 0 or + 8, the column
// + start + 0, 1, 8, 9, ...
// CHECK-LABEL: llvm.func ptx_kernelcc @iota_mma
// CHECK: %[[C6:.*]] = llvm.mlir.constant(6 : i32) : i32
// CHECK-NEXT: %[[RS:.*]] = llvm.lshr %{{.*}}, %[[C6]] : i32
// CHECK-NEXT: %[[C127:.*]] = llvm.mlir.constant(127 : i32) : i32
// CHECK-NEXT: %[[ROW:.*]] = llvm.and %[[RS]], %[[C127]] : i32
// CHECK-NEXT: %[[C8:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: llvm.add %[[ROW]], %[[C8]] : i32
// CHECK: %[[C63:.*]] = llvm.mlir.constant(63 : i32) : i32
// CHECK-NEXT: %[[COL:.*]] = llvm.and %{{.*}}, %[[C63]] : i32
// CHECK: %[[C2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.add %[[COL]], %[[C2]] : i32
// CHECK: %[[C3:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: llvm.add %[[COL]], %[[C3]] : i32
// CHECK: %[[C10:.*]] = llvm.mlir.constant(10 : i32) : i32
// CHECK: llvm.add %[[COL]], %[[C10]] : i32
func.func @iota_mma(%x: !tile.ptr<i32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %r = tile.iota {dim = 0 : i32, start = 0 : i32} : tensor<128x64xi32, #mma>
  %c = tile.iota {dim = 1 : i32, start = 2 : i32} : tensor<128x64xi32, #mma>
  %v = arith.subi %c, %r : tensor<128x64xi32, #mma>
  %b = tile.convert_layout %v : tensor<128x64xi32, #mma> -> tensor<128x64xi32>
  %xs = tile.splat %x : !tile.ptr<i32> -> tensor<128x64x!tile.ptr<i32>>
  tile.store %xs, %b : tensor<128x64x!tile.ptr<i32>>
  return
}

// -----

#mma = #tile.mma<version = 3, numWarps = 8>

// A blocked [1, 64] row broadcast into a [128, 64] wgmma accumulator's
// layout (kiln-tile-accelerate-dot's bias): the row, 64 floats, goes to a
// shared buffer of its own (4 stores a thread: 16 threads hold it, the others
// copies); after a barrier each thread reads, for each of its 32 registers,
// the row's element at the register's column, then a barrier before the
// buffer's bytes are used again. The sum runs on the accumulator's registers.
// CHECK: llvm.mlir.global internal @__kiln_broadcast_smem_0() {{.*}} : !llvm.array<64 x f32>
// CHECK-LABEL: llvm.func ptx_kernelcc @row_into_mma
// CHECK: %[[ROW:.*]] = llvm.mlir.addressof @__kiln_broadcast_smem_0 : !llvm.ptr<3>
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-32: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: nvvm.barrier
// CHECK-COUNT-32: llvm.fadd
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @row_into_mma(%x: !tile.ptr<f32>, %bias: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %xp = tile.splat %x : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>>
  %l = tile.load %xp : tensor<128x64x!tile.ptr<f32>>
  %t = tile.convert_layout %l : tensor<128x64xf32> -> tensor<128x64xf32, #mma>
  %bp = tile.splat %bias : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %bv = tile.load %bp : tensor<64x!tile.ptr<f32>>
  %row = tile.expand_dims %bv {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
  %b = tile.broadcast %row : tensor<1x64xf32> -> tensor<128x64xf32, #mma>
  %s = arith.addf %t, %b : tensor<128x64xf32, #mma>
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<128x64x!tile.ptr<f32>, #mma>
  tile.store %op, %s : tensor<128x64x!tile.ptr<f32>, #mma>
  return
}

// -----

#sync = #tile.mma<version = 2, numWarps = 4, warpsN = 4>
#cols = #tile.slice<dim = 0, parent = #tile.mma<version = 2, numWarps = 4, warpsN = 4>>

// A 1-D ring slot read as the columns of an mma.sync accumulator [16, 32] on 4
// warps along N (kiln-tile-accelerate-dot's per-key FP8 scales): each thread
// reads the 2 columns it holds (one 8-byte ld.shared of the slot, twice: its
// rows wrap onto row 0), and expand_dims and the broadcast over the rows copy
// registers: no shared buffer, no barrier between the slot's wait and the 4
// fmuls.
// CHECK-LABEL: llvm.func ptx_kernelcc @columns_from_slot(
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: nvvm.barrier
// CHECK-COUNT-2: llvm.load {{.*}} : !llvm.ptr<3> -> vector<2xi32>
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: llvm.store
// CHECK-COUNT-4: llvm.fmul {{.*}} : f32
// CHECK-NOT: llvm.fmul
func.func @columns_from_slot(%g: !tile.ptr<f32>, %x: !tile.ptr<f32>, %out: !tile.ptr<f32>, %slot: i32, %phase: i32, %p: i1) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.ring_alloc : !tile.ring<2, tensor<32xf32>>
  %gp = tile.splat %g : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
  tile.ring_issue %gp -> %r[%slot] if %p : tensor<32x!tile.ptr<f32>>, !tile.ring<2, tensor<32xf32>>
  %xp = tile.splat %x : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %l = tile.load %xp : tensor<16x32x!tile.ptr<f32>>
  %t = tile.convert_layout %l : tensor<16x32xf32> -> tensor<16x32xf32, #sync>
  %sc = tile.ring_wait_load %r[%slot], %phase : !tile.ring<2, tensor<32xf32>> -> tensor<32xf32, #cols>
  %e = tile.expand_dims %sc {axis = 0 : i32} : tensor<32xf32, #cols> -> tensor<1x32xf32, #sync>
  %b = tile.broadcast %e : tensor<1x32xf32, #sync> -> tensor<16x32xf32, #sync>
  %m = arith.mulf %t, %b : tensor<16x32xf32, #sync>
  %mb = tile.convert_layout %m : tensor<16x32xf32, #sync> -> tensor<16x32xf32>
  %op = tile.splat %out : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  tile.store %op, %mb : tensor<16x32x!tile.ptr<f32>>
  return
}
