// RUN: kilnc %s -emit=ptx --arch=sm_90a --wait-bound=1000 | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_100a --wait-bound=1000 | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_103a --wait-bound=1000 | FileCheck %s
// RUN: kilnc %s -emit=ptx --arch=sm_90a --wait-bound=1000 -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a --wait-bound=1000 -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=UNBOUNDED

// The debug wait bound (kiln-convert-tile-to-nvvm's wait-bound, kilnc
// --wait-bound, KILN_DEBUG_WAITS): an mbarrier wait becomes a loop of
// try_waits that counts its tries; past the bound it prints the kernel, the
// op's source line, the barrier's shared address, the parity, the block and
// the thread through vprintf, then traps. The format string is a global of
// the module. Without the bound the wait spins in one inline loop, no
// vprintf, no trap.
// CHECK: .extern .func (.param .b32 func_retval0) vprintf
// CHECK: .global .align 1 .b8 __kiln_hang_{{[0-9]+}}
// CHECK-LABEL: .entry hang(
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-NEXT: selp.u32 %r{{[0-9]+}}, 1, 0, p;
// CHECK: setp.lt.u32 %p{{[0-9]+}}, %r{{[0-9]+}}, 1000;
// CHECK: call.uni (retval0), vprintf, (param0, param1);
// CHECK: trap;
// UNBOUNDED-NOT: vprintf
// UNBOUNDED-LABEL: .entry hang(
// UNBOUNDED: kiln_tma_wait:
// UNBOUNDED-NEXT: mbarrier.try_wait.parity.shared::cta.b64 p, [%r{{[0-9]+}}], %r{{[0-9]+}};
// UNBOUNDED-NEXT: @!p bra kiln_tma_wait;
// UNBOUNDED-NOT: trap;
!R = !tile.ring<2, tensor<64x64xbf16>>
func.func @hang(%slot: i32, %phase: i32, %out: !tile.ptr<bf16>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %ra = tile.ring_alloc : !R
  %a = tile.ring_wait_load %ra[%slot], %phase : !R -> tensor<64x64xbf16>
  return
}
