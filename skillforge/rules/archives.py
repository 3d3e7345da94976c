"""The members of a compressed file in a skill folder, for the secret scan (pure: bytes in, bytes out;
decompressed in memory, nothing is written or extracted to disk).

A skill can carry `references/data.zip` or `creds.md.gz`; a key inside is as live as one beside it.
`unpack(path, data)` reads a gzip, bzip2 or xz stream (a `.tar.gz`/`.tgz`, `.tar.bz2`, `.tar.xz` is
that stream around a tar), a zip or a tar, known by its magic bytes or, failing that, by its suffix,
and gives each member's path, git mode and bytes. Strict limits keep a hostile archive (a
decompression bomb, a million members, an archive in an archive in …) from costing more than a
skill is worth: at most MAX_UNPACKED bytes and MAX_MEMBERS members, one level only. What cannot be
read fully (encrypted, over a limit, corrupt, nested) is named in `problem`: the scan calls that an
"unscanned archive", a finding like a secret (fail closed: what is not read is not known clean).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from dataclasses import dataclass, field

MAX_UNPACKED = 20 * 1024 * 1024
"""Uncompressed bytes read from one archive (all members together)."""
MAX_MEMBERS = 1000
"""Members read from one archive."""
REGULAR, EXECUTABLE, SYMLINK = 0o100644, 0o100755, 0o120000

_STREAMS = {"gzip": (lambda f: gzip.GzipFile(fileobj=f), (".gz", ".tgz")), "bzip2": (bz2.BZ2File, (".bz2", ".tbz", ".tbz2")),
            "xz": (lzma.LZMAFile, (".xz", ".txz"))}
_TAR_OF = {".tgz": ".tar", ".tbz": ".tar", ".tbz2": ".tar", ".txz": ".tar"}
SUFFIXES = (".gz", ".tgz", ".bz2", ".tbz", ".tbz2", ".xz", ".txz", ".zip", ".tar")


@dataclass
class Unpacked:
    """What an archive holds: (inner path, git mode, bytes) per member read, and why it could not be
    read fully (None when every member was)."""

    kind: str
    members: list[tuple[str, int, bytes]] = field(default_factory=list)
    problem: str | None = None


def archive_kind(path: str, data: bytes) -> str | None:
    """`gzip`, `bzip2`, `xz`, `zip` or `tar` by the magic bytes of `data`, else by the suffix of `path`
    (`"?"`: an archive's suffix on bytes of no known archive); None: not an archive."""
    if data[:3] == b"\x1f\x8b\x08":
        return "gzip"
    if data[:3] == b"BZh" and data[3:4].isdigit() and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    if data[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if data[257:262] == b"ustar":
        return "tar"
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(".tar") and data:  # an old (v7) tar has no magic
        return "tar"
    return "?" if name.endswith(SUFFIXES) and data else None


def unpack(path: str, data: bytes) -> Unpacked | None:
    """The members of the archive `data` (at `path`), or None when it is not one."""
    kind = archive_kind(path, data)
    if kind is None:
        return None
    out = Unpacked(kind)
    if kind == "?":
        out.problem = "its name says archive but its bytes are no gzip, bzip2, xz, zip or tar"
        return out
    try:  # hostile bytes: any failure to read them is "cannot be read fully", never a crash
        if kind in _STREAMS:
            _stream(out, path, data)
        elif kind == "zip":
            _zip(out, data)
        else:
            _tar(out, data)
    except Exception as e:  # noqa: BLE001 - zlib/lzma/bz2/tarfile/zipfile errors have no common base
        out.problem = f"corrupt or unreadable {kind} data ({type(e).__name__})"
        return out
    if out.problem is None and (nested := next((p for p, _, b in out.members if archive_kind(p, b)), None)):
        out.problem = f"{nested} is an archive inside the archive (only one level is unpacked)"
    return out


def _over(what: str) -> str:
    return f"{what} (the scan reads at most {MAX_UNPACKED // 2**20} MB and {MAX_MEMBERS} members of an archive)"


def _stream(out: Unpacked, path: str, data: bytes) -> None:
    """A gzip/bzip2/xz stream: one member (the name without its suffix), or a tar's members."""
    opener, suffixes = _STREAMS[out.kind]
    with opener(io.BytesIO(data)) as f:
        payload = f.read(MAX_UNPACKED + 1)
    if len(payload) > MAX_UNPACKED:
        out.problem = _over(f"it unpacks to more than {MAX_UNPACKED // 2**20} MB")
        return
    name = path.rsplit("/", 1)[-1]
    suffix = next((s for s in suffixes if name.lower().endswith(s)), "")
    inner = name[:len(name) - len(suffix)] + _TAR_OF.get(suffix, "") if suffix else name
    if payload[257:262] == b"ustar" or inner.lower().endswith(".tar"):
        out.kind += "+tar"
        _tar(out, payload)
    else:
        out.members.append((inner, REGULAR, payload))


def _zip(out: Unpacked, data: bytes) -> None:
    left = MAX_UNPACKED
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            out.problem = _over(f"it has {len(infos)} members")
            return
        for info in infos:
            if info.is_dir():
                continue
            if info.flag_bits & 0x1:
                out.problem = f"{info.filename} is encrypted: it cannot be read, so it cannot be scanned"
                return
            with zf.open(info) as member:
                body = member.read(left + 1)
            if len(body) > left:
                out.problem = _over(f"it unpacks to more than {MAX_UNPACKED // 2**20} MB")
                return
            left -= len(body)
            unix = info.external_attr >> 16
            mode = SYMLINK if unix & 0o170000 == 0o120000 else EXECUTABLE if unix & 0o111 else REGULAR
            out.members.append((info.filename, mode, body))


def _tar(out: Unpacked, data: bytes) -> None:
    left, count = MAX_UNPACKED, 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        for info in tf:
            count += 1
            if count > MAX_MEMBERS:
                out.problem = _over(f"it has more than {MAX_MEMBERS} members")
                return
            if info.issym() or info.islnk():
                out.members.append((info.name, SYMLINK, info.linkname.encode("utf-8", errors="replace")))
                continue
            if not info.isreg():
                continue
            if info.size > left:
                out.problem = _over(f"it unpacks to more than {MAX_UNPACKED // 2**20} MB")
                return
            member = tf.extractfile(info)
            body = member.read(left + 1) if member is not None else b""
            left -= len(body)
            out.members.append((info.name, EXECUTABLE if info.mode & 0o111 else REGULAR, body))


__all__ = ["MAX_MEMBERS", "MAX_UNPACKED", "SUFFIXES", "Unpacked", "archive_kind", "unpack"]
