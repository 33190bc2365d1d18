#!/usr/bin/env python3
"""Points a binary's absolute-path dependency at another file, in place.

    relink.py BINARY OLD_PATH NEW_PATH

thinkwire links libmlxc by the absolute path setup built it at (its install
name). The GPU run recreates that path; the CPU dry run instead points its
scratch copies of the binaries at the bundle's own libmlxc, so that it runs
what the bundle holds even while the local install is being rebuilt. The
path is a NUL-terminated string in the dynamic string table: it is
overwritten with NEW_PATH, padded with NULs, so NEW_PATH may not be longer.
"""

import sys


def main():
    binary, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
    if len(new) > len(old):
        sys.exit(f"{new.decode()} is longer than {old.decode()}")
    with open(binary, "rb") as f:
        data = bytearray(f.read())
    needle = b"\0" + old + b"\0"
    count = data.count(needle)
    if count != 1:
        sys.exit(f"{binary}: {old.decode()} found {count} times, expected once")
    at = data.index(needle) + 1
    data[at : at + len(old)] = new + bytes(len(old) - len(new))
    with open(binary, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
