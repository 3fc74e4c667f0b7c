"""What a compiled image uses and costs: the per-arch facts a bundle manifest records.

Pure Python over text and bytes (no GPU, no compiler), used by the metadata builder:

- ``ptx_features(ptx)``: hardware features the code uses, found in the PTX instructions
  (``cp.async.bulk.tensor`` -> "tma", ``wgmma`` -> "wgmma", ``tcgen05`` -> "tcgen05",
  ``elect.sync`` -> "elect", ``griddepcontrol`` -> "pdl", ``atom``/``red`` at ``.sys`` scope ->
  "sys_atomics", 16-byte ``ld``/``st`` (``.v4`` of 32-bit, ``.v2`` of 64-bit) -> "vector16",
  ``mbarrier`` -> "mbarrier", ``setmaxnreg`` -> "setmaxnreg"). The compiler does not use it:
  the lowering records the features on the kernel (``tile.features``) and only
  ``ptx_uses_vector16`` reads the PTX; it stays as the cross-check of the two.
- ``ptx_uses_vector16(ptx)``: whether the PTX moves 16 bytes in one ``ld``/``st``.
- ``ptx_isa_version(ptx)``: the ``.version`` directive ("8.8").
- ``parse_assembler_log(log)``: registers, spills and stack from ptxas/nvJitLink ``-v`` output.
- ``cubin_info(cubin, symbol)``: registers, stack frame and static shared memory from the
  cubin's ``.nv.info`` attributes, and the assembler's version from its ``.note.nv.tkinfo``.
- ``target_info(...)``: all of it as the manifest's ``targets[arch]`` object.
- ``merge_arch_metadata(metas)``: one kernel entry from the per-arch entries of one
  specialization (features: the union; targets: every arch's).
"""

from __future__ import annotations

import re
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional

#: Feature name -> regex over PTX instruction text (comments removed first).
FEATURE_PATTERNS = {
    "tma": re.compile(r"\bcp\.async\.bulk\.tensor\b"),
    "wgmma": re.compile(r"\bwgmma\."),
    "tcgen05": re.compile(r"\btcgen05\."),
    "elect": re.compile(r"\belect\.sync\b"),
    "pdl": re.compile(r"\bgriddepcontrol\."),
    "sys_atomics": re.compile(r"\b(?:atom|red)(?:\.[a-z0-9_]+)*?\.sys\b"),
    "vector16": re.compile(
        r"\b(?:ld|st)(?:\.[a-z0-9_:]+)*?\.(?:v4\.(?:b|u|s|f)32|v2\.(?:b|u|s|f)64|v8\.(?:b|u|s|f)16"
        r"|v8\.bf16x2|v4\.(?:b|f)16x2)\b"),
    "mbarrier": re.compile(r"\bmbarrier\."),
    "setmaxnreg": re.compile(r"\bsetmaxnreg\."),
}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def ptx_features(ptx: str) -> List[str]:
    """Sorted names of the hardware features the PTX text uses."""
    code = _COMMENT.sub("", ptx)
    return sorted(name for name, pat in FEATURE_PATTERNS.items() if pat.search(code))


def ptx_uses_vector16(ptx: str) -> bool:
    """Whether the PTX has a 16-byte ld/st: the one feature read from the PTX, because the
    NVPTX backend decides the width of each access (its load/store vectorizer joins
    narrower ones, its legalizer splits misaligned ones) after the lowering that records
    the other features."""
    return FEATURE_PATTERNS["vector16"].search(_COMMENT.sub("", ptx)) is not None


def ptx_isa_version(ptx: str) -> str:
    m = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    return m.group(1) if m else ""


_LOG_REGS = re.compile(r"[Uu]sed (\d+) registers")
_LOG_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                        r"(\d+) bytes spill loads")


_LOG_WGMMA_SERIAL = re.compile(r"wgmma\.mma_async instructions are serialized due to "
                               r"(.*?)(?: in the function '[^']*')?\.?$", re.M)


def wgmma_serialization(log: Optional[str]) -> Optional[str]:
    """Why ptxas serialized the kernel's wgmma instructions (its C7509 note: each wgmma
    waited for before the next issues), as the log says it, or None."""
    m = _LOG_WGMMA_SERIAL.search(log or "")
    return m.group(1).strip() if m else None


def parse_assembler_log(log: Optional[str]) -> Dict[str, int]:
    """registers / stack_bytes / spill_store_bytes / spill_load_bytes found in a ptxas or
    nvJitLink verbose log (one kernel per image); missing facts are left out."""
    out: Dict[str, int] = {}
    if not log:
        return out
    m = _LOG_REGS.search(log)
    if m:
        out["registers"] = int(m.group(1))
    m = _LOG_SPILL.search(log)
    if m:
        out["stack_bytes"] = int(m.group(1))
        out["spill_store_bytes"] = int(m.group(2))
        out["spill_load_bytes"] = int(m.group(3))
    return out


# EIATTR codes of .nv.info (see cuobjdump -elf): per-symbol values in the global section.
_EIATTR_FRAME_SIZE = 0x11
_EIATTR_REGCOUNT = 0x2F
_EIATTR_MAX_STACK_SIZE = 0x23


