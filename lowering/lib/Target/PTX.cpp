//===- PTX.cpp - LLVM IR, PTX and cubin emission ----------------------------===//

#include "kiln/Target/PTX.h"

#include "kiln/Support/Arch.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <mutex>

using namespace llvm;

static constexpr StringLiteral kTriple = "nvptx64-nvidia-cuda";
/// PTX ISA 8.8: the oldest that covers sm_103a; CUDA 13 reads it.
static constexpr StringLiteral kPTXISA = "8.8";

/// The NVPTX target feature of kPTXISA ("+ptx88").
static std::string ptxFeatures() {
  std::string features = "+ptx";
  for (char c : kPTXISA)
    if (c != '.')
      features += c;
  return features;
}

StringRef kiln::getPTXISAVersion() { return kPTXISA; }

ArrayRef<StringRef> kiln::getSupportedArchs() { return Arch::names(); }

bool kiln::isSupportedArch(StringRef arch) { return Arch::get(arch).has_value(); }

std::string kiln::getCudaHome() {
  if (const char *env = std::getenv("CUDA_HOME"); env && *env)
    return env;
  return "/usr/local/cuda";
}

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), "kiln: " + message);
}

static Expected<std::unique_ptr<TargetMachine>> createTargetMachine(StringRef arch) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  if (!kiln::isSupportedArch(arch))
    return makeError("unsupported arch '" + arch + "' (supported: sm_90a, sm_100a, sm_103a)");
  Triple triple(kTriple);
  std::string message;
  const Target *target = TargetRegistry::lookupTarget(triple, message);
  if (!target)
    return makeError("NVPTX target unavailable: " + message);
  TargetOptions options;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, arch, ptxFeatures(), options, Reloc::PIC_, std::nullopt, CodeGenOptLevel::Aggressive));
  if (!tm)
    return makeError("cannot create the NVPTX target machine for " + arch);
  return tm;
}

std::string kiln::getLibdevicePath() {
  if (const char *env = std::getenv("KILN_LIBDEVICE"); env && *env)
    return env;
  SmallString<256> path(kiln::getCudaHome());
  sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  return std::string(path);
}

static Error linkLibdevice(Module &module) {
  bool needed = llvm::any_of(module.functions(), [](Function &f) {
    return f.isDeclaration() && f.getName().starts_with("__nv_");
  });
  if (!needed)
    return Error::success();
  std::string path = kiln::getLibdevicePath();
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read libdevice, the CUDA toolkit's math library, at '" + path +
                     "' (" + buffer.getError().message() +
                     "): install the CUDA 13 toolkit, or set CUDA_HOME to its root or "
                     "KILN_LIBDEVICE to its nvvm/libdevice/libdevice.10.bc");
  auto libdevice = parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!libdevice)
    return makeError("cannot parse libdevice '" + path + "': " + toString(libdevice.takeError()));
  (*libdevice)->setTargetTriple(module.getTargetTriple());
  (*libdevice)->setDataLayout(module.getDataLayout());
  if (Linker::linkModules(module, std::move(*libdevice), Linker::LinkOnlyNeeded))
    return makeError("linking libdevice failed");
  // Only kernels stay visible; everything libdevice brought becomes internal
  // so that the optimizer can inline and drop it.
  for (Function &f : module.functions())
    if (!f.isDeclaration() && f.getCallingConv() != CallingConv::PTX_Kernel)
      f.setLinkage(GlobalValue::InternalLinkage);
  module.addModuleFlag(Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  return Error::success();
}

