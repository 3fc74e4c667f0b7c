//===- PatternUtils.h - shared code of the tile -> NVVM patterns -*- C++ -*-===//

#ifndef KILN_LIB_TILETONVVM_PATTERNUTILS_H
#define KILN_LIB_TILETONVVM_PATTERNUTILS_H

#include "kiln/Conversion/TileToNVVM.h"
#include "kiln/Dialect/Tile/IR/TileOps.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kiln {

/// The elements a thread holds: one value, or the members of the struct.
llvm::SmallVector<mlir::Value> unpackTile(mlir::OpBuilder &b, mlir::Location loc,
                                          mlir::Value value);
/// The struct of `values` (or the single value when `type` is not a struct).
mlir::Value packTile(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                     mlir::ValueRange values);

mlir::Value createI32Constant(mlir::OpBuilder &b, mlir::Location loc, int64_t value);
/// A side-effecting inline-PTX statement (`asm volatile`; a pure one when
/// `sideEffects` is false); returns its result, or a null Value when `result`
/// is null. `feature`: the kernel feature its instructions use, if any (one of
/// TileDialect::getKernelFeatures(), see markFeature).
mlir::Value createInlinePTX(mlir::OpBuilder &b, mlir::Location loc, mlir::Type result,
                            mlir::ValueRange operands, llvm::StringRef ptx,
                            llvm::StringRef constraints, bool sideEffects = true,
                            llvm::StringRef feature = {});
/// Marks `op`, whose kind does not tell it (inline PTX), with the kernel
/// feature it uses (the attribute kFeatureMark), for recordKernelFacts.
void markFeature(mlir::Operation *op, llvm::StringRef feature);
/// The attribute of markFeature: on an op whose kind does not tell what it
/// uses, the name of the feature, until recordKernelFacts collects it.
constexpr llvm::StringLiteral kFeatureMark = "kiln.feature";
/// The body of a single-block `combine` region (reduce, scan) cloned on `lhs`
/// and `rhs`; returns the value its terminator yields.
mlir::Value inlineCombine(mlir::OpBuilder &b, mlir::Region &combine, mlir::Value lhs,
                          mlir::Value rhs);
/// The same for a region of 2N arguments (tile.reduce of N sources): `lhs` and
/// `rhs` are the N accumulated and the N new values; returns the N yielded.
llvm::SmallVector<mlir::Value> inlineCombine(mlir::OpBuilder &b, mlir::Region &combine,
                                             mlir::ValueRange lhs, mlir::ValueRange rhs);
/// The bits of a row-major element index that hold the coordinate along `axis`
/// of a tile of power-of-two dimensions: [lo, hi).
std::pair<int64_t, int64_t> axisElementBits(mlir::RankedTensorType type, int64_t axis);
/// `%tid.x`.
mlir::Value createThreadId(mlir::OpBuilder &b, mlir::Location loc);

/// The i1 "this thread issues": one lane of warp 0 chosen by `elect.sync`
/// (TMA copies, tcgen05.mma and its commit).
mlir::Value createIssuer(mlir::OpBuilder &b, mlir::Location loc);

/// `shfl.sync.<kind>` over the full warp (member mask -1) of a scalar of up to
/// 64 bits (two 32-bit shuffles for 64; narrower values travel zero-extended).
/// `laneArg` is the lane mask (bfly), the offset (up, down) or the source lane
/// (idx); `clamp` is PTX's `c` operand: 0 for up, 31 for the others.
mlir::Value createShuffle(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                          mlir::Value laneArg, mlir::NVVM::ShflKind kind, int64_t clamp);
mlir::Value createShuffle(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                          int64_t laneArg, mlir::NVVM::ShflKind kind, int64_t clamp);

/// For each register of a thread, the row-major index of the element it holds:
/// `base + offsets[r]` with `base` depending on the thread only.
struct ElementIndices {
  mlir::Value base;
  llvm::SmallVector<int64_t> offsets;
};
ElementIndices getElementIndices(mlir::OpBuilder &b, mlir::Location loc,
                                 const tile::BlockedLayout &layout);
/// The same for a tile of `type` in any layout (blocked or `#tile.mma`).
ElementIndices getElementIndices(mlir::OpBuilder &b, mlir::Location loc,
                                 const TileTypeConverter &converter, mlir::RankedTensorType type);
