#!/usr/bin/env python3
"""Packs a release binary: dist-archive.py VERSION TARGET BINARY OUT_DIR.

Writes OUT_DIR/prefixlint-VERSION-TARGET.tar.gz (a .zip for Windows targets): one folder of
that name holding the binary and README.md. The same inputs give the same bytes (sorted
entries, owner 0, the SOURCE_DATE_EPOCH time, else 1980-01-01), on every runner of the
release workflow (scripts/dist.sh and .github/workflows/release.yml use it), Windows included.
Prints the archive's path.
"""

import gzip
import io
import os
import pathlib
import sys
import tarfile
import time
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(argv):
    if len(argv) != 5:
        sys.exit("usage: dist-archive.py VERSION TARGET BINARY OUT_DIR")
    version, target, binary, out_dir = argv[1], argv[2], pathlib.Path(argv[3]), argv[4]
    name = f"prefixlint-{version}-{target}"
    windows = "windows" in target
    exe = "prefixlint.exe" if windows else "prefixlint"
    # A zip's time field starts at 1980; tar's at 1970.
    epoch = max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), 315532800)
    members = [(exe, binary.read_bytes(), 0o755), ("README.md", (ROOT / "README.md").read_bytes(), 0o644)]
    members.sort()
    os.makedirs(out_dir, exist_ok=True)
    if windows:
        path = pathlib.Path(out_dir, f"{name}.zip")
        stamp = time.gmtime(epoch)[:6]
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for member, data, mode in members:
                info = zipfile.ZipInfo(f"{name}/{member}", stamp)
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
    else:
        path = pathlib.Path(out_dir, f"{name}.tar.gz")
        with open(path, "wb") as raw, gzip.GzipFile(
            filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=epoch
        ) as compressed, tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive:
            folder = tarfile.TarInfo(name)
            folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, epoch
            archive.addfile(folder)
            for member, data, mode in members:
                info = tarfile.TarInfo(f"{name}/{member}")
                info.size, info.mode, info.mtime = len(data), mode, epoch
                archive.addfile(info, io.BytesIO(data))
    print(path)


if __name__ == "__main__":
    main(sys.argv)
