"""Named compile stages and the specialization a kernel is compiled for.

    make_tile_ir          Python AST -> tile-dialect module (verified)
    lower_to_llvm_dialect tile -> LLVM/NVVM dialects (kiln-tile-to-llvm)
    make_llvm_ir          LLVM dialect -> LLVM IR text (per arch)
    make_ptx              LLVM dialect -> PTX (per arch)
    make_cubin            PTX -> cubin (nvJitLink, else ptxas)

``compile_kernel`` runs them in order (up to a requested stage) and returns a
``CompiledKernel`` with every stage's text, the cubin and the runtime
metadata. ``KILN_DUMP_IR=<dir>`` writes each stage's text there.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .._version import __version__
from ..host import check_constexpr, normalize_cluster, normalize_maxnreg, normalize_num_warps
from ..language import core as lc
from ..language.core import constexpr, tensor
from ..language.errors import CompilationError, CompilationWarning
from . import targetinfo
from .code_generator import CodeGenerator, FunctionSource
from .semantic import Semantic

STAGES = ("tile", "llvm_dialect", "llvm_ir", "ptx", "cubin")

_C_MODULE = None


def _C():
    """The compiler extension, imported on first use (``import kiln`` works without it)."""
    global _C_MODULE
    if _C_MODULE is None:
        from .. import _C as c  # noqa: PLC0415

        _C_MODULE = c
    return _C_MODULE


def compiler_available() -> bool:
    try:
        _C()
        return True
    except ImportError:
        return False


def compiler_version() -> str:
    try:
        native = _C().version()
    except ImportError:
        native = "no-native-compiler"
    return f"{__version__}/{native}/{_frontend_hash()}"


def toolchain() -> Optional[Dict[str, str]]:
    """What the compiler extension was built with and finds on this machine (``_C.toolchain``:
    llvm, ptx_isa, nvjitlink, nvjitlink_error, ptxas, cuda_home, libdevice), or None where the
    extension does not load (the runtime-only package)."""
    try:
        return dict(_C().toolchain())
    except ImportError:
        return None


_FRONTEND_HASH: Optional[str] = None


def _frontend_hash() -> str:
    """Hash of the frontend's own sources: a change to the compiler invalidates caches."""
    global _FRONTEND_HASH
    if _FRONTEND_HASH is None:
        h = hashlib.sha256()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for sub in ("compiler", "language"):
            d = os.path.join(root, sub)
            for name in sorted(os.listdir(d)):
                if name.endswith(".py"):
                    with open(os.path.join(d, name), "rb") as f:
                        h.update(name.encode() + b"\0" + f.read())
        _FRONTEND_HASH = h.hexdigest()[:16]
    return _FRONTEND_HASH


# ---------------------------------------------------------------------------
# Specialization
# ---------------------------------------------------------------------------

def _constexpr_repr(v: Any) -> Any:
    if isinstance(v, lc.dtype):
        return v.short
    return v


