//===- kiln-opt.cpp - the mlir-opt of kiln ---------------------------------===//

#include "kiln/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  kiln::registerKilnDialectsAndPasses(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "kiln optimizer driver\n", registry));
}
