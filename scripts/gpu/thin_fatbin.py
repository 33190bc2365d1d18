#!/usr/bin/env python3
"""Thins the CUDA fat binary inside a shared library to one GPU architecture.

    thin_fatbin.py IN OUT [--arch 90]

The `.nv_fatbin` section of MLX's CUDA `libmlx.so` holds, for every kernel
translation unit, a blob of device code: one cubin (ELF) per architecture it
was built for (sm_75 ... sm_121) and PTX for the newest. A GPU loads only the
cubin of its own architecture, so every other payload is dead weight for a
given machine. This script zeroes those payloads in place: sizes, offsets and
entry headers stay as they were, so the ELF layout is untouched and the file
still loads; the zeros then compress to almost nothing.

Layout (little endian), as measured on mlx-cuda-13 0.32.4:
  blob header (16 bytes): u32 magic 0xBA55ED50, u16 version, u16 header
    size, u64 size of the entries that follow the header;
  entry header: u16 kind (1 PTX, 2 ELF cubin), u16 version, u32 header size,
    u64 payload size (padded), ..., u32 SM version at byte 28 (90 = sm_90);
    the payload follows the header.
Blobs follow each other, sometimes with zero padding between them.
"""

import argparse
import collections
import shutil
import struct
import sys

BLOB_MAGIC = 0xBA55ED50
KIND_NAMES = {1: "ptx", 2: "cubin"}


def find_section(data, wanted):
    """(file offset, size) of the ELF64 section named `wanted`."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("not a little-endian ELF64 file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        # name, type, flags, addr, offset, size, ...
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    names_offset = header(shstrndx)[4]
    for i in range(shnum):
        name_at, _type, _flags, _addr, offset, size = header(i)
        start = names_offset + name_at
        name = bytes(data[start : data.index(b"\0", start)]).decode()
        if name == wanted:
            return offset, size
    sys.exit(f"no {wanted} section")


def thin(data, arch):
    """Zeroes every payload but arch's cubins; returns statistics."""
    offset, size = find_section(data, ".nv_fatbin")
    end = offset + size
    kept = collections.Counter()
    zeroed = collections.Counter()
    blobs = 0
    pos = offset
    while pos + 16 <= end:
        magic, _version, header_size, blob_size = struct.unpack_from("<IHHQ", data, pos)
        if magic != BLOB_MAGIC:
            pos += 8  # padding between blobs (blobs are 8-byte aligned)
            continue
        blobs += 1
        entry = pos + header_size
        blob_end = entry + blob_size
        if blob_end > end:
            sys.exit(f"blob at {pos - offset:#x} runs past the section")
        while entry < blob_end:
            kind, _ev, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            (sm,) = struct.unpack_from("<I", data, entry + 28)
            if entry_header < 32 or entry + entry_header + payload > blob_end:
                sys.exit(f"malformed entry at {entry - offset:#x}")
            key = (KIND_NAMES.get(kind, f"kind{kind}"), sm)
            start = entry + entry_header
            if kind == 2 and sm == arch:
                kept[key] += payload
            else:
                data[start : start + payload] = bytes(payload)
                zeroed[key] += payload
            entry = start + payload
        pos = blob_end
    if not kept:
        sys.exit(f"no sm_{arch} cubin in the fat binary (have: {sorted(zeroed)})")
    return blobs, size, kept, zeroed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--arch", type=int, default=90, help="SM version to keep (default 90)")
    args = parser.parse_args()
    with open(args.input, "rb") as f:
        data = bytearray(f.read())
    blobs, size, kept, zeroed = thin(data, args.arch)
    tmp = args.output + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    shutil.copymode(args.input, tmp)
    shutil.move(tmp, args.output)
    mib = 1 << 20
    print(
        f"{args.input}: .nv_fatbin {size / mib:.1f} MiB in {blobs} blobs; "
        f"kept sm_{args.arch} cubins {sum(kept.values()) / mib:.1f} MiB, zeroed "
        + ", ".join(f"{k}_{s} {v / mib:.1f}" for (k, s), v in sorted(zeroed.items()))
        + " MiB"
    )


if __name__ == "__main__":
    main()