def _elf_sections(b: bytes) -> List[Dict[str, Any]]:
    if len(b) < 64 or b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF image")
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(b) or shstrndx >= max(shnum, 1):
        raise ValueError("ELF section table outside the image")
    raw = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    stroff, strsize = raw[shstrndx][4], raw[shstrndx][5]

    def name(off: int) -> str:
        if off >= strsize:
            return ""
        end = b.find(b"\0", stroff + off, stroff + strsize)
        return b[stroff + off:end if end >= 0 else stroff + strsize].decode("ascii", "replace")

    secs = []
    for (nm, typ, flags, _addr, off, size, link, info, _align, entsize) in raw:
        if typ != 8 and off + size > len(b):  # SHT_NOBITS has no bytes in the file
            raise ValueError("ELF section outside the image")
        secs.append({"name": name(nm), "type": typ, "offset": off, "size": size,
                     "link": link, "info": info, "entsize": entsize})
    return secs


def _symbol_index(b: bytes, secs: List[Dict[str, Any]], symbol: str) -> Optional[int]:
    for s in secs:
        if s["type"] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[s["link"]] if s["link"] < len(secs) else None
        if strtab is None:
            return None
        for i in range(s["size"] // 24):
            st_name = struct.unpack_from("<I", b, s["offset"] + i * 24)[0]
            start = strtab["offset"] + st_name
            end = b.find(b"\0", start, strtab["offset"] + strtab["size"])
            if end >= 0 and b[start:end].decode("ascii", "replace") == symbol:
                return i
    return None


def cubin_info(cubin: bytes, symbol: str) -> Dict[str, Any]:
    """registers / stack_bytes / shared_static_bytes of ``symbol`` and the assembler's
    ``assembler`` name and ``assembler_version`` read from the cubin itself."""
    out: Dict[str, Any] = {}
    try:
        secs = _elf_sections(cubin)
    except (ValueError, struct.error):
        return out
    sym = _symbol_index(cubin, secs, symbol)
    for s in secs:
        if s["name"] == ".nv.info" and sym is not None:
            d = cubin[s["offset"]:s["offset"] + s["size"]]
            i = 0
            while i + 2 <= len(d):
                fmt, attr = d[i], d[i + 1]
                if fmt == 4:  # EIFMT_SVAL: u16 size + data
                    if i + 4 > len(d):
                        break
                    size = struct.unpack_from("<H", d, i + 2)[0]
                    data = d[i + 4:i + 4 + size]
                    if size == 8 and len(data) == 8:
                        idx, val = struct.unpack("<II", data)
                        if idx == sym:
                            if attr == _EIATTR_REGCOUNT:
                                out["registers"] = val
                            elif attr == _EIATTR_FRAME_SIZE:
                                out["stack_bytes"] = val
                            elif attr == _EIATTR_MAX_STACK_SIZE:
                                out.setdefault("stack_bytes", val)
                    i += 4 + size
                elif fmt == 3:  # EIFMT_HVAL
                    i += 4
                elif fmt == 2:  # EIFMT_BVAL
                    i += 3
                else:
                    i += 2
        elif s["name"] == f".nv.shared.{symbol}":
            out["shared_static_bytes"] = s["size"]
        elif s["name"] == ".note.nv.tkinfo":
            text = cubin[s["offset"]:s["offset"] + s["size"]]
            m = re.search(rb"release \d+\.\d+, V(\d+\.\d+\.\d+)", text)
            if m:
                out["assembler_version"] = m.group(1).decode()
    out.setdefault("shared_static_bytes", 0)
    return out


def target_info(arch: str, ptx: Optional[str], cubin: Optional[bytes], log: Optional[str],
                tool: Optional[str], symbol: str, features: Iterable[str] = ()) -> Dict[str, Any]:
    """The manifest's ``targets[arch]`` object for one compiled image; ``features``: what
    the lowering recorded on the kernel (``tile.features``)."""
    used = set(features)
    if ptx and ptx_uses_vector16(ptx):
        used.add("vector16")
    info: Dict[str, Any] = {"features": sorted(used)}
    if ptx:
        info["ptx_isa"] = ptx_isa_version(ptx)
    if cubin:
        info.update(cubin_info(cubin, symbol))
    for k, v in parse_assembler_log(log).items():
        info[k] = v  # the assembler's own report wins where both exist
    if tool:
        info["assembler"] = tool
    return info


def merge_arch_metadata(metas: Iterable[Mapping[str, Any]]) -> Dict[str, Any]:
    """One kernel entry from the per-arch entries of one specialization: the first entry
    with ``features`` the union over archs, ``targets`` holding every arch's facts and
    ``shared_bytes`` the largest arch's (the entry's one launch size serves every image:
    e.g. sm_90a's wgmma staging may need more than the mma.sync form of sm_100a)."""
    metas = list(metas)
    if not metas:
        raise ValueError("merge_arch_metadata: no metadata")
    out = dict(metas[0])
    feats = set(out.get("features", []))
    targets: Dict[str, Any] = dict(out.get("targets", {}))
    for m in metas[1:]:
        feats.update(m.get("features", []))
        targets.update(m.get("targets", {}))
    out["features"] = sorted(feats)
    out["targets"] = {k: targets[k] for k in sorted(targets)}
    out["shared_bytes"] = max(int(m.get("shared_bytes", 0)) for m in metas)
    return out