Expected<std::unique_ptr<Module>> kiln::translateToLLVMIR(mlir::ModuleOp module, StringRef arch,
                                                          LLVMContext &context) {
  auto tm = createTargetMachine(arch);
  if (!tm)
    return tm.takeError();
  std::unique_ptr<Module> llvmModule = mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return makeError("translation to LLVM IR failed (is the module fully in the LLVM/NVVM "
                     "dialects?)");
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  llvmModule->setDataLayout((*tm)->createDataLayout());
  if (Error err = linkLibdevice(*llvmModule))
    return std::move(err);

  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder pb(tm->get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  mpm.run(*llvmModule, mam);
  return llvmModule;
}

Expected<std::string> kiln::emitPTX(Module &module, StringRef arch) {
  auto tm = createTargetMachine(arch);
  if (!tm)
    return tm.takeError();
  module.setDataLayout((*tm)->createDataLayout());
  std::string ptx;
  {
    raw_string_ostream os(ptx);
    buffer_ostream pstream(os);
    legacy::PassManager pm;
    if ((*tm)->addPassesToEmitFile(pm, pstream, nullptr, CodeGenFileType::AssemblyFile))
      return makeError("the NVPTX backend cannot emit assembly");
    pm.run(module);
  }
  return ptx;
}

Expected<std::string> kiln::translateToPTX(mlir::ModuleOp module, StringRef arch) {
  LLVMContext context;
  auto llvmModule = translateToLLVMIR(module, arch, context);
  if (!llvmModule)
    return llvmModule.takeError();
  return emitPTX(**llvmModule, arch);
}

//===----------------------------------------------------------------------===//
// PTX -> cubin
//===----------------------------------------------------------------------===//

namespace {
/// nvJitLink, opened at run time so that the compiler works (through ptxas)
/// where it is missing.
struct NvJitLink {
  using Handle = void *;
  using Create = int (*)(Handle *, uint32_t, const char **);
  using Destroy = int (*)(Handle *);
  using AddData = int (*)(Handle, int, const void *, size_t, const char *);
  using Complete = int (*)(Handle);
  using GetSize = int (*)(Handle, size_t *);
  using GetBytes = int (*)(Handle, void *);
  using GetLog = int (*)(Handle, char *);
  using Version = int (*)(unsigned *, unsigned *);

  Create create = nullptr;
  Destroy destroy = nullptr;
  AddData addData = nullptr;
  Complete complete = nullptr;
  GetSize cubinSize = nullptr, errorLogSize = nullptr, infoLogSize = nullptr;
  GetBytes cubin = nullptr;
  GetLog errorLog = nullptr, infoLog = nullptr;
  Version version = nullptr; ///< nvJitLinkVersion (CUDA 12.3 and later)
  std::string loadError;

  static NvJitLink &get() {
    static NvJitLink instance;
    return instance;
  }
  bool available() const { return create != nullptr; }

private:
  NvJitLink() {
    std::string error;
    sys::DynamicLibrary lib;
    for (std::string name :
         {std::string("libnvJitLink.so.13"), kiln::getCudaHome() + "/lib64/libnvJitLink.so.13",
          kiln::getCudaHome() + "/lib64/libnvJitLink.so"}) {
      lib = sys::DynamicLibrary::getPermanentLibrary(name.c_str(), &error);
      if (lib.isValid())
        break;
    }
    if (!lib.isValid()) {
      loadError = error;
      return;
    }
    auto sym = [&](const char *name) { return lib.getAddressOfSymbol(name); };
    create = reinterpret_cast<Create>(sym("nvJitLinkCreate"));
    destroy = reinterpret_cast<Destroy>(sym("nvJitLinkDestroy"));
    addData = reinterpret_cast<AddData>(sym("nvJitLinkAddData"));
    complete = reinterpret_cast<Complete>(sym("nvJitLinkComplete"));
    cubinSize = reinterpret_cast<GetSize>(sym("nvJitLinkGetLinkedCubinSize"));
    cubin = reinterpret_cast<GetBytes>(sym("nvJitLinkGetLinkedCubin"));
    errorLogSize = reinterpret_cast<GetSize>(sym("nvJitLinkGetErrorLogSize"));
    errorLog = reinterpret_cast<GetLog>(sym("nvJitLinkGetErrorLog"));
    infoLogSize = reinterpret_cast<GetSize>(sym("nvJitLinkGetInfoLogSize"));
    infoLog = reinterpret_cast<GetLog>(sym("nvJitLinkGetInfoLog"));
    version = reinterpret_cast<Version>(sym("nvJitLinkVersion"));
    if (!create || !destroy || !addData || !complete || !cubinSize || !cubin || !errorLogSize ||
        !errorLog || !infoLogSize || !infoLog) {
      loadError = "libnvJitLink lacks an expected symbol";
      create = nullptr;
    }
  }
};
} // namespace

/// PTX input type of nvJitLinkAddData (NVJITLINK_INPUT_PTX).
static constexpr int kNvJitLinkInputPTX = 2;

static Expected<std::string> compileWithNvJitLink(StringRef ptx, StringRef arch,
                                                  kiln::CubinInfo *info) {
  NvJitLink &lib = NvJitLink::get();
  std::string archOption = ("-arch=" + arch).str();
  // -verbose: the info log carries ptxas's register/spill/stack report (bundle manifests).
  const char *options[] = {archOption.c_str(), "-O3", "-verbose"};
  NvJitLink::Handle handle = nullptr;
  if (int rc = lib.create(&handle, 3, options))
    return makeError("nvJitLinkCreate failed (" + Twine(rc) + ") for " + arch);
  auto readLog = [&](NvJitLink::GetSize size, NvJitLink::GetLog get) {
    size_t n = 0;
    if (size(handle, &n) || n == 0)
      return std::string();
    std::string log(n, '\0');
    get(handle, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    return log;
  };
  std::string input = ptx.str();
  int rc = lib.addData(handle, kNvJitLinkInputPTX, input.c_str(), input.size() + 1, "kernel.ptx");
  if (!rc)
    rc = lib.complete(handle);
  if (rc) {
    std::string log = readLog(lib.errorLogSize, lib.errorLog);
    lib.destroy(&handle);
    return makeError("nvJitLink failed (" + Twine(rc) + ") for " + arch + ":\n" + log);
  }
  size_t size = 0;
  lib.cubinSize(handle, &size);
  std::string cubin(size, '\0');
  lib.cubin(handle, cubin.data());
  if (info) {
    info->tool = "nvJitLink";
    info->log = readLog(lib.infoLogSize, lib.infoLog);
  }
  lib.destroy(&handle);
  return cubin;
}

/// $CUDA_HOME/bin/ptxas, else the ptxas on PATH; empty if neither exists.
static std::string findPtxas() {
  std::string ptxas = kiln::getCudaHome() + "/bin/ptxas";
  if (sys::fs::can_execute(ptxas))
    return ptxas;
  auto found = sys::findProgramByName("ptxas");
  return found ? *found : std::string();
}

static Expected<std::string> compileWithPtxas(StringRef ptx, StringRef arch,
                                              kiln::CubinInfo *info) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    return makeError("neither nvJitLink nor ptxas is available (looked for " +
                     kiln::getCudaHome() + "/bin/ptxas and on PATH); install CUDA 13 or set "
                     "CUDA_HOME");
  SmallString<128> ptxPath, cubinPath, logPath;
  if (auto ec = sys::fs::createTemporaryFile("kiln", "ptx", ptxPath))
    return makeError("cannot create a temporary file: " + ec.message());
  sys::fs::createTemporaryFile("kiln", "cubin", cubinPath);
  sys::fs::createTemporaryFile("kiln", "log", logPath);
  llvm::scope_exit cleanup([&] {
    sys::fs::remove(ptxPath);
    sys::fs::remove(cubinPath);
    sys::fs::remove(logPath);
  });
  {
    std::error_code ec;
    raw_fd_ostream os(ptxPath, ec);
    if (ec)
      return makeError("cannot write " + ptxPath + ": " + ec.message());
    os << ptx;
  }
  std::string archFlag = ("-arch=" + arch).str();
  SmallVector<StringRef> args = {ptxas, archFlag, "-O3", "-v", ptxPath, "-o", cubinPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath), StringRef(logPath)};
  std::string errMsg;
  int rc = sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &errMsg);
  auto log = MemoryBuffer::getFile(logPath);
  std::string logText = log ? (*log)->getBuffer().str() : "";
  if (rc != 0)
    return makeError("ptxas failed for " + arch + " (" + Twine(rc) + "): " + errMsg + "\n" +
                     logText);
  auto cubin = MemoryBuffer::getFile(cubinPath);
  if (!cubin)
    return makeError("ptxas produced no cubin for " + arch);
  if (info) {
    info->tool = "ptxas";
    info->log = logText;
  }
  return (*cubin)->getBuffer().str();
}

