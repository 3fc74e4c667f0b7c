//===- CompilerModule.cpp - kiln._C: the compiler's Python binding -------===//
//
// The IR builder (IRBuilder.cpp) plus the named compile stages that follow
// it: tile -> LLVM/NVVM dialects, LLVM IR, PTX and cubin. Each stage releases
// the GIL, so that the AOT driver can compile kernels in parallel threads, and
// reports failures as kiln._C.MLIRError with the diagnostics' text.
//
//===----------------------------------------------------------------------===//

#include "IRBuilder.h"

#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Target/PTX.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tuple>

namespace py = pybind11;
using namespace kiln::python;

#ifndef KILN_COMPILER_VERSION
#define KILN_COMPILER_VERSION "0.1.0"
#endif

namespace {

/// Turns an llvm::Error into MLIRError, with whatever diagnostics were seen.
template <typename T>
T unwrap(llvm::Expected<T> value, const DiagnosticCapture &capture, const std::string &what) {
  if (!value) {
    std::string message = llvm::toString(value.takeError());
    if (!capture.text().empty())
      message += "\n" + capture.text();
    throw MLIRError(what + ": " + message);
  }
  capture.check(what);
  return std::move(*value);
}

/// Returns the diagnostics of a successful lowering (its warnings and their
/// notes), as MLIRError carries those of a failed one.
std::string runTileToLLVM(Module &module, int numWarps, const std::string &arch, uint64_t waitBound,
                          bool splitN) {
  py::gil_scoped_release release;
  DiagnosticCapture capture(module.getContext());
  mlir::PassManager pm(&module.getContext());
  kiln::TileToLLVMOptions options;
  options.numWarps = numWarps;
  options.arch = arch;
  options.waitBound = waitBound;
  options.splitN = splitN;
  kiln::buildTileToLLVMPipeline(pm, options);
  bool failed = mlir::failed(pm.run(module.get()));
  capture.check("lowering to the LLVM dialect failed", failed);
  return capture.text();
}

std::string translateToLLVMIR(Module &module, const std::string &arch) {
  py::gil_scoped_release release;
  DiagnosticCapture capture(module.getContext());
  llvm::LLVMContext context;
  auto llvmModule = unwrap(kiln::translateToLLVMIR(module.get(), arch, context), capture,
                           "translation to LLVM IR failed");
  std::string text;
  llvm::raw_string_ostream os(text);
  llvmModule->print(os, nullptr);
  return text;
}

/// PTX for `arch`; with `withLLVMIR` returns (llvm_ir, ptx) from one
/// translation, so that a caller dumping both does not translate twice.
py::object translateToPTX(Module &module, const std::string &arch, bool withLLVMIR) {
  std::string ir, ptx;
  {
    py::gil_scoped_release release;
    DiagnosticCapture capture(module.getContext());
    llvm::LLVMContext context;
    auto llvmModule = unwrap(kiln::translateToLLVMIR(module.get(), arch, context), capture,
                             "translation to LLVM IR failed");
    if (withLLVMIR) {
      llvm::raw_string_ostream os(ir);
      llvmModule->print(os, nullptr);
    }
    ptx = unwrap(kiln::emitPTX(*llvmModule, arch), capture, "PTX emission failed");
  }
  if (withLLVMIR)
    return py::make_tuple(ir, ptx);
  return py::str(ptx);
}

py::tuple compilePTX(const std::string &ptx, const std::string &arch) {
  std::string cubin;
  kiln::CubinInfo info;
  {
    py::gil_scoped_release release;
    auto result = kiln::compilePTXToCubin(ptx, arch, &info);
    if (!result)
      throw MLIRError("cubin compilation failed: " + llvm::toString(result.takeError()));
    cubin = std::move(*result);
  }
  return py::make_tuple(py::bytes(cubin), info.tool, info.log);
}

} // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "kiln compiler: tile-dialect IR builder and compile stages";
  populateIRBuilder(m);

  m.def("run_tile_to_llvm", &runTileToLLVM, py::arg("module"), py::arg("num_warps") = 4,
        py::arg("arch") = "", py::arg("wait_bound") = 0,
        py::arg("split_n") = kiln::TileToLLVMOptions().splitN,
        "Lowers a tile module in place to the LLVM and NVVM dialects (kiln-tile-to-llvm); "
        "`arch` enables its instructions (wgmma on sm_90a, tcgen05 on sm_100a/sm_103a); "
        "`wait_bound` > 0 makes every mbarrier wait report a hang and trap after that many "
        "tries (debug); `split_n`: kiln-tile-accelerate-dot's split-n. Returns the text of its "
        "warnings, with their notes ('' when none).");
  m.def("translate_to_llvm_ir", &translateToLLVMIR, py::arg("module"), py::arg("arch"),
        "LLVM IR text (optimized, libdevice linked) of a module in the LLVM dialect.");
  m.def("translate_to_ptx", &translateToPTX, py::arg("module"), py::arg("arch"),
        py::arg("with_llvm_ir") = false,
        "PTX of a module in the LLVM dialect; (llvm_ir, ptx) with with_llvm_ir=True.");
  m.def("compile_ptx", &compilePTX, py::arg("ptx"), py::arg("arch"),
        "Assembles PTX into a cubin: (cubin bytes, tool, info log).");
  m.def("supported_archs", [] {
    std::vector<std::string> archs;
    for (llvm::StringRef a : kiln::getSupportedArchs())
      archs.push_back(a.str());
    return archs;
  });
  m.def("version", [] {
    return std::string("kiln ") + KILN_COMPILER_VERSION + " (LLVM " LLVM_VERSION_STRING ")";
  });
  m.def(
      "toolchain",
      [] {
        kiln::AssemblerInfo assembler;
        {
          py::gil_scoped_release release;
          assembler = kiln::getAssemblerInfo();
        }
        py::dict d;
        d["llvm"] = LLVM_VERSION_STRING;
        d["ptx_isa"] = kiln::getPTXISAVersion().str();
        d["nvjitlink"] = assembler.nvJitLinkVersion;
        d["nvjitlink_error"] = assembler.nvJitLinkError;
        d["ptxas"] = assembler.ptxas;
        d["cuda_home"] = kiln::getCudaHome();
        d["libdevice"] = kiln::getLibdevicePath();
        return d;
      },
      "What the compiler was built with and uses on this machine: the LLVM version, the PTX "
      "ISA it emits, nvJitLink's version ('' when it does not load, nvjitlink_error saying "
      "why), the ptxas executable ('' when none), CUDA_HOME and the libdevice path it reads.");
}
