"""Framework integrations of kiln kernel libraries.

``import kiln.ops.kimi_k3`` registers the Kimi K3 kernels as torch custom ops
(``torch.ops.kiln.<name>``, docs/torch.md). This package itself imports nothing, so
``import kiln.ops`` works without torch; the submodules say what they need.
"""
