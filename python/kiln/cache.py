"""The on-disk kernel cache, safe across processes and hosts.

Layout under ``$KILN_CACHE_DIR`` (default ``~/.cache/kiln``; ``KILN_CACHE=0``
turns the cache off)::

    <key[:2]>/<key>.kentry     one compiled kernel: header, metadata JSON, cubin
    <key[:2]>/<key>.lock       the per-key lock file (fcntl.flock)
    autotune/<key>.json        autotuning results (kiln.autotune)

``key`` is a SHA-256 over everything that can change the binary (see
``kernel_key``): the kernel's source, the sources of the ``@kiln.jit``
functions it calls and the global values it reads (``JITFunction.source_hash``),
the specialization (signature, divisibility, value-1 arguments, constexprs,
num_warps), the kernel name, the arch, the compiler (``compiler_fingerprint``:
package version, SHA-256 of the ``kiln._C`` extension file, hash of the
frontend's sources) and the options. The extension is hashed, not imported, so
a warm hit never loads MLIR/LLVM.
Nothing host-specific (paths, hostnames, times) enters it, so a cache directory
on a shared file system serves every host.

Protocol (``Cache.get_or_build``):

1. Read the entry without a lock; a complete, verified entry is a hit.
2. Otherwise take the key's lock (``flock(LOCK_EX)`` on ``<key>.lock``), read
   again (another process may just have published it), and only then compile.
   Concurrent processes asking for one key compile it once; different keys
   compile in parallel.
3. Verify before publishing: the cubin is an ELF file for the NVIDIA CUDA
   machine with the requested SM number, the metadata survives a JSON round
   trip, the entry carries the cubin's SHA-256.
4. Publish the whole entry at once: write ``.tmp-<host>-<pid>-<random>``, fsync
   it, ``os.replace`` it onto ``<key>.kentry``, fsync the directory. A reader
   sees the old entry, the new one, or none -- never half of one.

On load every entry is checked again (magic, sizes, key, SHA-256, JSON, ELF):
a truncated or corrupt entry counts as a miss and is rebuilt and replaced.

``KILN_CACHE_LOG=<file>`` appends one line per compilation ("compiled <key>
<name> <arch>"), written while the key's lock is held: tests use it to check
that each key was compiled exactly once.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import json
import os
import socket
import struct
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no cross-process locking
    fcntl = None  # type: ignore[assignment]

from ._version import __version__
from .compiler.compiler import _frontend_hash

_MAGIC = b"KILNCACHE\x01\n\x00"  # 12 bytes
_HEADER = struct.Struct("<12sQQ")  # magic, json size, cubin size
ENTRY_SUFFIX = ".kentry"


class CacheCorruption(Exception):
    """An entry failed verification (used internally; loads turn it into a miss)."""


def cache_dir() -> Optional[str]:
    """The cache directory, or None when ``KILN_CACHE=0``."""
    if os.environ.get("KILN_CACHE", "1") == "0":
        return None
    return os.environ.get("KILN_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "kiln")


# ---------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------


def kernel_key(source_hash: str, spec_key: str, arch: str, name: str, compiler_version: str,
               options: Optional[Mapping[str, Any]] = None) -> str:
    """Content hash naming one compiled kernel (see the module docstring)."""
    h = hashlib.sha256()
    opts = json.dumps(dict(options or {}), sort_keys=True, default=repr)
    for part in ("kiln-kernel/1", source_hash, spec_key, arch, name, compiler_version, opts):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


_NATIVE: Optional[str] = None


def native_fingerprint() -> str:
    """SHA-256 of the compiler extension's file (``kiln._C``), without importing it
    (importing MLIR/LLVM costs ~0.3 s; a warm cache hit must not). The hash is
    computed once per installed file and remembered beside the cache, keyed by the
    file's size, mtime and inode."""
    global _NATIVE
    if _NATIVE is not None:
        return _NATIVE
    try:
        spec = importlib.util.find_spec("kiln._C")
    except (ImportError, ValueError):
        spec = None
    path = spec.origin if spec is not None else None
    if not path or not os.path.exists(path):
        _NATIVE = "no-native-compiler"
        return _NATIVE
    st = os.stat(path)
    memo = None
    root = cache_dir()
    if root is not None:
        memo = os.path.join(root, "native", f"{st.st_size}-{st.st_mtime_ns}-{st.st_ino}")
        try:
            with open(memo) as f:
                text = f.read().strip()
            if len(text) == 64:
                _NATIVE = text
                return _NATIVE
        except OSError:
            pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    _NATIVE = h.hexdigest()
    if memo is not None:
        try:
            atomic_write(memo, _NATIVE.encode())
        except OSError:
            pass
    return _NATIVE