/// Registers of `indices` that one access may move together: runs of
/// consecutive elements of a row, at most 16 bytes of `element`.
int64_t getAccessWidth(const TileTypeConverter &converter, mlir::RankedTensorType type);

/// The elements a memory access of `op` moves at once: its `vec` attribute
/// (kiln-tile-vectorize-access), 1 without one.
int64_t getRequestedVec(mlir::Operation *op);

/// The i1 "this thread holds the first copy of its elements" (true where the
/// layout is not replicated).
mlir::Value createIsOwner(mlir::OpBuilder &b, mlir::Location loc,
                          const tile::BlockedLayout &layout);

/// The position of line `index` (of `count`) in a shared array of per-line
/// values that many threads write and read at once (the cross-warp buffers of
/// tile.reduce and tile.scan): the low `runBits` bits, a thread's run of
/// consecutive lines, rotated to the top, so that the lanes, which hold lines
/// `vec` apart, touch consecutive words (no bank conflicts) rather than words
/// `vec` (or, with warps innermost, `vec * warps`) apart. `index` itself where
/// `count` is not a power of two or holds no more than one run.
mlir::Value createLineSwizzle(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index,
                              int64_t runBits, int64_t count);

/// A fresh module-level shared-memory array (`<prefix>_<n>`) of `count`
/// elements of `element`, `alignment`-byte aligned; returns its address (`!llvm.ptr<3>`).
/// A `scratch` buffer (`tile.scratch`) is one the caller writes, reads and
/// is done with before a CTA barrier it emits after its last use.
mlir::Value createSharedBuffer(mlir::OpBuilder &b, mlir::Operation *user, llvm::StringRef prefix,
                               mlir::Type element, int64_t count, unsigned alignment = 16,
                               bool scratch = false);

/// Marks the shared buffer whose address is `address` (a createSharedBuffer
/// result) `tile.drained`: its asynchronous accesses are complete at the
/// first CTA barrier after the last use of its address, so
/// kiln-allocate-shared-memory may reuse its bytes from there.
void markDrained(mlir::Operation *op, mlir::Value address);

/// How `vec` consecutive elements of `element` move in one access: as one
/// integer or a vector of i32 words (16 bytes = ld/st.v4.b32).
struct VectorAccess {
  int64_t vec;
  mlir::Type element;    ///< converted element type
  mlir::Type accessType; ///< the type of the llvm.load / llvm.store
  mlir::Type valueType;  ///< vector<vec x element>, or element when vec == 1
  unsigned alignment;

  VectorAccess(mlir::MLIRContext *context, mlir::Type element, int64_t requested);
  /// Loaded bits -> the elements.
  llvm::SmallVector<mlir::Value> split(mlir::OpBuilder &b, mlir::Location loc,
                                       mlir::Value loaded) const;
  /// The elements -> bits to store (or to yield in place of a masked load).
  mlir::Value join(mlir::OpBuilder &b, mlir::Location loc,
                   llvm::ArrayRef<mlir::Value> elements) const;
};

/// For per-register operand lists `operands[i][r]`: the result of the first
/// earlier register whose operands are all the same values as register `r`'s
/// (`results[r']`), or null. Lets a pattern compute a value once per thread
/// where it is constant along a run.
mlir::Value findEarlierRegister(llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands, int64_t r,
                                llvm::ArrayRef<mlir::Value> results);

/// For each of `toRegs` registers of a layout: the register among `fromRegs`
/// of another layout that holds the same element in every one of `threads`
/// threads, or nullopt when some register has no such source (the values must
/// then move between threads). `toElement(thread, reg)` is the element a
/// register of the target holds, given as an index of the source's elements;
/// `fromElement(thread, reg)` the element a source register holds. Decided at
/// compile time by visiting every thread.
std::optional<llvm::SmallVector<int64_t>> findRegisterSources(
    int64_t threads, int64_t toRegs, llvm::function_ref<int64_t(int64_t, int64_t)> toElement,
    llvm::ArrayRef<int64_t> fromRegs, llvm::function_ref<int64_t(int64_t, int64_t)> fromElement);

