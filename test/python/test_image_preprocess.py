"""image_preprocess's launch on the CPU (docs/kernels/image.md): every kernel the bundle ships
is one the wrapper launches with the default settings, and ``settings=`` reaches the launch.
The numerics: test/python/test_interpreter_kernels.py (interpreter against numpy) and
test/gpu/test_image_preprocess.py. No GPU, no torch."""

import dataclasses
import math

import pytest

from kernels_dsl.kimi_k3 import image as mod

from launch_choices import record_launch_choices  # noqa: E402

_TYPESTR = {"uint8": "|u1", "bfloat16": "<V2"}


class FakeTensor:
    """Just enough of a CUDA tensor: __cuda_array_interface__, shape, stride(), dtype."""

    def __init__(self, shape, dtype="bfloat16"):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self.__cuda_array_interface__ = {"data": (0x7F0000000000, False),
                                         "typestr": _TYPESTR[dtype], "shape": self.shape,
                                         "version": 3}

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]


def preprocess(n, h, w, out_h, out_w, **kw):
    out = FakeTensor((n, (out_h // 14) * (out_w // 14), 588))
    mod.image_preprocess(FakeTensor((n, h, w, 3), "uint8"), out_h, out_w, out=out, **kw)


@pytest.fixture
def selected(monkeypatch):
    """The launches the wrapper selects (``select_launch``'s results); nothing runs."""
    return record_launch_choices(monkeypatch, mod)


def test_every_shipped_kernel_is_a_default_launch(selected):
    """Each AOT specialization is what some call with the default settings launches (the
    generic one that launch under its name, for any address)."""
    for shape in [(1, 1080, 1920, 448, 798), (8, 512, 512, 448, 448), (64, 224, 224, 224, 224)]:
        preprocess(*shape)
    launched = [(k, name, cx, warps, regs, cluster)
                for k, name, _, cx, warps, regs, cluster in selected]
    names = {"image_preprocess_columns", mod.GENERIC}
    assert {s.kernel_name for s in mod.AOT_SPECIALIZATIONS} == names
    for s in mod.AOT_SPECIALIZATIONS:
        assert (s.kernel, "image_preprocess_columns", dict(s.constexprs), s.num_warps,
                s.maxnreg, s.cluster) in launched, s.kernel_name


def test_settings_reach_the_launch(selected):
    settings = dataclasses.replace(mod.SETTINGS, xblock=64, rows=8, num_warps=2, maxnreg=168)
    preprocess(2, 480, 640, 448, 602, settings=settings)
    preprocess(2, 480, 640, 448, 602)
    (k, name, grid, cx, warps, regs, _), default = selected
    assert k is mod.image_preprocess_columns_kernel and name == "image_preprocess_columns"
    assert grid == (10, 32 * 2, 2) and cx == {"PATCH": 14, "XBLOCK": 64, "ROWS": 8}
    assert (warps, regs) == (2, 168)
    assert default[2] == (19, 32, 2)
    assert default[3:6] == ({"PATCH": 14, "XBLOCK": 32, "ROWS": 16}, 1, None)