def compiler_fingerprint() -> str:
    """What identifies the compiler in cache keys: the package version, the
    extension's content hash and the hash of the frontend's Python sources."""
    return f"{__version__}/{native_fingerprint()}/{_frontend_hash()}"


# ---------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------

EM_CUDA = 190


def cubin_sm(cubin: bytes) -> int:
    """The SM number (90, 100, 103, ...) a cubin was built for; raises
    CacheCorruption when ``cubin`` is not a 64-bit little-endian CUDA ELF file.

    CUDA ELF files keep the SM in ``e_flags``: bits 0-7 in the ABI of ELF
    version 7 and older, bits 8-15 from ABI version 8 (CUDA 12.8+)."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF":
        raise CacheCorruption("the cubin is not an ELF file")
    if cubin[4] != 2 or cubin[5] != 1:
        raise CacheCorruption("the cubin is not a 64-bit little-endian ELF file")
    e_machine = struct.unpack_from("<H", cubin, 18)[0]
    if e_machine != EM_CUDA:
        raise CacheCorruption(f"the cubin's ELF machine is {e_machine}, not CUDA ({EM_CUDA})")
    abi_version = cubin[8]
    e_flags = struct.unpack_from("<I", cubin, 48)[0]
    return (e_flags >> 8) & 0xFF if abi_version >= 8 else e_flags & 0xFF


def arch_sm(arch: str) -> int:
    """``sm_90a`` -> 90."""
    digits = "".join(c for c in arch[3:] if c.isdigit())
    if not arch.startswith("sm_") or not digits:
        raise ValueError(f"not an arch name: {arch!r}")
    return int(digits)


def verify_cubin(cubin: bytes, arch: str) -> None:
    sm = cubin_sm(cubin)
    if sm != arch_sm(arch):
        raise CacheCorruption(f"the cubin is for sm_{sm}, expected {arch}")


@dataclass
class Entry:
    key: str
    meta: Dict[str, Any]
    cubin: bytes
    arch: str
    hit: bool  # True: read from the disk cache; False: compiled by this call


def encode_entry(key: str, arch: str, meta: Mapping[str, Any], cubin: bytes) -> bytes:
    """Serializes and verifies an entry; raises CacheCorruption if it would not
    load back."""
    verify_cubin(cubin, arch)
    doc = {"key": key, "arch": arch, "meta": meta, "cubin_size": len(cubin),
           "cubin_sha256": hashlib.sha256(cubin).hexdigest()}
    try:
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
        if json.loads(text)["meta"] != json.loads(json.dumps(meta, allow_nan=False)):
            raise ValueError("it changes")
    except (TypeError, ValueError) as e:
        raise CacheCorruption(f"the metadata does not survive a JSON round trip: {e}") \
            from None
    return _HEADER.pack(_MAGIC, len(text), len(cubin)) + text + cubin


def decode_entry(data: bytes, key: str) -> Tuple[str, Dict[str, Any], bytes]:
    """(arch, meta, cubin) of an entry's bytes; raises CacheCorruption."""
    if len(data) < _HEADER.size:
        raise CacheCorruption(f"truncated: {len(data)} bytes")
    magic, jsize, csize = _HEADER.unpack_from(data, 0)
    if magic != _MAGIC:
        raise CacheCorruption("bad magic")
    if _HEADER.size + jsize + csize != len(data):
        raise CacheCorruption(f"size mismatch: header says {_HEADER.size + jsize + csize} "
                              f"bytes, file has {len(data)}")
    try:
        doc = json.loads(data[_HEADER.size:_HEADER.size + jsize])
    except ValueError as e:
        raise CacheCorruption(f"bad JSON: {e}") from None
    cubin = data[_HEADER.size + jsize:]
    if not isinstance(doc, dict) or doc.get("key") != key:
        raise CacheCorruption("the entry belongs to another key")
    if doc.get("cubin_size") != len(cubin) or \
            doc.get("cubin_sha256") != hashlib.sha256(cubin).hexdigest():
        raise CacheCorruption("cubin checksum mismatch")
    arch = doc.get("arch")
    if not isinstance(arch, str) or not isinstance(doc.get("meta"), dict):
        raise CacheCorruption("incomplete metadata")
    verify_cubin(cubin, arch)
    return arch, doc["meta"], cubin


