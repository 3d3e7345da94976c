"""The members of a compressed file in a skill folder, for the secret scan (pure: bytes in, bytes out;
decompressed in memory, nothing is written or extracted to disk).

A skill can carry `references/data.zip` or `creds.md.gz`; a key inside is as live as one beside it.
`unpack(path, data)` reads a gzip, bzip2 or xz stream (a `.tar.gz`/`.tgz`, `.tar.bz2`, `.tar.xz` is
that stream around a tar), a zstd stream (when the `zstandard` package is installed), a zip or a tar,
known by its magic bytes or, failing that, by its suffix, and gives each member's path, git mode and
bytes. A zip behind other bytes (a shell script's self-extractor, a PNG with a zip appended) is known
by its end record. A compressed format the scan cannot unpack (7z, rar, lz4, Unix compress `.Z`,
brotli `.br`, zstd without `zstandard`) is named in `problem` at once. Strict limits keep a hostile
archive (a decompression bomb, a million members, an archive in an archive in …) from costing more than a
skill is worth: at most MAX_UNPACKED bytes and MAX_MEMBERS members, all levels together, and
MAX_DEPTH levels. An archive inside (a .docx's embedded sheet, a .jar's libraries) is unpacked in
turn: its members are named `outer.zip!inner.xlsx!xl/sheet1.xml`, and its own bytes are kept in
`nested` for the scan of raw bytes. What cannot be read fully (encrypted, over a limit, corrupt,
deeper than MAX_DEPTH) is named in `problem`: the scan calls that an "unscanned archive", a finding
like a secret (fail closed: what is not read is not known clean).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import zipfile
from dataclasses import dataclass, field

try:  # an optional package: without it a zstd file is an unscanned archive (fail closed)
    import zstandard
except ImportError:  # pragma: no cover - installed in the development venv
    zstandard = None

MAX_UNPACKED = 20 * 1024 * 1024
"""Uncompressed bytes read from one archive (all members together)."""
MAX_MEMBERS = 1000
"""Members read from one archive."""
MAX_DEPTH = 3
"""Levels unpacked: an archive, an archive inside it, and one inside that."""
REGULAR, EXECUTABLE, SYMLINK = 0o100644, 0o100755, 0o120000



def _zstd(f: io.BytesIO) -> io.RawIOBase:
    return zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)


_STREAMS = {"gzip": (lambda f: gzip.GzipFile(fileobj=f), (".gz", ".tgz")), "bzip2": (bz2.BZ2File, (".bz2", ".tbz", ".tbz2")),
            "xz": (lzma.LZMAFile, (".xz", ".txz")), "zstd": (_zstd, (".zst", ".tzst"))}
_TAR_OF = {".tgz": ".tar", ".tbz": ".tar", ".tbz2": ".tar", ".txz": ".tar", ".tzst": ".tar"}
SUFFIXES = (".gz", ".tgz", ".bz2", ".tbz", ".tbz2", ".xz", ".txz", ".zip", ".tar", ".zst", ".tzst", ".7z", ".rar", ".lz4")
_MAGIC = ((b"\x1f\x8b\x08", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"PK\x03\x04", "zip"), (b"PK\x05\x06", "zip"),
          (b"\x28\xb5\x2f\xfd", "zstd"), (b"7z\xbc\xaf\x27\x1c", "7z"), (b"Rar!\x1a\x07", "rar"),
          (b"\x04\x22\x4d\x18", "lz4"), (b"\x1f\x9d", "compress"))
UNREADABLE = ("7z", "rar", "lz4", "compress", "brotli")
"""Compressed formats known by their magic (brotli, which has none, by its `.br` suffix) that the scan
cannot unpack: an unscanned archive at once."""
_END = struct.Struct("<4s4H2LH")
"""A zip's end of central directory record (22 bytes, then its comment)."""


def embedded_zip(data: bytes) -> bool:
    """Whether `data` ends with a zip whose end record is sound (members, its central directory right
    before it, its comment within the file): a zip after other bytes, as a self-extractor or a polyglot is."""
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - 65557))
    if at < 0 or len(data) < at + _END.size:
        return False
    _, disk, cd_disk, here, total, cd_size, cd_at, comment = _END.unpack_from(data, at)
    return (disk == cd_disk == 0 and here == total > 0 and cd_size + cd_at <= at and comment <= len(data) - at - 22
            and data[at - cd_size:at - cd_size + 4] == b"PK\x01\x02")