/// `src` (a tile of `srcType`, converted) as a tile of `dstType` built from
/// its registers, where every thread holds the elements its registers of
/// `dstType` need: register r of thread t takes the source element
/// `sourceIndex(element)` of its element. Null where values must move between
/// threads.
mlir::Value copyRegisters(mlir::OpBuilder &b, mlir::Location loc,
                          const TileTypeConverter &converter, mlir::Value src,
                          mlir::RankedTensorType srcType, mlir::RankedTensorType dstType,
                          llvm::function_ref<int64_t(int64_t)> sourceIndex);

/// Calls `access(vector, r, ptr)` for each access to a row-major shared
/// buffer `buffer` of `element`s holding a tile of `type` (any layout) whose
/// rows are `pad` elements longer than the tile's: registers r .. r +
/// vector.vec - 1 of a thread at `ptr`.
void forEachPaddedAccess(
    mlir::OpBuilder &b, mlir::Location loc, const TileTypeConverter &converter,
    mlir::RankedTensorType type, mlir::Value buffer, mlir::Type element, int64_t pad,
    llvm::function_ref<void(const VectorAccess &, int64_t, mlir::Value)> access);
/// Stores a thread's registers `regs` of a tile of `type` there.
void storePadded(mlir::OpBuilder &b, mlir::Location loc, const TileTypeConverter &converter,
                 mlir::RankedTensorType type, mlir::Value buffer, mlir::Type element, int64_t pad,
                 llvm::ArrayRef<mlir::Value> regs);

/// The .b32 words of a register A operand of mma.sync or wgmma (a tile in the
/// accumulator's `#tile.mma` encoding): the accumulator fragment's register
/// order is the A fragment's, each pair of registers one word, the first in
/// the low half; four words a k16 step.
llvm::SmallVector<mlir::Value> packRegisterA(mlir::OpBuilder &b, mlir::Location loc,
                                             mlir::Type element, llvm::ArrayRef<mlir::Value> regs);

/// The address of element `index` (i32, row-major) of the box of `rows`
/// rows of `element`s at `buffer` (shared memory) with a swizzle of S bytes
/// (0: row-major, the element itself). A box written by TMA has the 16-byte
/// unit c of byte offset o at unit c ^ ((o / 128) mod (S / 16)) (the buffer
/// 1024-byte aligned). A wide box (rows of W = `chunks` * 128 bytes, the
/// 128-byte swizzle) is stored in 128-byte column chunks: byte b of row r at
/// (b / 128) * `rows` * 128 + r * 128 + b mod 128, then swizzled as above.
/// TMA boxes, the swizzled gather rings and the mma.sync dots that read them
/// in place share this one layout.
mlir::Value boxElementAddress(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer,
                              mlir::Type element, mlir::Value index, int64_t chunks, int64_t rows,
                              unsigned swizzle);

/// The address (`!llvm.ptr<3>`) of slot `slot` (i32) of the ring at `base`.
mlir::Value ringSlotAddress(mlir::OpBuilder &b, mlir::Location loc, tile::RingType ring,
                            mlir::Value base, mlir::Value slot);

/// The mbarrier `index` (i32) of the array of 8-byte mbarriers at `base`
/// (`!llvm.ptr<3>`).
mlir::Value mbarrierAddress(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                            mlir::Value index);

/// An mbarrier of one op (a TMA load, a staged tcgen05 dot) and the address
/// of each thread's phase parity.
struct PhasedBarrier {
  mlir::Value address; ///< !llvm.ptr<3>
  mlir::Value phase;   ///< !llvm.ptr to an i32 (0 or 1)
};

/// Creates the barrier of `op` (a shared buffer `<prefix>_<n>`) and
/// initializes it at the start of the kernel: thread 0's mbarrier.init with
/// one arrival, fence.mbarrier_init, bar.sync; the phase parity in a
/// per-thread alloca (LLVM promotes it to a register) starting at 0.
PhasedBarrier createPhasedBarrier(mlir::OpBuilder &b, mlir::Operation *op, llvm::StringRef prefix);