@dataclass(frozen=True)
class Specialization:
    """What one compiled image is specialized for.

    ``signature``: non-constexpr parameter -> type string (``"*bf16"``, ``"i32"``),
    in parameter order. ``divisibility``: parameter -> power of two its value
    (integers) or byte address (pointers) is known to be a multiple of.
    ``constexprs``: compile-time parameter values.
    """

    signature: Tuple[Tuple[str, str], ...]
    divisibility: Tuple[Tuple[str, int], ...]
    constexprs: Tuple[Tuple[str, Any], ...]
    num_warps: int = 4
    #: Integer parameters whose value is 1 (Triton's value-1 specialization): the
    #: kernel body sees the constant 1; the parameter stays in the ABI.
    equal_to_1: Tuple[str, ...] = ()
    #: Thread-block cluster shape the kernel is compiled and launched with.
    cluster: Tuple[int, int, int] = (1, 1, 1)
    #: Float add/sub/mul may contract into fma (``@kiln.jit(fp_fusion=True)``).
    fp_fusion: bool = False
    #: The most registers a thread may use (PTX ``.maxnreg``; ``@kiln.jit(maxnreg=N)``);
    #: None: ptxas decides.
    maxnreg: Optional[int] = None

    @classmethod
    def make(cls, signature: Mapping[str, str], divisibility: Union[Mapping[str, int],
             Iterable[str], None] = None, constexprs: Optional[Mapping[str, Any]] = None,
             num_warps: int = 4, equal_to_1: Iterable[str] = (),
             cluster: Any = None, fp_fusion: bool = False,
             maxnreg: Optional[int] = None) -> "Specialization":
        if divisibility is None:
            div: Dict[str, int] = {}
        elif isinstance(divisibility, Mapping):
            div = {k: int(v) for k, v in divisibility.items()}
        else:
            div = {k: 16 for k in divisibility}
        for k, v in div.items():
            if k not in signature:
                raise ValueError(f"divisibility names '{k}', which is not a parameter of the "
                                 f"signature ({', '.join(signature)})")
            if v < 1 or v & (v - 1):
                raise ValueError(f"divisibility of '{k}' must be a power of two, got {v}")
        constexprs = {k: check_constexpr(v, f"constexpr '{k}'")
                      for k, v in (constexprs or {}).items()}
        sig = tuple((k, str(v)) for k, v in signature.items())
        for k, v in sig:
            lc.dtype_from_str(v)  # validates
        ones = tuple(sorted(set(equal_to_1)))
        for k in ones:
            if k not in signature or not lc.dtype_from_str(signature[k]).is_int() or \
                    lc.dtype_from_str(signature[k]).is_bool():
                raise ValueError(f"equal_to_1 names '{k}', which is not an integer parameter "
                                 f"of the signature")
        return cls(sig, tuple((k, div.get(k, 1)) for k, _ in sig),
                   tuple(sorted(constexprs.items())), normalize_num_warps(num_warps), ones,
                   normalize_cluster(cluster), bool(fp_fusion), normalize_maxnreg(maxnreg))

    def key(self) -> str:
        sig = ",".join(f"{k}:{t}" + (f":{d}" if d > 1 else "")
                       for (k, t), (_, d) in zip(self.signature, self.divisibility))
        cst = ",".join(f"{k}={_constexpr_repr(v)!r}" for k, v in self.constexprs)
        ones = f"|equal_to_1={','.join(self.equal_to_1)}" if self.equal_to_1 else ""
        cluster = ("" if self.cluster == (1, 1, 1)
                   else "|cluster=" + "x".join(str(d) for d in self.cluster))
        fusion = "|fp_fusion" if self.fp_fusion else ""
        regs = "" if self.maxnreg is None else f"|maxnreg={self.maxnreg}"
        return f"{sig}|{cst}|num_warps={self.num_warps}{ones}{cluster}{fusion}{regs}"