@dataclass
class Unpacked:
    """What an archive holds: (inner path, git mode, bytes) per member read, why it could not be
    read fully (None when every member was), and (label, bytes) of each field outside the members
    (`meta`: a zip's comment, a member's comment or extra field, a tar's pax header), scanned apart so
    that no header bytes run into them."""

    kind: str
    members: list[tuple[str, int, bytes]] = field(default_factory=list)
    problem: str | None = None
    meta: list[tuple[str, bytes]] = field(default_factory=list)
    nested: list[tuple[str, bytes]] = field(default_factory=list)
    """(inner path, bytes) of each archive found inside and unpacked in its place."""


def archive_kind(path: str, data: bytes) -> str | None:
    """`gzip`, `bzip2`, `xz`, `zstd`, `zip`, `tar` (or one of UNREADABLE) by the magic bytes of `data`,
    a zip by a sound end record after other bytes, else by the suffix of `path` (`"?"`: an archive's
    suffix on bytes of no known archive); None: not an archive."""
    if kind := next((k for magic, k in _MAGIC if data.startswith(magic)), None):
        return kind
    if data[:3] == b"BZh" and data[3:4].isdigit() and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    if data[257:262] == b"ustar":
        return "tar"
    if b"PK\x05\x06" in data[-65557:] and embedded_zip(data):
        return "zip"
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(".tar") and data:  # an old (v7) tar has no magic
        return "tar"
    if name.endswith(".br") and data:
        return "brotli"
    return "?" if name.endswith(SUFFIXES) and data else None


def unpack(path: str, data: bytes, depth: int = 1) -> Unpacked | None:
    """The members of the archive `data` (at `path`), an archive inside unpacked in its place, or None
    when it is not one. `depth`: the level `data` sits at (1: a file of the folder)."""
    kind = archive_kind(path, data)
    if kind is None:
        return None
    out = Unpacked(kind)
    if kind == "?":
        out.problem = "its name says archive but its bytes are no gzip, bzip2, xz, zstd, zip or tar"
        return out
    if kind in UNREADABLE or (kind == "zstd" and zstandard is None):
        out.problem = f"a {kind} file, which the scan cannot unpack"
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
    if out.problem is None:
        _open_nested(out, depth)
    return out


def _open_nested(out: Unpacked, depth: int) -> None:
    """Replace each member of `out` that is an archive by its own members (`inner.zip!path`), its
    fields and nested archives going with it, while all of them together stay within MAX_UNPACKED
    bytes and MAX_MEMBERS members; a problem of one inside is `out`'s problem, named by its path."""
    members: list[tuple[str, int, bytes]] = []
    size, count = sum(len(b) for _, _, b in out.members), len(out.members)
    for path, mode, data in out.members:
        if mode == SYMLINK or not archive_kind(path, data):
            members.append((path, mode, data))
            continue
        if depth >= MAX_DEPTH:
            out.problem = f"{path} is an archive {depth + 1} levels deep (the scan unpacks {MAX_DEPTH})"
            return
        inner = unpack(path, data, depth + 1)
        assert inner is not None  # archive_kind said it is one
        if inner.problem:
            out.problem = f"{path}: {inner.problem}"
            return
        size += sum(len(b) for _, _, b in inner.members)
        count += len(inner.members)
        if size > MAX_UNPACKED or count > MAX_MEMBERS:
            out.problem = _over(f"it unpacks, with the archives inside it, to more than {MAX_UNPACKED // 2**20} MB "
                                f"or {MAX_MEMBERS} members")
            return
        members += [(f"{path}!{p}", m, b) for p, m, b in inner.members]
        out.meta += [(f"{path}!{label}", b) for label, b in inner.meta]
        out.nested += [(path, data), *((f"{path}!{p}", b) for p, b in inner.nested)]
    out.members = members


def _over(what: str) -> str:
    return f"{what} (the scan reads at most {MAX_UNPACKED // 2**20} MB and {MAX_MEMBERS} members of an archive)"


def _stream(out: Unpacked, path: str, data: bytes) -> None:
    """A gzip/bzip2/xz stream: one member (the name without its suffix), or a tar's members."""
    opener, suffixes = _STREAMS[out.kind]
    with opener(io.BytesIO(data)) as f:
        chunks, size = [], 0
        while size <= MAX_UNPACKED and (chunk := f.read(MAX_UNPACKED + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        payload = b"".join(chunks)
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
        out.meta += [("zip comment", zf.comment)] if zf.comment else []
        out.meta += [(f"{i.filename}'s {what}", b) for i in infos[:MAX_MEMBERS]
                     for what, b in (("comment", i.comment), ("extra field", i.extra)) if b]
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
            if info.pax_headers:
                out.meta.append((f"{info.name}'s pax header", "".join(f"{k}={v}\n" for k, v in info.pax_headers.items()).encode()))
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


__all__ = ["MAX_DEPTH", "MAX_MEMBERS", "MAX_UNPACKED", "SUFFIXES", "UNREADABLE", "Unpacked", "archive_kind", "embedded_zip", "unpack"]