kiln::AssemblerInfo kiln::getAssemblerInfo() {
  AssemblerInfo out;
  NvJitLink &lib = NvJitLink::get();
  unsigned major = 0, minor = 0;
  if (!lib.available())
    out.nvJitLinkError = lib.loadError;
  else if (lib.version && lib.version(&major, &minor) == 0)
    out.nvJitLinkVersion = (Twine(major) + "." + Twine(minor)).str();
  else
    out.nvJitLinkVersion = "unknown (no nvJitLinkVersion)";
  out.ptxas = findPtxas();
  return out;
}

Expected<std::string> kiln::compilePTXToCubin(StringRef ptx, StringRef arch, CubinInfo *info) {
  if (!isSupportedArch(arch))
    return makeError("unsupported arch '" + arch + "' (supported: sm_90a, sm_100a, sm_103a)");
  const char *forcePtxas = std::getenv("KILN_USE_PTXAS");
  bool usePtxas = forcePtxas && StringRef(forcePtxas) == "1";
  // setmaxnreg moves registers between warpgroups through the CTA's pool,
  // which holds what the kernel starts with: ptxas, compiling a whole
  // program, starts such a kernel (.minnctapersm 1) with all the registers
  // its threads may hold (168 a thread for 384 threads); nvJitLink compiles
  // relocatable code and starts it with what its code needs (154 for the
  // GEMM), where a setmaxnreg.inc could wait forever. nvJitLink only where
  // ptxas is missing (kiln.compiler then checks the pool against the cubin's
  // count).
  if (!usePtxas && ptx.contains("setmaxnreg.")) {
    Expected<std::string> cubin = compileWithPtxas(ptx, arch, info);
    if (cubin || !NvJitLink::get().available())
      return cubin;
    consumeError(cubin.takeError());
  }
  if (!usePtxas && NvJitLink::get().available())
    return compileWithNvJitLink(ptx, arch, info);
  return compileWithPtxas(ptx, arch, info);
}