# ---------------------------------------------------------------------------
# Atomic files and locks
# ---------------------------------------------------------------------------


def _fsync_dir(d: str) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes) -> None:
    """Writes ``path`` all at once: temp file in the same directory, fsync,
    ``os.replace``, fsync of the directory."""
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".tmp-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(d)


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if missing); a context manager.
    Locks are per open file description, so threads and processes both exclude
    each other; the kernel drops the lock if the holder dies."""

    def __init__(self, path: str):
        self.path = path
        self._fd = -1

    def __enter__(self) -> "FileLock":
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            while True:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX)
                    break
                except OSError as e:  # pragma: no cover - signal during the wait
                    if e.errno != errno.EINTR:
                        os.close(self._fd)
                        raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = -1


# ---------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------


class Cache:
    """Compiled kernels on disk under ``root``."""

    def __init__(self, root: str):
        self.root = root

    @classmethod
    def default(cls) -> Optional["Cache"]:
        d = cache_dir()
        return cls(d) if d is not None else None

    def entry_path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ENTRY_SUFFIX)

    def lock_path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".lock")

    def load(self, key: str) -> Optional[Entry]:
        """The verified entry for ``key``, or None (missing, truncated, corrupt)."""
        try:
            with open(self.entry_path(key), "rb") as f:
                data = f.read()
        except OSError:
            return None
        try:
            arch, meta, cubin = decode_entry(data, key)
        except CacheCorruption:
            return None
        return Entry(key, meta, cubin, arch, True)

    def store(self, key: str, arch: str, meta: Mapping[str, Any], cubin: bytes) -> None:
        """Verifies and publishes an entry (raises CacheCorruption if invalid)."""
        atomic_write(self.entry_path(key), encode_entry(key, arch, meta, cubin))

    def get_or_build(self, key: str, arch: str,
                     build: Callable[[], Tuple[Dict[str, Any], bytes]],
                     what: str = "") -> Entry:
        """The entry for ``key``; ``build()`` -> (meta, cubin) runs at most once
        across all processes sharing the cache (barring a corrupt entry)."""
        entry = self.load(key)
        if entry is not None:
            return entry
        try:
            lock = FileLock(self.lock_path(key))
            lock.__enter__()
        except OSError:  # read-only or full cache: compile without it
            meta, cubin = build()
            verify_cubin(cubin, arch)
            return Entry(key, dict(meta), cubin, arch, False)
        try:
            entry = self.load(key)
            if entry is not None:
                return entry
            meta, cubin = build()
            data = encode_entry(key, arch, meta, cubin)  # verify before publishing
            try:
                atomic_write(self.entry_path(key), data)
            except OSError:
                pass  # a full disk only costs a recompile next time
            log = os.environ.get("KILN_CACHE_LOG")
            if log:
                line = f"compiled {key} {what or '-'} {arch} pid={os.getpid()}\n".encode()
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
            return Entry(key, dict(meta), cubin, arch, False)
        finally:
            lock.__exit__(None, None, None)


__all__ = ["Cache", "CacheCorruption", "Entry", "FileLock", "arch_sm", "atomic_write",
           "cache_dir", "compiler_fingerprint", "cubin_sm", "native_fingerprint", "decode_entry",
           "encode_entry", "kernel_key", "verify_cubin"]
