"""kiln.ops: the kernel libraries kiln ships, by model family, under kiln's name.

``kiln.ops.kimi_k3`` is the Kimi K3 library, ``kernels_dsl.kimi_k3`` (the one source; the
wheel installs ``kernels_dsl`` beside ``kiln``)::

    import kiln.ops.kimi_k3 as k3
    from kiln.ops.kimi_k3 import situ

Each ``kiln.ops.<name>`` is the module ``kernels_dsl.<name>`` itself, not a copy: the two
names give the same module objects, so a kernel is defined (and JIT-compiled) once whichever
name imported it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Optional, Sequence

#: The package whose modules kiln.ops names.
LIBRARY = "kernels_dsl"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``kiln.ops.X`` as the module ``kernels_dsl.X``. It sits first on
    ``sys.meta_path``: the path finder would otherwise load ``kiln.ops.kimi_k3.situ`` a
    second time from ``kernels_dsl.kimi_k3``'s ``__path__``."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if not fullname.startswith(__name__ + "."):
            return None
        real = LIBRARY + fullname[len(__name__):]
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name == real:
                return None
            raise
        spec = importlib.util.spec_from_loader(fullname, self,
                                               is_package=hasattr(module, "__path__"))
        spec.loader_state = (module, module.__spec__)  # type: ignore[union-attr]
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return spec.loader_state[0]

    def exec_module(self, module: ModuleType) -> None:
        # The import system has set the alias's spec on the module: give it back its own.
        module.__spec__ = module.__spec__.loader_state[1]  # type: ignore[union-attr]


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, _Alias())
