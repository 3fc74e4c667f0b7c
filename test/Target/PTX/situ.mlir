// RUN: kilnc %s -emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,CHECK-SM90
// RUN: kilnc %s -emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,CHECK-SM100
// RUN: kilnc %s -emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=CHECK,CHECK-SM103

// The PTX assembles for every arch.
// RUN: kilnc %s -emit=ptx --arch=sm_90a -o %t.sm_90a.ptx && %ptxas -arch=sm_90a %t.sm_90a.ptx -o %t.sm_90a.ptxas.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_100a -o %t.sm_100a.ptx && %ptxas -arch=sm_100a %t.sm_100a.ptx -o %t.sm_100a.ptxas.cubin
// RUN: kilnc %s -emit=ptx --arch=sm_103a -o %t.sm_103a.ptx && %ptxas -arch=sm_103a %t.sm_103a.ptx -o %t.sm_103a.ptxas.cubin

// kilnc -emit=cubin: an ELF for the requested SM, through nvJitLink and
// through the ptxas fallback.
// RUN: kilnc %s -emit=cubin --arch=sm_90a -o %t.sm_90a.cubin
// RUN: od -c -N 4 %t.sm_90a.cubin | FileCheck %s --check-prefix=ELF
// RUN: llvm-readelf -h %t.sm_90a.cubin | FileCheck %s --check-prefix=CUBIN-SM90
// RUN: kilnc %s -emit=cubin --arch=sm_100a -o %t.sm_100a.cubin
// RUN: llvm-readelf -h %t.sm_100a.cubin | FileCheck %s --check-prefix=CUBIN-SM100
// RUN: kilnc %s -emit=cubin --arch=sm_103a -o %t.sm_103a.cubin
// RUN: llvm-readelf -h %t.sm_103a.cubin | FileCheck %s --check-prefix=CUBIN-SM103
// RUN: env KILN_USE_PTXAS=1 kilnc %s -emit=cubin --arch=sm_100a -o %t.sm_100a.fallback.cubin
// RUN: od -c -N 4 %t.sm_100a.fallback.cubin | FileCheck %s --check-prefix=ELF
// RUN: llvm-readelf -h %t.sm_100a.fallback.cubin | FileCheck %s --check-prefix=CUBIN-SM100

// ELF: 0000000 177 E L F
// CUBIN-SM90: Machine: NVIDIA CUDA architecture
// CUBIN-SM90: Flags: 0x{{[0-9a-f]+}}, sm_90
// CUBIN-SM100: Machine: NVIDIA CUDA architecture
// CUBIN-SM100: Flags: 0x{{[0-9a-f]+}}, sm_100
// CUBIN-SM103: Machine: NVIDIA CUDA architecture
// CUBIN-SM103: Flags: 0x{{[0-9a-f]+}}, sm_103

// SiTU over one bf16 row per program: a masked 16-byte load, tanh and exp
// through libdevice (exp via ex2.approx), a masked 16-byte store.
// CHECK: .version 8.8
// CHECK-SM90-NEXT: .target sm_90a
// CHECK-SM100-NEXT: .target sm_100a
// CHECK-SM103-NEXT: .target sm_103a
// CHECK-NEXT: .address_size 64
// CHECK-LABEL: .visible .entry situ(
// CHECK-NEXT: .param .u64 .ptr .global .align 1 situ_param_0,
// CHECK-NEXT: .param .u64 .ptr .global .align 1 situ_param_1,
// CHECK-NEXT: .param .u32 situ_param_2,
// CHECK-NEXT: .param .u32 situ_param_3,
// CHECK-NEXT: .param .u32 situ_param_4,
// CHECK-NEXT: .param .f32 situ_param_5,
// CHECK-NEXT: .param .f32 situ_param_6
// CHECK-NEXT: )
// CHECK-NEXT: .reqntid 128, 1, 1
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %ctaid.x;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %ctaid.y;
// CHECK-DAG: mov.u32 %r{{[0-9]+}}, %tid.x;
// CHECK: @%p{{[0-9]+}} bra $L__BB0_{{[0-9]+}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-COUNT-8: cvt.f32.bf16
// CHECK: ex2.approx
// CHECK-COUNT-4: cvt.rn.bf16x2.f32
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
// No libdevice function is left to call.
// CHECK-NOT: call
// CHECK-NOT: __nv_

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
