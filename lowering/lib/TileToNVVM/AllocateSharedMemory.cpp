//===- AllocateSharedMemory.cpp - dynamic shared memory past 48 KiB ---------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Tile/IR/TileDialect.h"
#include "kiln/Dialect/Tile/IR/TileTypes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_ALLOCATESHAREDMEMORY
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kDynamicName = "__kiln_dynamic_smem";
constexpr unsigned kDynamicAlignment = 1024;

struct AllocateSharedMemoryPass
    : kiln::impl::AllocateSharedMemoryBase<AllocateSharedMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::GlobalOp> buffers;
    for (auto global : module.getOps<LLVM::GlobalOp>())
      if (global.getAddrSpace() == 3 && global.getName() != kDynamicName)
        buffers.push_back(global);
    DataLayout layout(module);
    llvm::DenseMap<StringRef, int64_t> offsets;
    int64_t total = 0;
    for (LLVM::GlobalOp global : buffers) {
      int64_t align = std::max<int64_t>(1, global.getAlignment().value_or(1));
      total = llvm::alignTo(total, align);
      offsets[global.getSymName()] = total;
      total += layout.getTypeSize(global.getGlobalType()).getFixedValue();
    }
    if (total <= kiln::tile::kMaxStaticSharedBytes)
      return;
    if (total > kiln::tile::kMaxSharedBytes) {
      InFlightDiagnostic diag = module.emitError()
                                << "the kernel needs " << total
                                << " bytes of shared memory, more than the "
                                << kiln::tile::kMaxSharedBytes << " a block may use";
      for (LLVM::GlobalOp global : buffers)
        diag.attachNote(global.getLoc())
            << global.getSymName() << ": "
            << int64_t(layout.getTypeSize(global.getGlobalType()).getFixedValue()) << " bytes";
      return signalPassFailure();
    }

    OpBuilder b(module.getContext());
    b.setInsertionPointToStart(module.getBody());
    Type i8 = b.getI8Type();
    LLVM::GlobalOp::create(b, module.getLoc(), LLVM::LLVMArrayType::get(i8, 0),
                           /*isConstant=*/false, LLVM::Linkage::External, kDynamicName,
                           Attribute(), kDynamicAlignment, /*addrSpace=*/3);
    module.walk([&](LLVM::AddressOfOp op) {
      auto it = offsets.find(op.getGlobalName());
      if (it == offsets.end())
        return;
      b.setInsertionPoint(op);
      Value base = LLVM::AddressOfOp::create(b, op.getLoc(), op.getType(), kDynamicName);
      Value address = LLVM::GEPOp::create(b, op.getLoc(), op.getType(), i8, base,
                                          ArrayRef<LLVM::GEPArg>{int32_t(it->second)});
      op.replaceAllUsesWith(address);
      op.erase();
    });
    for (LLVM::GlobalOp global : buffers)
      global.erase();
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
        func->setAttr(kiln::tile::TileDialect::getSharedBytesAttrName(),
                      b.getI32IntegerAttr(int32_t(total)));
  }
};
} // namespace
