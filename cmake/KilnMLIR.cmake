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

# Shared build: link against libMLIR/libLLVM. Static build (KILN_STATIC_LLVM): link the
# individual static archives, with the `LLVM`/`MLIR` dylib names in their link interfaces
# replaced by LLVM's static components (mixing the two aborts with "Option registered more
# than once").
if(KILN_STATIC_LLVM)
  llvm_map_components_to_libnames(KILN_LLVM_STATIC_LIBS
    Core Support IRReader BitReader BitWriter Linker Passes Analysis TransformUtils
    ipo Target TargetParser MC NVPTXCodeGen NVPTXDesc NVPTXInfo AsmPrinter)
  foreach(lib IN LISTS MLIR_ALL_LIBS KILN_LLVM_STATIC_LIBS)
    if(TARGET ${lib})
      get_target_property(_iface ${lib} INTERFACE_LINK_LIBRARIES)
      if(_iface)
        list(TRANSFORM _iface REPLACE "^LLVM$" "${KILN_LLVM_STATIC_LIBS}")
        list(REMOVE_ITEM _iface MLIR)
        set_target_properties(${lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_iface}")
      endif()
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
  MLIRNVVMToLLVM MLIRUBToLLVM MLIRArithTransforms
  MLIRTargetLLVMIRExport MLIRLLVMToLLVMIRTranslation MLIRNVVMToLLVMIRTranslation
  MLIRBuiltinToLLVMIRTranslation)
if(KILN_STATIC_LLVM)
  set(KILN_MLIR_LIBS ${KILN_MLIR_COMPONENTS} ${KILN_LLVM_STATIC_LIBS})
else()
  set(KILN_MLIR_LIBS MLIR LLVM)
endif()
