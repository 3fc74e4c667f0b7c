//===- TileToNVVM.cpp - tile dialect to LLVM + NVVM -------------------------===//
//
// The pass, the type converter and the kernel (func.func -> llvm.func)
// patterns; the helpers every pattern shares are in PatternUtils.cpp.
//
//===----------------------------------------------------------------------===//

#include "ConversionSteps.h"
#include "PatternUtils.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Conversion/TileToNVVM.h"
#include "kiln/Dialect/Tile/Analysis/AxisInfo.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"
#include "kiln/Support/Arch.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTTILETONVVM
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Type converter
//===----------------------------------------------------------------------===//

TileTypeConverter::TileTypeConverter(MLIRContext *context, int64_t threadsPerBlock,
                                     int64_t elemsPerThread)
    : LLVMTypeConverter(context), threadsPerBlock(threadsPerBlock), elemsPerThread(elemsPerThread) {
  addConversion([context](tile::PtrType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/1);
  });
  // A TMA ring is the address of its shared memory.
  addConversion([context](tile::RingType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/3);
  });
  // So is a tile staged for wgmma, and an mbarrier array.
  addConversion([context](tile::SmemType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/3);
  });
  addConversion([context](tile::MBarriersType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/3);
  });
  // A Tensor Memory accumulator is its 32-bit TMEM address.
  addConversion([context](tile::TMemType) -> Type {
    return LLVM::LLVMPointerType::get(context, /*addressSpace=*/6);
  });
  // A descriptor parameter is the address of the by-value CUtensorMap.
  addConversion(
      [context](tile::TensorDescType) -> Type { return LLVM::LLVMPointerType::get(context); });
  addConversion([this, context](RankedTensorType type) -> std::optional<Type> {
    Type element = convertType(type.getElementType());
    if (!element)
      return std::nullopt;
    int64_t regs = getRegsPerThread(type);
    return LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(regs, element));
  });
}

std::optional<tile::MmaLayout> TileTypeConverter::getMmaLayout(RankedTensorType type) const {
  // The slice [M] along dim 1 of a version 2 or 3 tile holds its rows as the
  // tile [M, 1] does; the slice [N] along dim 0 of a version 2 tile its
  // columns as the tile [1, N] does (each thread the columns it holds).
  if (auto slice = llvm::dyn_cast_if_present<tile::SliceEncodingAttr>(type.getEncoding())) {
    auto parent = llvm::cast<tile::MmaEncodingAttr>(slice.getParent());
    int64_t m = slice.getDim() == 1 ? type.getDimSize(0) : 1;
    int64_t n = slice.getDim() == 1 ? 1 : type.getDimSize(0);
    return tile::MmaLayout{m, n, parent.getNumWarps(), parent.getVersion(), parent.getWarpsN()};
  }
  auto mma = llvm::dyn_cast_if_present<tile::MmaEncodingAttr>(type.getEncoding());
  if (!mma)
    return std::nullopt;
  return tile::MmaLayout{type.getDimSize(0), type.getDimSize(1), mma.getNumWarps(),
                         mma.getVersion(), mma.getWarpsN()};
}

int64_t TileTypeConverter::getElementOf(RankedTensorType type, int64_t thread, int64_t reg) const {
  if (std::optional<tile::MmaLayout> mma = getMmaLayout(type))
    return mma->elementOf(thread, reg);
  return getLayout(type).elementOf(thread, reg);
}

int64_t TileTypeConverter::getRegsPerThread(RankedTensorType type) const {
  if (std::optional<tile::MmaLayout> mma = getMmaLayout(type))
    return mma->regsPerThread();
  return getLayout(type).regsPerThread();
}

