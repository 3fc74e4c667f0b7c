"""Host side of TMA tensor descriptors.

A kernel parameter given a ``TensorDescriptor`` is typed ``tensordesc<dtype,box>``:
inside the kernel ``desc.load([i, j])`` reads the box whose first element is
``[i, j]`` and ``desc.store([i, j], tile)`` writes one, through the Tensor
Memory Accelerator (``cp.async.bulk.tensor``). The kernel is specialized on the
element type, the box and the swizzle only: the tensor's address, shape and
strides travel in the 128-byte ``CUtensorMap`` the runtime encodes at launch
(``cuTensorMapEncodeTiled``) and passes by value (``__grid_constant__``), so one
compiled kernel serves every tensor of that geometry. Elements outside the
tensor read as zero and are not written.

    desc = kiln.TensorDescriptor.from_tensor(x, block_shape=[64, 128])
    copy[(cdiv(M, 64), cdiv(N, 128))](desc, out_desc)
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from ..language.core import block_type, dtype_from_str, tensor_descriptor_type
from .tensors import ITEMSIZE, kiln_dtype_name, tensor_address, tensor_dtype

_SWIZZLES = (0, 32, 64, 128)
#: The element types TMA copies (not i1).
_TMA_DTYPES = frozenset(ITEMSIZE) - {"i1"}


def _dtype_of(base: Any) -> str:
    dt = tensor_dtype(base)
    if dt is None:  # numpy arrays (the interpreter)
        np_dtype = getattr(base, "dtype", None)
        dt = kiln_dtype_name(np_dtype) if np_dtype is not None else None
    if dt is None:
        raise TypeError(f"TensorDescriptor: expected a tensor (torch, CUDA array or numpy), "
                        f"got {type(base).__name__}")
    return dt


def _element_strides(base: Any, itemsize: int) -> List[int]:
    st = base.stride() if callable(getattr(base, "stride", None)) else None
    if st is not None:
        return [int(s) for s in st]
    strides = getattr(base, "strides", None)
    if strides is None:
        cai = getattr(base, "__cuda_array_interface__", None)
        strides = cai.get("strides") if cai else None
        if strides is None:  # C-contiguous
            out, acc = [], 1
            for n in reversed([int(s) for s in base.shape]):
                out.append(acc)
                acc *= n
            return out[::-1]
    if any(int(s) % itemsize for s in strides):
        raise ValueError(f"TensorDescriptor: byte strides {tuple(strides)} are not multiples "
                         f"of the element size {itemsize}")
    return [int(s) // itemsize for s in strides]


class TensorDescriptor:
    """A tiled TMA descriptor of ``base`` (kept alive by the descriptor).

    ``shape``/``strides`` (elements, outermost first) default to the tensor's;
    ``block_shape`` is the box one ``load``/``store`` moves (powers of two,
    each at most 256, the innermost spanning a multiple of 16 bytes);
    ``swizzle`` the shared-memory swizzle in bytes (0 for boxes read into
    registers; 32/64/128 for tensor-core operands). With ``swizzle=128`` the
    box's inner row may span a multiple of 128 bytes (a "wide" box, e.g. bf16
    ``[64, 128]``, with a multiple of 8 rows): the kernel copies it as one TMA
    box of 128-byte rows per 128-byte column chunk, so the encoded map's box is
    one chunk while the kernel's type keeps the whole box. The innermost dimension
    must be contiguous; the other strides multiples of 16 bytes, the address
    16-byte aligned (checked when encoded, before any launch).
    """

    def __init__(self, base: Any, block_shape: Sequence[int],
                 shape: Optional[Sequence[int]] = None, strides: Optional[Sequence[int]] = None,
                 swizzle: int = 0):
        self.base = base
        self.dtype = _dtype_of(base)
        if self.dtype not in _TMA_DTYPES:
            raise TypeError(f"TensorDescriptor: TMA does not copy {self.dtype} elements")
        self.itemsize = ITEMSIZE[self.dtype]
        self.shape = tuple(int(s) for s in (base.shape if shape is None else shape))
        self.strides = tuple(_element_strides(base, self.itemsize) if strides is None
                             else (int(s) for s in strides))
        self.block_shape = tuple(int(b) for b in block_shape)
        self.swizzle = int(swizzle)
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"TensorDescriptor: rank must be 1 to 5, got {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: shape {list(self.shape)}, strides "
                             f"{list(self.strides)} and block_shape {list(self.block_shape)} "
                             f"must have the same rank")
        if self.strides[-1] != 1 and self.shape[-1] > 1:
            raise ValueError(f"TensorDescriptor: the innermost dimension must be contiguous "
                             f"(stride 1), got strides {list(self.strides)}")
        for b in self.block_shape:
            if b < 1 or b > 256 or b & (b - 1):
                raise ValueError(f"TensorDescriptor: block_shape {list(self.block_shape)} must "
                                 f"be powers of two in [1, 256]")
        inner = self.block_shape[-1] * self.itemsize
        if inner % 16:
            raise ValueError(f"TensorDescriptor: the box's inner dimension spans {inner} bytes; "
                             f"TMA needs a multiple of 16")
        if self.swizzle not in _SWIZZLES:
            raise ValueError(f"TensorDescriptor: swizzle must be one of {_SWIZZLES}, got "
                             f"{self.swizzle}")
        rows = 1
        for b in self.block_shape[:-1]:
            rows *= b
        if self.swizzle == 128 and inner > 128:
            # A wide box (a power of two of bytes, so a multiple of 128): 128-byte column
            # chunks one after the other in shared memory, each starting on the swizzle's
            # 1024-byte period (the tile dialect's rule).
            if rows % 8:
                raise ValueError(f"TensorDescriptor: a box wider than the 128-byte swizzle "
                                 f"span needs a multiple of 8 rows, got {rows} "
                                 f"(block_shape {list(self.block_shape)})")
        elif self.swizzle and inner > self.swizzle:
            raise ValueError(f"TensorDescriptor: the box's inner dimension ({inner} bytes) "
                             f"exceeds the {self.swizzle}-byte swizzle span")
        self._encoded: Optional[bytes] = None
        self._signature: Optional[str] = None

    @classmethod
    def from_tensor(cls, tensor: Any, block_shape: Sequence[int], swizzle: int = 0
                    ) -> "TensorDescriptor":
        return cls(tensor, block_shape, swizzle=swizzle)

    @property
    def signature(self) -> str:
        """The kernel parameter type this descriptor specializes: ``tensordesc<bf16,64x128>``
        (the language's ``tensor_descriptor_type`` spelling)."""
        if self._signature is None:
            self._signature = tensor_descriptor_type(
                block_type(dtype_from_str(self.dtype), self.block_shape), self.swizzle).short
        return self._signature

    @property
    def address(self) -> int:
        return tensor_address(self.base)

    @property
    def encoded_box(self) -> Tuple[int, ...]:
        """The box the CUtensorMap holds (outermost first): the block shape, or for a
        wide box one 128-byte column chunk of it (the kernel issues one copy a chunk)."""
        if self.swizzle == 128 and self.block_shape[-1] * self.itemsize > 128:
            return self.block_shape[:-1] + (128 // self.itemsize,)
        return self.block_shape

    def encode(self) -> bytes:
        """The 128-byte CUtensorMap (cached; the tensor's address must not change)."""
        if self._encoded is None:
            from .. import _runtime  # noqa: PLC0415 - the runtime extension, optional here

            rank = len(self.shape)
            self._encoded = _runtime.encode_tensor_map(
                self.address, self.dtype, list(reversed(self.shape)),
                [self.strides[d] * self.itemsize for d in range(rank - 2, -1, -1)],
                list(reversed(self.encoded_box)), self.swizzle)
        return self._encoded

    def key(self) -> Tuple[str, Tuple[int, ...], int]:
        return self.dtype, self.block_shape, self.swizzle

    def __repr__(self) -> str:
        return (f"TensorDescriptor({self.dtype}{list(self.shape)} strides {list(self.strides)} "
                f"box {list(self.block_shape)}" + (f" swizzle {self.swizzle}" if self.swizzle
                                                   else "") + ")")