def signature_hash(source_hash: str, spec: Specialization, arch: str) -> str:
    h = hashlib.sha256()
    for part in (source_hash, spec.key(), arch, compiler_version()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------
# Compiled artifact
# ---------------------------------------------------------------------------


@dataclass
class CompiledKernel:
    name: str
    symbol: str
    arch: Optional[str]
    spec: Specialization
    meta: Dict[str, Any]
    asm: Dict[str, str] = field(default_factory=dict)  # stage -> text
    cubin: Optional[bytes] = None
    cubin_tool: Optional[str] = None
    cubin_log: Optional[str] = None
    times: Dict[str, float] = field(default_factory=dict)

    @property
    def tile_ir(self) -> Optional[str]:
        return self.asm.get("tile")

    @property
    def llvm_dialect(self) -> Optional[str]:
        return self.asm.get("llvm_dialect")

    @property
    def llvm_ir(self) -> Optional[str]:
        return self.asm.get("llvm_ir")

    @property
    def ptx(self) -> Optional[str]:
        return self.asm.get("ptx")


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------


def _sanitize_symbol(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if s and not s[0].isdigit() else "k_" + s


def make_tile_ir(source: FunctionSource, spec: Specialization, symbol: str) -> Any:
    """Stage 1: the kernel's AST -> a verified tile-dialect module (``_C.Module``)."""
    C = _C()
    context = C.Context()
    builder = C.Builder(context)
    semantic = Semantic(builder)
    semantic.cluster = spec.cluster
    builder.set_fp_contract(spec.fp_fusion)
    sig = dict(spec.signature)
    constexprs = dict(spec.constexprs)

    # Bind parameters: runtime ones from the signature, the rest constexprs.
    tree = source.tree
    filename, lineno, col, line = source.location(tree)
    builder.set_loc(filename, lineno, col)

    def err(msg: str) -> CompilationError:
        return CompilationError(filename, lineno, col, msg, line)

    scope: Dict[str, Any] = {}
    runtime_params: List[Tuple[str, Any]] = []
    for p in source.params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise err(f"kernel '{source.name}': *args/**kwargs parameters are not supported")
        if p.name in source.constexpr_params or p.name in constexprs:
            if p.name in sig:
                raise err(f"parameter '{p.name}' is a constexpr but appears in the signature")
            if p.name in constexprs:
                scope[p.name] = constexpr(constexprs[p.name])
            elif p.default is not p.empty:
                scope[p.name] = constexpr(p.default)
            else:
                raise err(f"kernel '{source.name}': constexpr parameter '{p.name}' has no "
                          f"value (pass {p.name}=...)")
        else:
            if p.name not in sig:
                raise err(f"kernel '{source.name}': parameter '{p.name}' is missing from the "
                          f"signature")
            runtime_params.append((p.name, lc.dtype_from_str(sig[p.name])))
    unknown = set(sig) - {n for n, _ in runtime_params}
    if unknown:
        raise err(f"kernel '{source.name}': the signature names unknown parameters "
                  f"{sorted(unknown)}")
    unknown = set(constexprs) - set(source.param_names)
    if unknown:
        raise err(f"kernel '{source.name}' has no parameters {sorted(unknown)}")
    div = dict(spec.divisibility)
    for name, ty in runtime_params:
        if div.get(name, 1) > 1 and ty.is_floating():
            raise err(f"divisibility applies to integer and pointer parameters, not '{name}' "
                      f"({ty.short})")

    module = builder.create_module()
    args = builder.create_kernel(module, symbol, [semantic.ir_type(t) for _, t in runtime_params],
                                 [div.get(n, 1) for n, _ in runtime_params], spec.num_warps,
                                 list(spec.cluster), spec.maxnreg or 0)
    ones = set(spec.equal_to_1)
    for (name, ty), handle in zip(runtime_params, args):
        # A value-1 parameter stays in the ABI; the body sees a typed constant 1.
        scope[name] = semantic.constant(1, ty) if name in ones else tensor(handle, ty)
    gen = CodeGenerator(source, semantic, scope)
    gen.run_body(tree.body)
    if gen.return_value is not None:
        raise err(f"kernel '{source.name}' must not return a value")
    builder.set_unknown_loc()
    builder.ret()
    try:
        module.verify()
    except C.MLIRError as e:  # a frontend bug: the semantic layer should have caught it
        raise CompilationError(filename, lineno, col,
                               f"internal error: generated IR does not verify:\n{e}", line) \
            from None
    return module


#: A diagnostic's location as the C++ side prints it: loc("file":line:col), the innermost
#: of a call-site location (an inlined callee's line, not its caller's).
_DIAG = re.compile(r'^(error|note|warning|remark): loc\((?:callsite\()?'
                   r'(?:"([^"]*)":(\d+):(\d+))?.*?\)+: (.*)$')


def _diagnostics(text: str) -> List[List[Any]]:
    """The errors and warnings in the C++ side's diagnostics text: [kind, filename, line,
    col, message with its notes after it]."""
    diags: List[List[Any]] = []
    for line in text.splitlines():
        m = _DIAG.match(line)
        if not m:
            continue
        kind, filename, lineno, col, message = m.groups()
        if kind in ("error", "warning"):
            diags.append([kind, filename, int(lineno or 0), int(col or 0), message])
        elif kind == "note" and diags and not message.startswith("see current"):
            where = f"{filename}:{lineno}: " if filename else ""
            diags[-1][4] += f"\n  note: {where}{message}"
    return diags


def _at_source(filename: Optional[str], lineno: int, col: int,
               source: FunctionSource) -> Tuple[str, int, int, Optional[str]]:
    """A diagnostic's place: the user's line it names (the kernel's ``def`` where it names
    none) and that line's text."""
    if not filename or not lineno:
        filename, lineno, col = source.filename, source.first_line, 1
    return filename, lineno, col, linecache.getline(filename, lineno) or None


def lowering_error(e: Exception, source: FunctionSource) -> CompilationError:
    """A diagnostic of the lowering (a resource overflow, an op the arch lacks, a layout
    rule) as a CompilationError at the user's line it names (the kernel's ``def`` where it
    names none), with its notes, e.g. the largest shared-memory buffers, after it."""
    for kind, filename, lineno, col, text in _diagnostics(str(e)):
        if kind == "error":
            filename, lineno, col, line = _at_source(filename, lineno, col, source)
            return CompilationError(filename, lineno, col, text, line)
    return CompilationError(source.filename, source.first_line, 1,
                            f"internal error: the lowering failed:\n{e}")


def warn_lowering(text: str, source: FunctionSource) -> None:
    """Issues each warning of the lowering (a ``num_stages`` load left synchronous, and
    why) as a CompilationWarning at the user's line it names, with its notes; issued at
    that line (``warnings`` filters by the kernel's module) and at each compile."""
    for kind, filename, lineno, col, message in _diagnostics(text):
        if kind == "warning":
            _warn_at(*_at_source(filename, lineno, col, source), message)


def _warn_at(filename: str, lineno: int, col: int, line: Optional[str], message: str) -> None:
    """A CompilationWarning at a user's line (``warnings`` filters by the kernel's module)."""
    warnings.warn_explicit(CompilationWarning(filename, lineno, col, message, line),
                           CompilationWarning, filename, lineno)


def warn_wgmma_serialized(log: Optional[str], source: FunctionSource, arch: str) -> None:
    """A CompilationWarning at the kernel's ``def`` where ptxas serialized its wgmma
    instructions (each waited for before the next issues: the tensor cores idle between
    them), with the reason ptxas gives; the usual one, a call in the kernel, is most often
    a correctly rounded f32 division (``/``), which ``kl.fdiv`` avoids."""
    reason = targetinfo.wgmma_serialization(log)
    if reason is None:
        return
    hint = (": a correctly rounded f32 division (`/`) is such a call; kl.fdiv(x, y) divides "
            "without one" if "call" in reason.lower() else "")
    message = (f"ptxas serializes this kernel's wgmma instructions on {arch} (each waited for "
               f"before the next issues) due to {reason}{hint}")
    _warn_at(source.filename, source.first_line, 1,
             linecache.getline(source.filename, source.first_line) or None, message)


def wait_bound() -> int:
    """The debug bound on mbarrier waits, ``KILN_DEBUG_WAITS=<tries>`` (0 or unset: none):
    a wait that has not passed after that many ``mbarrier.try_wait`` attempts prints the
    kernel, the op's source line, the barrier and the parity, and traps, so that a hang in a
    protocol the compiler built becomes an error naming where. Part of the cache key."""
    text = os.environ.get("KILN_DEBUG_WAITS", "0").strip() or "0"
    try:
        tries = int(text)
    except ValueError:
        raise ValueError(f"KILN_DEBUG_WAITS must be a number of tries, got {text!r}") from None
    if tries < 0 or tries >= 2**31:
        raise ValueError(f"KILN_DEBUG_WAITS must be in [0, 2^31), got {tries}")
    return tries


def split_n() -> Optional[bool]:
    """Whether dots of fewer 64-row slabs than warpgroups run on wgmma with the warpgroups
    splitting N (kiln-tile-accelerate-dot's ``split-n``), ``KILN_SPLIT_N=0|1``; unset (None):
    the compiler's default. A switch to compare the two forms or to set one aside; part of the
    cache key when set."""
    text = os.environ.get("KILN_SPLIT_N", "").strip()
    if text not in ("", "0", "1"):
        raise ValueError(f"KILN_SPLIT_N must be 0 or 1, got {text!r}")
    return None if text == "" else text == "1"


def lower_to_llvm_dialect(module: Any, num_warps: int, arch: Optional[str] = None,
                          source: Optional[FunctionSource] = None) -> Any:
    """Stage 2: tile -> LLVM/NVVM dialects for ``arch`` (wgmma on sm_90a, tcgen05 on
    sm_100a/sm_103a; None: no arch-specific instructions), with ``wait_bound()`` and
    ``split_n()``; returns a new module (the input is kept). With the kernel's ``source``, its
    warnings become CompilationWarnings and its error a CompilationError, at the user's lines."""
    lowered = module.clone()
    try:
        split = split_n()
        text = _C().run_tile_to_llvm(lowered, num_warps, arch or "", wait_bound(),
                                     **({} if split is None else {"split_n": split}))
    except _C().MLIRError as e:
        if source is None:
            raise
        warn_lowering(str(e), source)
        raise lowering_error(e, source) from None
    if source is not None:
        warn_lowering(text, source)
    return lowered


def make_llvm_ir(llvm_module: Any, arch: str) -> str:
    """Stage 3: LLVM IR text for ``arch`` (optimized, libdevice linked)."""
    return _C().translate_to_llvm_ir(llvm_module, arch)


def make_ptx(llvm_module: Any, arch: str) -> str:
    """Stage 4: PTX for ``arch``."""
    return _C().translate_to_ptx(llvm_module, arch)


def make_cubin(ptx: str, arch: str) -> Tuple[bytes, str, str]:
    """Stage 5: (cubin, tool, info log) for ``arch``."""
    return _C().compile_ptx(ptx, arch)


def _dump(symbol: str, key: str, stage: str, text: Union[str, bytes]) -> None:
    d = os.environ.get("KILN_DUMP_IR")
    if not d:
        return
    os.makedirs(d, exist_ok=True)
    ext = {"tile": "tile.mlir", "llvm_dialect": "llvm.mlir", "llvm_ir": "ll", "ptx": "ptx",
           "cubin": "cubin"}[stage]
    path = os.path.join(d, f"{symbol}.{key[:8]}.{ext}")
    mode = "wb" if isinstance(text, bytes) else "w"
    with open(path, mode) as f:
        f.write(text)


def build_metadata(name: str, symbol: str, source: FunctionSource, source_hash: str,
                   spec: Specialization, threads_per_block: int, arch: Optional[str] = None,
                   ptx: Optional[str] = None, cubin: Optional[bytes] = None,
                   cubin_log: Optional[str] = None, cubin_tool: Optional[str] = None,
                   pdl: bool = False, shared_bytes: int = 0,
                   features: Sequence[str] = (),
                   shared_plan: Sequence[Dict[str, Any]] = (),
                   dots: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    """The kernel's manifest entry (docs/bundle-format.md). With ``arch``, ``targets[arch]``
    records what that image uses and costs (``features``: what the lowering recorded on the
    kernel, ``tile.features``, and vector16 from the PTX; registers/spills/stack from the
    cubin and the assembler's log, PTX ISA and assembler versions; ``shared_plan``: its
    shared-memory buffers, ``shared_plan_entries``; ``dots``: the unit that runs each dot,
    ``dot_entries``)."""
    div = dict(spec.divisibility)
    params = []
    for pname, t in spec.signature:
        ty = lc.dtype_from_str(t)
        if ty.is_tensordesc():
            params.append({"name": pname, "kind": "tensormap", "dtype": ty.element_ty.short,
                           "box": list(ty.block.shape), "swizzle": ty.swizzle,
                           "divisibility": 1})
        elif ty.is_ptr():
            params.append({"name": pname, "kind": "ptr", "dtype": ty.element_ty.short,
                           "divisibility": div.get(pname, 1)})
        else:
            params.append({"name": pname, "kind": "scalar", "dtype": ty.short,
                           "divisibility": div.get(pname, 1)})
    targets = {}
    if arch and (ptx or cubin):
        targets[arch] = targetinfo.target_info(arch, ptx, cubin, cubin_log, cubin_tool, symbol,
                                               features)
        targets[arch]["shared_plan"] = list(shared_plan)
        targets[arch]["dots"] = list(dots)
    return {
        "name": name,
        "symbol": symbol,
        "params": params,
        "constexprs": {k: _constexpr_repr(v) for k, v in spec.constexprs},
        "threads_per_block": threads_per_block,
        "shared_bytes": shared_bytes,
        "pdl": pdl,
        "cluster": list(spec.cluster),
        "features": sorted({f for t in targets.values() for f in t["features"]}),
        "source_hash": source_hash,
        "specialization": spec.key(),
        "compiler_version": compiler_version(),
        "targets": targets,
    }


def dot_entries(dots: Optional[Sequence[str]]) -> List[Dict[str, Any]]:
    """The lowering's ``tile.dots`` (one "line unit[ reason]" string a dot, in program order,
    kiln-tile-accelerate-dot) as dicts: ``line`` (of the ``kl.dot``), ``unit`` ("wgmma",
    "wgmma staged": its operands staged in shared memory, "tcgen05", "tcgen05 staged",
    "mma.sync") and, for
    mma.sync, ``reason``: why not the target's tensor-core MMA (None otherwise)."""
    entries = []
    for text in dots or ():
        line, _, rest = text.partition(" ")
        if rest.startswith("mma.sync"):
            unit, reason = "mma.sync", rest[len("mma.sync"):].strip() or None
        else:
            unit, reason = rest, None
        entries.append({"line": int(line), "unit": unit, "reason": reason})
    return entries


def shared_plan_entries(plan: Optional[Sequence[str]]) -> List[Dict[str, Any]]:
    """The lowering's ``tile.shared_plan`` (one "name bytes offset first-last" string a
    shared-memory buffer, largest first) as dicts: ``buffer``, ``bytes``, ``offset`` (None
    where the buffers stay static, placed by the assembler) and ``lines`` [first, last], the
    source lines of the first and last op of the buffer's live range (0 where unknown)."""
    entries = []
    for text in plan or ():
        name, size, offset, lines = text.split()
        first, last = lines.split("-")
        entries.append({"buffer": name, "bytes": int(size),
                        "offset": int(offset) if int(offset) >= 0 else None,
                        "lines": [int(first), int(last)]})
    return entries


def _check_register_pool(symbol: str, split: Optional[Sequence[int]], cubin: bytes,
                         log: Optional[str], tool: Optional[str], arch: str,
                         threads: int) -> None:
    """Raises if the cubin's registers at entry (threads x the count rounded up to 8, the
    CTA's pool) cannot hold the consumers' setmaxnreg.inc beside the producers' .dec.
    ``split``: the lowered kernel's ``tile.register_split`` (consumer threads, their
    registers, the producers'), None for a kernel without warp specialization."""
    if not split:
        return
    consumers, inc, dec = split
    registers = targetinfo.target_info(arch, None, cubin, log, tool, symbol).get("registers")
    if not registers:
        return
    pool = threads * ((registers + 7) // 8 * 8)
    needed = consumers * inc + (threads - consumers) * dec
    if needed > pool:
        raise RuntimeError(
            f"kernel '{symbol}' ({arch}): the assembler ({tool}) starts it with {registers} "
            f"registers a thread, a pool of {pool} for {threads} threads, but its warp "
            f"specialization needs {needed} ({consumers} consumer threads x {inc} + "
            f"{threads - consumers} producer threads x {dec}): the consumers' "
            f"setmaxnreg.inc would wait forever. Assemble with ptxas (KILN_USE_PTXAS=1).")


def compile_kernel(source: FunctionSource, source_hash: str, spec: Specialization,
                   arch: Optional[str], name: Optional[str] = None, symbol: Optional[str] = None,
                   upto: str = "cubin") -> CompiledKernel:
    """Runs the stages up to ``upto`` (one of STAGES) for ``arch``."""
    if upto not in STAGES:
        raise ValueError(f"upto must be one of {STAGES}, got {upto!r}")
    stop = STAGES.index(upto)
    if stop > 0 and not arch:
        raise ValueError("an arch (sm_90a, sm_100a, sm_103a) is needed past the tile stage")
    name = name or source.name
    symbol = _sanitize_symbol(symbol or name)
    key = signature_hash(source_hash, spec, arch or "")
    times: Dict[str, float] = {}
    asm: Dict[str, str] = {}

    t0 = time.perf_counter()
    module = make_tile_ir(source, spec, symbol)
    asm["tile"] = module.str()
    times["tile"] = time.perf_counter() - t0
    _dump(symbol, key, "tile", asm["tile"])
    threads = spec.num_warps * 32
    shared_bytes = 0
    # A kernel that synchronizes with griddepcontrol is launched with programmatic
    # stream serialization (PDL): tile.pdl, set by the frontend with the op and by the
    # lowering from the griddepcontrol it emits.
    pdl = module.has_attr(symbol, "tile.pdl")
    features: List[str] = []
    register_split: Optional[List[int]] = None
    shared_plan: List[Dict[str, Any]] = []
    dots: List[Dict[str, Any]] = []
    ck = CompiledKernel(name, symbol, arch, spec, {}, asm, times=times)
    if stop >= 1:
        t0 = time.perf_counter()
        lowered = lower_to_llvm_dialect(module, spec.num_warps, arch, source)
        asm["llvm_dialect"] = lowered.str()
        times["llvm_dialect"] = time.perf_counter() - t0
        _dump(symbol, key, "llvm_dialect", asm["llvm_dialect"])
        # The lowered kernel's own thread count (nvvm.reqntid) is the launch's: a
        # warp-specialized kernel adds a producer warpgroup to num_warps.
        tpb = lowered.get_int_attr(symbol, "nvvm.reqntid")
        if tpb:
            threads = int(tpb)
        shared_bytes = int(lowered.get_int_attr(symbol, "tile.shared_bytes") or 0)
        # What the kernel's instructions use, recorded on it by the lowering.
        pdl = lowered.has_attr(symbol, "tile.pdl")
        features = lowered.get_string_array_attr(symbol, "tile.features") or []
        register_split = lowered.get_int_array_attr(symbol, "tile.register_split")
        shared_plan = shared_plan_entries(
            lowered.get_string_array_attr(symbol, "tile.shared_plan"))
        dots = dot_entries(lowered.get_string_array_attr(symbol, "tile.dots"))
    if stop >= 2:
        t0 = time.perf_counter()
        if stop >= 3:
            llvm_ir, ptx = _C().translate_to_ptx(lowered, arch, True)
            asm["ptx"] = ptx
        else:
            llvm_ir = make_llvm_ir(lowered, arch)
        asm["llvm_ir"] = llvm_ir
        times["llvm_ir+ptx" if stop >= 3 else "llvm_ir"] = time.perf_counter() - t0
        _dump(symbol, key, "llvm_ir", llvm_ir)
        if stop >= 3:
            _dump(symbol, key, "ptx", asm["ptx"])
    if stop >= 4:
        t0 = time.perf_counter()
        ck.cubin, ck.cubin_tool, ck.cubin_log = make_cubin(asm["ptx"], arch)
        times["cubin"] = time.perf_counter() - t0
        warn_wgmma_serialized(ck.cubin_log, source, arch)
    # A warp-specialized kernel's consumers take registers from the pool the
    # producer warpgroup's setmaxnreg.dec fills; a pool smaller than what they ask
    # for would block their setmaxnreg.inc forever.
    if ck.cubin and arch:
        _check_register_pool(symbol, register_split, ck.cubin, ck.cubin_log, ck.cubin_tool,
                             arch, threads)
    ck.meta = build_metadata(name, symbol, source, source_hash, spec, threads, arch,
                             asm.get("ptx"), ck.cubin, ck.cubin_log, ck.cubin_tool, pdl=pdl,
                             shared_bytes=shared_bytes, features=features,
                             shared_plan=shared_plan, dots=dots)
    return ck
