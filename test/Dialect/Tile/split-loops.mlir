// RUN: kiln-opt %s -split-input-file -kiln-tile-split-loops -canonicalize | FileCheck %s --enable-var-scope

// A branch on iv >= bound: the iterations before the first iv >= bound run
// in a loop without it, the others in a loop with its then-branch alone;
// the first loop's results are the second's initial values. The split point
// is min(lb + ceildiv(max(bound - lb, 0), step) * step, ub).
// CHECK-LABEL: func.func @split_sge
// CHECK-SAME: (%[[LB:.*]]: i32, %[[UB:.*]]: i32, %[[BOUND:.*]]: i32)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[C2:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[D:.*]] = arith.subi %[[BOUND]], %[[LB]] : i32
// CHECK: %[[DP:.*]] = arith.maxsi %[[D]], %[[C0]] : i32
// CHECK: %[[N:.*]] = arith.addi %[[DP]], %{{.*}} : i32
// CHECK: %[[K:.*]] = arith.divsi %[[N]], %{{.*}} : i32
// CHECK: %[[KS:.*]] = arith.muli %[[K]], %{{.*}} : i32
// CHECK: %[[AT0:.*]] = arith.addi %[[LB]], %[[KS]] : i32
// CHECK: %[[AT:.*]] = arith.minsi %[[AT0]], %[[UB]] : i32
// CHECK: %[[FIRST:.*]] = scf.for %{{.*}} = %[[LB]] to %[[AT]] step %{{.*}} iter_args(%[[X:.*]] = %{{.*}}) -> (f32)
// CHECK-NOT: scf.if
// CHECK: arith.addf %[[X]], %[[C2]]
// CHECK: %[[SECOND:.*]] = scf.for %{{.*}} = %[[AT]] to %[[UB]] step %{{.*}} iter_args(%[[Y:.*]] = %[[FIRST]]) -> (f32)
// CHECK-NOT: scf.if
// CHECK: arith.addf %[[Y]], %[[C1]]
// CHECK: return %[[SECOND]]
func.func @split_sge(%lb: i32, %ub: i32, %bound: i32) -> f32 {
  %c3 = arith.constant 3 : i32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %r = scf.for %i = %lb to %ub step %c3 iter_args(%x = %zero) -> (f32) : i32 {
    %masked = arith.cmpi sge, %i, %bound : i32
    %y = scf.if %masked -> (f32) {
      %a = arith.addf %x, %one : f32
      scf.yield %a : f32
    } else {
      %b = arith.addf %x, %two : f32
      scf.yield %b : f32
    }
    scf.yield %y : f32
  }
  return %r : f32
}

// -----

// bound > iv is iv < bound: the then-branch runs in the first loop, up to
// min(max(bound, 0), n); the second loop, empty, folds away.
// CHECK-LABEL: func.func @split_sgt_swapped
// CHECK-SAME: (%{{.*}}: tensor<16x!tile.ptr<f32>>, %{{.*}}: tensor<16xf32>, %[[N:.*]]: i32, %[[BOUND:.*]]: i32)
// CHECK: %[[D:.*]] = arith.maxsi %[[BOUND]], %{{.*}} : i32
// CHECK: %[[AT:.*]] = arith.minsi %[[D]], %[[N]] : i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[AT]]
// CHECK-NOT: scf.if
// CHECK: tile.store %{{.*}}, %{{.*}} : tensor<16x!tile.ptr<f32>>
// CHECK-NOT: scf.for
// CHECK: return
func.func @split_sgt_swapped(%p: tensor<16x!tile.ptr<f32>>, %v: tensor<16xf32>, %n: i32, %bound: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %head = arith.cmpi sgt, %bound, %i : i32
    scf.if %head {
      tile.store %p, %v : tensor<16x!tile.ptr<f32>>
    }
  }
  return
}

// -----

// A bound the loop computes, or a condition not on the induction variable:
// the loop stays whole.
// CHECK-LABEL: func.func @no_split
// CHECK: scf.for
// CHECK: scf.if
// CHECK: scf.if
// CHECK-NOT: scf.for
func.func @no_split(%p: tensor<16x!tile.ptr<f32>>, %v: tensor<16xf32>, %n: i32, %bound: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %twice = arith.addi %i, %i : i32
    %inner = arith.cmpi sge, %i, %twice : i32
    scf.if %inner {
      tile.store %p, %v : tensor<16x!tile.ptr<f32>>
    }
    %other = arith.cmpi sge, %bound, %n : i32
    scf.if %other {
      tile.store %p, %v : tensor<16x!tile.ptr<f32>>
    }
  }
  return
}
