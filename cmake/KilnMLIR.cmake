# Finds MLIR/LLVM 22 and sets up TableGen and include paths for the compiler.
find_package(MLIR REQUIRED CONFIG
  HINTS /usr/lib/llvm-22/lib/cmake/mlir)
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "kiln: needs MLIR/LLVM 22, found ${LLVM_PACKAGE_VERSION} (apt-get install libmlir-22-dev)")
endif()
message(STATUS "kiln: MLIR from ${MLIR_DIR}, LLVM ${LLVM_PACKAGE_VERSION}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
separate_arguments(KILN_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${KILN_LLVM_DEFINITIONS})
link_directories(${LLVM_BUILD_LIBRARY_DIR})

include_directories(
  ${PROJECT_SOURCE_DIR}/dialect/include ${PROJECT_BINARY_DIR}/dialect/include
  ${PROJECT_SOURCE_DIR}/lowering/include ${PROJECT_BINARY_DIR}/lowering/include)

# Shared build: link against libMLIR/libLLVM. Static build (KILN_STATIC_LLVM, the
# self-contained extension for the GPU machine): link the individual static archives. Debian's
# MLIR archives name the `LLVM`/`MLIR` dylibs in their link interfaces; mixing those with static
# NVPTX objects aborts at start ("Option ... registered more than once"), so the dylibs are
# dropped from every interface and replaced by the LLVM static components the compiler needs.
if(KILN_STATIC_LLVM)
  get_property(_kiln_mlir_libs GLOBAL PROPERTY MLIR_ALL_LIBS)
  foreach(lib IN LISTS _kiln_mlir_libs)
    if(TARGET ${lib})
      get_target_property(_iface ${lib} INTERFACE_LINK_LIBRARIES)
      if(_iface)
        list(REMOVE_ITEM _iface LLVM MLIR)
        set_target_properties(${lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_iface}")
      endif()
    endif()
  endforeach()
  llvm_map_components_to_libnames(KILN_LLVM_STATIC_LIBS
    Core Support Demangle BinaryFormat Remarks BitstreamReader IRReader AsmParser BitReader
    BitWriter Linker Passes Analysis TransformUtils ipo InstCombine ScalarOpts Vectorize
    Instrumentation ObjCARCOpts Coroutines CodeGen CodeGenTypes SelectionDAG AsmPrinter
    GlobalISel Target TargetParser MC MCParser Object ProfileData FrontendOpenMP
    FrontendOffloading FrontendAtomic NVPTXCodeGen NVPTXDesc NVPTXInfo)
  # LLVMSupport names libz3, which nothing here uses (it would be a dependency of the
  # extension on the GPU machine): drop it. zstd stays shared (Debian's libzstd.a is not PIC).
  foreach(lib IN LISTS KILN_LLVM_STATIC_LIBS)
    get_target_property(_iface ${lib} INTERFACE_LINK_LIBRARIES)
    if(_iface)
      list(FILTER _iface EXCLUDE REGEX "z3")
      set_target_properties(${lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_iface}")
    endif()
  endforeach()
endif()

# What the compiler links: the shared MLIR/LLVM libraries, or the static archives.
set(KILN_MLIR_COMPONENTS
  MLIRIR MLIRSupport MLIRParser MLIRPass MLIRTransforms MLIRTransformUtils
  MLIRArithDialect MLIRMathDialect MLIRSCFDialect MLIRFuncDialect MLIRControlFlowDialect
  MLIRLLVMDialect MLIRNVVMDialect MLIRUBDialect
  MLIRArithToLLVM MLIRMathToLLVM MLIRSCFToControlFlow MLIRControlFlowToLLVM MLIRFuncToLLVM
  MLIRLLVMCommonConversion MLIRReconcileUnrealizedCasts MLIRGPUToNVVMTransforms
  MLIRNVVMToLLVM MLIRUBToLLVM MLIRArithTransforms MLIRSCFTransforms
  MLIRTargetLLVMIRExport MLIRLLVMToLLVMIRTranslation MLIRNVVMToLLVMIRTranslation
  MLIRBuiltinToLLVMIRTranslation)
if(KILN_STATIC_LLVM)
  set(KILN_MLIR_LIBS ${KILN_MLIR_COMPONENTS} ${KILN_LLVM_STATIC_LIBS})
else()
  set(KILN_MLIR_LIBS MLIR LLVM)
endif()
