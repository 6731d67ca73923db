"""A platform's zip read entry by entry, so that no one entry stops ``make collect``.

``readable_zip``: Python's zipfile refuses a whole archive when one entry's name is
flagged UTF-8 and is not; a copy with that flag cleared opens, and the entry is named
(collect reports it as SKIPPED). ``stored_name``: a file name a file system takes (a
Moodle upload's name may be 90 CJK characters, 270 bytes, past the 255 of most).
``canvas_match``: a Canvas upload's name read from the right, so that no sortable
name can claim another student's id.
"""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

MAX_NAME_BYTES = 200  # of a file's name on disk (255 on most file systems), with room


def stored_name(filename: str) -> str:
    """``filename`` as it can be stored: one past MAX_NAME_BYTES of UTF-8 (90 CJK
    characters are 270 bytes, a valid name on Moodle) is cut at a character and
    marked with a digest of the whole, its extension kept; "/" and NUL never pass."""
    if not isinstance(filename, str):
        raise ValueError(f"expected a file name, got {type(filename).__name__}")
    name = filename.replace("/", "_").replace("\0", "_") or "_"
    if len(name.encode("utf-8", "surrogatepass")) <= MAX_NAME_BYTES:
        return name
    stem, dot, suffix = name.rpartition(".") if "." in name[-12:] else (name, "", "")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    tail = f"-{digest}{dot}{suffix}"
    room = MAX_NAME_BYTES - len(tail.encode("utf-8", "surrogatepass"))
    cut = stem.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return cut + tail


def readable_zip(zip_path: Path, folder: Path) -> tuple[Path, list[str]]:
    """``zip_path``, or a copy of it in ``folder`` that Python's zipfile can open, and
    the entries' names that were not valid UTF-8 though flagged so (zipfile refuses
    the whole archive for one): in the copy, their flag is cleared (read as cp437)."""
    data = bytearray(zip_path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    if end < 0 or end + 22 > len(data):
        return zip_path, []
    count, _, offset = struct.unpack_from("<HII", data, end + 10)
    bad, at = [], offset
    for _ in range(count):
        if data[at : at + 4] != b"PK\x01\x02":
            return zip_path, []  # zip64 or damaged: left to zipfile as it is
        flags, name_len, extra_len, comment_len = (
            struct.unpack_from("<H", data, at + 8)[0],
            *struct.unpack_from("<HHH", data, at + 28),
        )
        local = struct.unpack_from("<I", data, at + 42)[0]
        raw = bytes(data[at + 46 : at + 46 + name_len])
        if flags & 0x800:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(raw.decode("cp437"))
                struct.pack_into("<H", data, at + 8, flags & ~0x800)
                if data[local : local + 4] == b"PK\x03\x04":
                    lflags = struct.unpack_from("<H", data, local + 6)[0]
                    struct.pack_into("<H", data, local + 6, lflags & ~0x800)
        at += 46 + name_len + extra_len + comment_len
    if not bad:
        return zip_path, []
    copy = folder / "readable.zip"
    copy.write_bytes(bytes(data))
    return copy, bad


# one "_[LATE_]<id>_<attachment id>_" of a Canvas upload's name, found at any place
CANVAS_KEY = re.compile(r"(?=(?:^|_)(?P<late>LATE_)?(?P<id>\d+|anon_[A-Za-z0-9]+)_(?P<sub>\d+)_(?P<file>.+)$)")


def canvas_match(entry: str) -> dict | None:
    """The parts of a Canvas upload's name (name, late, id, sub, file), read from the
    right: the last ``_[LATE_]<id>_<attachment id>_`` after a sortable name (which may
    itself hold "_<digits>_", as ``x_3002_1`` does) decides; None if none fits."""
    if not isinstance(entry, str):
        raise ValueError(f"expected a zip entry's name, got {type(entry).__name__}")
    found = None
    for m in CANVAS_KEY.finditer(entry):
        start = m.start()
        name = entry[:start]
        if (name == "LATE" or name.endswith("_LATE")) and m["late"] is None:
            continue  # "..._LATE_<id>_": the marker belongs to this key, found at its own place
        if re.fullmatch(r"\w*", name):
            found = {"name": name or None, "late": m["late"], "id": m["id"], "sub": m["sub"], "file": m["file"]}
    return found
