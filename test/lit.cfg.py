# lit configuration for kiln: dialect, lowering and per-arch PTX tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Unit", "python", "gpu"]

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
config.environment["CUDA_HOME"] = config.cuda_home
# As in MLIR's lit.cfg.py: a FileCheck variable does not outlive a CHECK-LABEL (a `$` name is
# global), so one function's check cannot pass on a value captured from the one before.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
for tool_dir in (config.kiln_tools_dir, config.llvm_tools_dir):
    llvm_config.with_environment("PATH", tool_dir, append_path=True)
config.substitutions.append(("%ptxas", os.path.join(config.cuda_home, "bin", "ptxas")))
llvm_config.add_tool_substitutions(["kiln-opt", "kilnc", "FileCheck", "not"],
                                   [config.kiln_tools_dir, config.llvm_tools_dir])