LogicalResult kiln::checkRegisterFootprint(ModuleOp module, const TileTypeConverter &converter) {
  WalkResult tooLarge = module.walk([&](Operation *op) {
    // Data: what is read from memory and what floating-point ops compute.
    // Index, mask and pointer tiles are left out: each element is computed
    // where it is used, from the kl.arange it broadcasts.
    auto memory = llvm::dyn_cast<MemoryEffectOpInterface>(op);
    bool reads = memory && memory.hasEffect<MemoryEffects::Read>();
    for (Value result : op->getResults()) {
      auto type = llvm::dyn_cast<RankedTensorType>(result.getType());
      if (!type || !(reads || llvm::isa<FloatType>(type.getElementType())))
        continue;
      int64_t elements = converter.getRegsPerThread(type);
      if (elements <= kMaxElementsPerThread)
        continue;
      op->emitOpError() << "makes a tile of " << elements << " elements a thread (" << type
                        << " on " << converter.getThreadsPerBlock() << " threads), more than the "
                        << kMaxElementsPerThread
                        << " a tile may hold: a thread has 255 registers, the lowering one "
                           "value an element; use a smaller tile or more warps";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(tooLarge.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

namespace {
/// func.func with tile.kernel -> llvm.func with nvvm.kernel,
/// nvvm.reqntid = threads per block, for tile.cluster_dims nvvm.cluster_dim
/// (.explicitcluster + .reqnctapercluster), for tile.maxnreg nvvm.maxnreg
/// (.maxnreg) and for tile.min_programs_per_sm nvvm.minctasm (.minnctapersm).
struct KernelFuncLowering : TileOpConversion<func::FuncOp> {
  using TileOpConversion::TileOpConversion;

  LogicalResult matchAndRewrite(func::FuncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op->hasAttr(tile::TileDialect::getKernelAttrName()))
      return rewriter.notifyMatchFailure(op, "not a tile kernel");
    FunctionType type = op.getFunctionType();
    TypeConverter::SignatureConversion signature(type.getNumInputs());
    SmallVector<Type> argTypes;
    for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
      Type converted = getTypeConverter()->convertType(argType);
      if (!converted)
        return rewriter.notifyMatchFailure(op, "unsupported kernel argument type");
      signature.addInputs(i, converted);
      argTypes.push_back(converted);
    }
    auto llvmType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(op.getContext()), argTypes);
    auto func = LLVM::LLVMFuncOp::create(rewriter, op.getLoc(), op.getName(), llvmType,
                                         LLVM::Linkage::External, /*dsoLocal=*/false,
                                         LLVM::CConv::PTX_Kernel);
    func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), rewriter.getUnitAttr());
    // A warp-specialized kernel runs its producer warpgroup after the
    // layout's threads: the launch's real thread count.
    int64_t threads = tileConverter.getThreadsPerBlock();
    bool specialized =
        op->walk([](tile::WarpSpecializeOp) { return WalkResult::interrupt(); }).wasInterrupted();
    if (specialized)
      threads += kProducerThreads;
    func->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                  rewriter.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
    if (auto cluster =
            op->getAttrOfType<DenseI32ArrayAttr>(tile::TileDialect::getClusterDimsAttrName()))
      func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(), cluster);
    if (auto regs = op->getAttrOfType<IntegerAttr>(tile::TileDialect::getMaxnregAttrName()))
      func->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(), regs);
    // What runs each dot, for the compile metadata.
    if (auto dots = op->getAttrOfType<ArrayAttr>(tile::TileDialect::getDotsAttrName()))
      func->setAttr(tile::TileDialect::getDotsAttrName(), dots);
    // .minnctapersm: ptxas fits the registers to that many blocks an SM.
    if (auto programs =
            op->getAttrOfType<IntegerAttr>(tile::TileDialect::getMinProgramsPerSMAttrName()))
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), programs);
    // setmaxnreg moves registers within the pool the program starts with:
    // with .minnctapersm 1 ptxas starts a warp-specialized kernel with all the
    // registers its threads may hold (up to what setmaxnreg asks for); with
    // .reqntid alone it may start with what the code outside needs.
    else if (specialized)
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), rewriter.getI32IntegerAttr(1));
    // Descriptors are 128-byte CUtensorMaps passed by value; TMA reads them
    // in place (`__grid_constant__`: the parameter's address, cvta.param).
    for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
      if (!llvm::isa<tile::TensorDescType>(argType))
        continue;
      func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(rewriter.getI8Type(), 128)));
      func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(), rewriter.getI64IntegerAttr(64));
      func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(), rewriter.getUnitAttr());
    }
    rewriter.inlineRegionBefore(op.getBody(), func.getBody(), func.end());
    if (failed(rewriter.convertRegionTypes(&func.getBody(), *getTypeConverter(), &signature)))
      return rewriter.notifyMatchFailure(op, "cannot convert the kernel's block arguments");
    rewriter.eraseOp(op);
    return success();
  }
};

struct ReturnLowering : ConvertOpToLLVMPattern<func::ReturnOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getNumOperands() != 0)
      return rewriter.notifyMatchFailure(op, "a tile kernel returns nothing");
    rewriter.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange());
    return success();
  }
};
} // namespace