/// Waits until the mbarrier at `barrier` (!llvm.ptr<3>) completes the phase of
/// parity `parity` (i32, 0 or 1). With a wait bound (`converter`'s
/// `wait-bound` debug option) the wait is a loop of try_waits that, after that
/// many, prints the hang and traps.
void waitParity(mlir::OpBuilder &b, mlir::Location loc, mlir::Value barrier, mlir::Value parity,
                const TileTypeConverter &converter);

/// Waits until the barrier completes the phase of parity `*phase`, then flips it.
void waitAndFlipPhase(mlir::OpBuilder &b, mlir::Location loc, const PhasedBarrier &barrier,
                      const TileTypeConverter &converter);

/// Stores the registers of a [rows, cols] 16-bit tile (cols a multiple of
/// 64) to `buffer` (1024-byte aligned) in 64-column chunks of `rows` rows of
/// 128 bytes, the 16-byte unit u of row r at unit u ^ (r mod 8): the
/// layout a TMA box of 128-byte rows has with the 128-byte swizzle, which
/// wgmma and tcgen05.mma read (K-major for an [M, K] tile, MN-major for a
/// [K, N] one).
void storeSwizzled128(mlir::OpBuilder &b, mlir::Location loc, const TileTypeConverter &converter,
                      mlir::RankedTensorType type, mlir::Value buffer,
                      llvm::ArrayRef<mlir::Value> regs);

/// After the stores of MMA operands to shared memory: visible to the async
/// proxy (`fence.proxy.async.shared::cta`), then to every warp (a CTA
/// barrier), so any warp's wgmma or tcgen05.mma may read them.
void publishToAsyncProxy(mlir::OpBuilder &b, mlir::Location loc);

/// tile.warp_specialize: the producer warpgroup's threads (the last 4 warps)
/// and the registers each keeps (setmaxnreg.dec), and the most a consumer
/// thread takes (setmaxnreg.inc).
constexpr int64_t kProducerThreads = 128;
constexpr int64_t kProducerRegisters = 40;
constexpr int64_t kMaxConsumerRegisters = 240;
/// The registers of a consumer thread (setmaxnreg.inc) beside the producer's:
/// what fits the pool the program starts with (its threads x the registers
/// each may hold), a multiple of 8, at most 240.
int64_t getConsumerRegisters(int64_t consumerThreads);
/// Set by kiln-defer-cluster-waits on a cluster exchange whose trailing wait
/// it moved: the exchange's lowering emits the arrive alone.
constexpr llvm::StringLiteral kClusterWaitDeferredAttr = "kiln.cluster_wait_deferred";

/// Base of the patterns that need the layout.
template <typename SourceOp>
class TileOpConversion : public mlir::ConvertOpToLLVMPattern<SourceOp> {
public:
  TileOpConversion(TileTypeConverter &converter, mlir::PatternBenefit benefit = 1)
      : mlir::ConvertOpToLLVMPattern<SourceOp>(converter, benefit), tileConverter(converter) {}

protected:
  const TileTypeConverter &tileConverter;
};

/// Reads the x, y or z special register of an op with a `tile::ProgramAxis`
/// (%ctaid, %nctaid, %clusterid, %nclusterid, %cluster_ctaid).
template <typename SourceOp, typename XOp, typename YOp, typename ZOp>
struct AxisRegisterLowering : mlir::ConvertOpToLLVMPattern<SourceOp> {
  using mlir::ConvertOpToLLVMPattern<SourceOp>::ConvertOpToLLVMPattern;

  mlir::LogicalResult matchAndRewrite(SourceOp op, typename SourceOp::Adaptor adaptor,
                                      mlir::ConversionPatternRewriter &rewriter) const override {
    mlir::Type i32 = rewriter.getI32Type();
    mlir::Value value;
    switch (op.getAxis()) {
    case tile::ProgramAxis::X:
      value = XOp::create(rewriter, op.getLoc(), i32);
      break;
    case tile::ProgramAxis::Y:
      value = YOp::create(rewriter, op.getLoc(), i32);
      break;
    case tile::ProgramAxis::Z:
      value = ZOp::create(rewriter, op.getLoc(), i32);
      break;
    }
    rewriter.replaceOp(op, value);
    return mlir::success();
  }
};

} // namespace kiln

#endif // KILN_LIB_TILETONVVM_PATTERNUTILS_H
