//===- KernelFacts.cpp - what a lowered kernel uses, recorded on it --------===//
//
// Once the conversion is done, each kernel (llvm.func with nvvm.kernel)
// records on itself what its instructions use, read by the compiler for the
// kernel's metadata (the bundle manifest's `pdl` and `features`, the register
// pool check of a warp-specialized kernel) instead of IR or PTX text:
// - `tile.features`: the hardware features its ops use, sorted: NVVM ops by
//   kind (TMA copies, wgmma, tcgen05, mbarriers, elect.sync, griddepcontrol,
//   setmaxnreg), atomics at system scope, and inline PTX by the feature the
//   pattern that wrote it marked it with (`createInlinePTX`);
// - `tile.pdl` when it uses griddepcontrol (the launch's programmatic stream
//   serialization);
// - `tile.register_split` when it is warp-specialized: its consumer threads
//   and the registers of their setmaxnreg.inc and of the producers' .dec.
// The ops are those the later passes turn into instructions one for one
// (scf -> cf, NVVM -> LLVM and inline PTX, canonicalization removes no op with
// a side effect); a kernel calls nothing but libdevice, which uses none of
// these features.
//
// 16-byte loads and stores (the manifest's `vector16`) are not recorded: the
// width of an access is the NVPTX backend's choice (its load/store vectorizer
// joins narrower accesses, the legalizer splits misaligned ones), a fact of
// the PTX, read there.
//
//===----------------------------------------------------------------------===//

#include "ConversionSteps.h"
#include "PatternUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
/// An atomic without a syncscope acts at system scope (`.sys`).
bool isSystemScope(std::optional<StringRef> syncscope) { return !syncscope || syncscope->empty(); }

/// The feature `op` uses (one of TileDialect::getKernelFeatures()), or "".
StringRef getFeature(Operation *op) {
  if (auto mark = op->getAttrOfType<StringAttr>(kFeatureMark))
    return mark.getValue();
  if (llvm::isa<NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp,
                NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp, NVVM::CpAsyncBulkTensorPrefetchOp,
                NVVM::CpAsyncBulkTensorReduceOp>(op))
    return "tma";
  if (llvm::isa<NVVM::ElectSyncOp>(op))
    return "elect";
  if (llvm::isa<NVVM::GriddepcontrolOp>(op))
    return "pdl";
  if (llvm::isa<NVVM::SetMaxRegisterOp>(op))
    return "setmaxnreg";
  if (auto cas = llvm::dyn_cast<LLVM::AtomicCmpXchgOp>(op))
    return isSystemScope(cas.getSyncscope()) ? "sys_atomics" : "";
  if (auto rmw = llvm::dyn_cast<LLVM::AtomicRMWOp>(op))
    return isSystemScope(rmw.getSyncscope()) ? "sys_atomics" : "";
  // The op families, named like their instructions.
  StringRef name = op->getName().getStringRef();
  if (name.starts_with("nvvm.wgmma."))
    return "wgmma";
  if (name.starts_with("nvvm.tcgen05."))
    return "tcgen05";
  if (name.starts_with("nvvm.mbarrier."))
    return "mbarrier";
  return "";
}
} // namespace

void kiln::recordKernelFacts(ModuleOp module) {
  MLIRContext *context = module.getContext();
  for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
    SmallVector<StringRef> features;
    std::optional<int32_t> consumerRegisters, producerRegisters;
    func.walk([&](Operation *op) {
      StringRef feature = getFeature(op);
      if (!feature.empty() && !llvm::is_contained(features, feature))
        features.push_back(feature);
      op->removeAttr(kFeatureMark);
      if (auto setMaxRegisters = llvm::dyn_cast<NVVM::SetMaxRegisterOp>(op)) {
        bool increase = setMaxRegisters.getAction() == NVVM::SetMaxRegisterAction::increase;
        (increase ? consumerRegisters : producerRegisters) = setMaxRegisters.getRegCount();
      }
    });
    if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
      continue;
    if (!features.empty()) {
      llvm::sort(features);
      func->setAttr(tile::TileDialect::getFeaturesAttrName(),
                    ArrayAttr::get(context, llvm::map_to_vector(features, [&](StringRef f) {
                                     return Attribute(StringAttr::get(context, f));
                                   })));
    }
    if (llvm::is_contained(features, "pdl"))
      func->setAttr(tile::TileDialect::getPdlAttrName(), UnitAttr::get(context));
    // The producer warpgroup runs after the consumers (KernelFuncLowering).
    auto threads = func->getAttrOfType<DenseI32ArrayAttr>(NVVM::NVVMDialect::getReqntidAttrName());
    if (consumerRegisters && producerRegisters && threads && !threads.empty())
      func->setAttr(tile::TileDialect::getRegisterSplitAttrName(),
                    DenseI32ArrayAttr::get(context, {int32_t(threads[0] - kProducerThreads),
                                                     *consumerRegisters, *producerRegisters}));
  }
}