void kiln::populateTileToNVVMConversionPatterns(TileTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<KernelFuncLowering>(converter);
  patterns.add<ReturnLowering>(converter);
  populateTileProgramOpsToNVVMPatterns(converter, patterns);
  populateTileClusterOpsToNVVMPatterns(converter, patterns);
  populateTileShapeOpsToNVVMPatterns(converter, patterns);
  populateTileMemoryOpsToNVVMPatterns(converter, patterns);
  populateTileTensorDescOpsToNVVMPatterns(converter, patterns);
  populateTileDotOpsToNVVMPatterns(converter, patterns);
  populateTileWarpGroupDotOpsToNVVMPatterns(converter, patterns);
  populateTileTcgen05OpsToNVVMPatterns(converter, patterns);
  populateTileWarpSpecializeOpsToNVVMPatterns(converter, patterns);
  populateTileReduceOpsToNVVMPatterns(converter, patterns);
  populateTileScanOpsToNVVMPatterns(converter, patterns);
  populateTileAtomicOpsToNVVMPatterns(converter, patterns);
  populateTileElementwiseToNVVMPatterns(converter, patterns);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  // Float math becomes libdevice calls (`__nv_*`, linked at PTX emission; the
  // `afn` forms their fast variants); what libdevice lacks maps to LLVM
  // intrinsics.
  populateLibDeviceConversionPatterns(converter, patterns, /*benefit=*/10);
  populateMathToLLVMConversionPatterns(converter, patterns);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
/// What the arch must have for the instructions `op` lowers to (wgmma:
/// sm_90a; tcgen05 and Tensor Memory: sm_100a, sm_103a; setmaxnreg: all
/// three), or null.
Arch::Capability requiredCapability(Operation *op) {
  if (llvm::isa<tile::WarpGroupDotOp, tile::WarpGroupDotWaitOp>(op))
    return &Arch::hasWgmma;
  if (llvm::isa<tile::WarpSpecializeOp>(op))
    return &Arch::hasSetmaxnreg;
  if (llvm::isa<tile::Tcgen05DotOp, tile::Tcgen05DotStagedOp, tile::TMemAllocOp,
                tile::TMemDeallocOp, tile::TMemLoadOp>(op))
    return &Arch::hasTcgen05;
  return nullptr;
}

/// cp.async.bulk needs a 16-byte aligned source and a multiple of 16 bytes:
/// every bulk copy's pointer (tile.bulk_load, tile.ring_issue from a pointer)
/// must be proved 16-byte aligned by the axis analysis (seeded by the kernel's
/// `tile.divisibility`), and its runtime count, if any, a multiple of
/// 16 / sizeof(T) elements.
LogicalResult checkBulkLoadAlignment(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<tile::AxisInfoAnalysis> analysis;
    auto check = [&](Operation *op, Value ptr, Value count, RankedTensorType tile) {
      if (!analysis)
        analysis.emplace(func);
      int64_t divisibility = analysis->get(ptr).divisibility;
      if (divisibility % 16 != 0) {
        op->emitOpError() << "needs a 16-byte aligned pointer for cp.async.bulk, but it is only "
                             "known to be "
                          << divisibility
                          << "-byte aligned (give its kernel argument tile.divisibility = 16 "
                             "and offset it by multiples of 16 bytes)";
        return WalkResult::interrupt();
      }
      if (!count)
        return WalkResult::advance();
      int64_t elementBytes = tile.getElementTypeBitWidth() / 8;
      int64_t countDivisibility = analysis->get(count).divisibility;
      if ((countDivisibility * elementBytes) % 16 != 0) {
        op->emitOpError() << "needs a count of whole 16-byte units for cp.async.bulk (a multiple "
                             "of "
                          << 16 / elementBytes << " " << tile.getElementType()
                          << " elements), but it is only known to be a multiple of "
                          << countDivisibility
                          << " (give its kernel argument tile.divisibility = 16 or round it)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    };
    WalkResult misaligned = func.walk([&](Operation *op) {
      if (auto load = llvm::dyn_cast<tile::BulkLoadOp>(op))
        return check(op, load.getPtr(), load.getCount(), load.getType());
      if (auto issue = llvm::dyn_cast<tile::RingIssueOp>(op); issue && issue.isBulk())
        return check(op, issue.getSrc(), issue.getCount(),
                     issue.getRing().getType().getBlockType());
      return WalkResult::advance();
    });
    if (misaligned.wasInterrupted())
      return failure();
  }
  return success();
}

struct ConvertTileToNVVMPass : kiln::impl::ConvertTileToNVVMBase<ConvertTileToNVVMPass> {
  using ConvertTileToNVVMBase::ConvertTileToNVVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();

    if (!arch.empty()) {
      std::optional<Arch> target = Arch::get(arch); // an unknown arch has nothing
      WalkResult wrongArch = module.walk([&](Operation *op) {
        Arch::Capability needs = requiredCapability(op);
        if (!needs || (target && (*target.*needs)()))
          return WalkResult::advance();
        op->emitOpError() << "needs " << Arch::namesWith(needs) << ", not " << arch;
        return WalkResult::interrupt();
      });
      if (wrongArch.wasInterrupted())
        return signalPassFailure();
    }

    // The one layout of this module's kernels.
    std::optional<std::pair<int64_t, int64_t>> layout;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(tile::TileDialect::getKernelAttrName()))
        continue;
      auto threads =
          func->getAttrOfType<IntegerAttr>(tile::TileDialect::getThreadsPerBlockAttrName());
      auto elems = func->getAttrOfType<IntegerAttr>(tile::TileDialect::getElemsPerThreadAttrName());
      if (!threads || !elems) {
        func.emitError() << "kernel has no layout: run kiln-tile-assign-layout first";
        return signalPassFailure();
      }
      std::pair<int64_t, int64_t> current{threads.getInt(), elems.getInt()};
      if (layout && *layout != current) {
        func.emitError() << "all kernels of a module must share one layout; this one has "
                         << current.first << " threads x " << current.second
                         << " elements, an earlier one " << layout->first << " x "
                         << layout->second;
        return signalPassFailure();
      }
      layout = current;
    }
    if (!layout)
      layout = {128, 1};

    // Checked up front: a pattern that fails lets arith's own constant
    // lowering build an invalid llvm.mlir.constant of a struct instead.
    WalkResult nonSplat = module.walk([](arith::ConstantOp op) {
      if (llvm::isa<RankedTensorType>(op.getType()) &&
          !llvm::isa<SplatElementsAttr>(op.getValue())) {
        op.emitOpError() << "only splat constants are supported on tiles";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nonSplat.wasInterrupted())
      return signalPassFailure();

    if (failed(checkBulkLoadAlignment(module)))
      return signalPassFailure();

    // setmaxnreg works on whole warpgroups: the consumers must be some.
    // The split's register counts assume one program an SM with the
    // registers its threads allow: no cap of the kernel's own.
    WalkResult badSplit = module.walk([&](tile::WarpSpecializeOp op) {
      if (layout->first % 128 != 0 || layout->first + kProducerThreads > 1024) {
        op.emitOpError() << "expected whole warpgroups of consumers (num_warps a multiple of 4, "
                            "at most 28), got "
                         << layout->first / 32 << " warps";
        return WalkResult::interrupt();
      }
      auto func = op->getParentOfType<func::FuncOp>();
      auto programs =
          func->getAttrOfType<IntegerAttr>(tile::TileDialect::getMinProgramsPerSMAttrName());
      if (func->hasAttr(tile::TileDialect::getMaxnregAttrName()) ||
          (programs && programs.getInt() > 1)) {
        op.emitOpError() << "expected no maxnreg and no min_programs_per_sm above 1 on a "
                            "warp-specialized kernel: setmaxnreg sets each warpgroup's registers "
                            "from all that one program's threads may hold";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (badSplit.wasInterrupted())
      return signalPassFailure();

    TileTypeConverter converter(context, layout->first, layout->second);
    converter.setWaitBound(waitBound);
    if (failed(checkRegisterFootprint(module, converter)))
      return signalPassFailure();
    // kiln-tile-accelerate-dot gives every tile.dot its tensor-core form.
    WalkResult dot = module.walk([&](tile::DotOp op) {
      op.emitOpError() << "expected kiln-tile-accelerate-dot to have rewritten it "
                          "(tile.warp_dot, tile.warpgroup_dot, tile.tcgen05_dot)";
      return WalkResult::interrupt();
    });
    if (dot.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(context);
    populateTileToNVVMConversionPatterns(converter, patterns);

    LLVMConversionTarget target(*context);
    target.addLegalDialect<NVVM::NVVMDialect>();
    // scf.for/if/while (the kernel's loops and branches, and the scf.if of masked
    // accesses) stay scf ops over converted types; convert-scf-to-cf takes them.
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns, target);
    target.addIllegalDialect<tile::TileDialect, arith::ArithDialect, math::MathDialect,
                             func::FuncDialect>();
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    replaceConsumerBarriers(module);
    recordKernelFacts(module);
  }
};
} // namespace
