"""The hook repository's PEP 517 build backend: a wheel of metadata only.

pre-commit installs a `language: python` hook with `pip install .`. With setuptools as the
backend, pip would first download setuptools into an isolated build environment; this backend
needs nothing beyond the standard library, so the install fetches one thing, the prefixlint
wheel that setup.cfg pins. It reads setup.cfg with configparser (Python 3.9 has no tomllib).
"""

import base64
import configparser
import gzip
import hashlib
import io
import os
import re
import tarfile
import zipfile

# Fixed timestamps: the same sources give the same wheel and sdist, byte for byte.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _metadata():
    config = configparser.ConfigParser()
    with open("setup.cfg", encoding="utf-8") as file:
        config.read_file(file)
    meta = config["metadata"]
    requires = config["options"]["install_requires"]
    return {
        "name": meta["name"],
        "version": meta["version"],
        "summary": meta["description"],
        "requires_python": config["options"]["python_requires"],
        "requires": [line.strip() for line in requires.splitlines() if line.strip()],
    }


def _dist_name(meta):
    # The wheel spec's escaping of a name: runs of -_. become one underscore.
    return re.sub(r"[-_.]+", "_", meta["name"]).lower()


def _dist_info(meta):
    return f"{_dist_name(meta)}-{meta['version']}.dist-info"


def _metadata_files(meta):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {meta['name']}",
        f"Version: {meta['version']}",
        f"Summary: {meta['summary']}",
        f"Requires-Python: {meta['requires_python']}",
        *(f"Requires-Dist: {req}" for req in meta["requires"]),
    ]
    wheel = [
        "Wheel-Version: 1.0",
        "Generator: prefixlint-pre-commit _build/backend.py",
        "Root-Is-Purelib: true",
        "Tag: py3-none-any",
    ]
    return {
        "METADATA": "\n".join(lines) + "\n",
        "WHEEL": "\n".join(wheel) + "\n",
    }


def _read(path):
    with open(path, "rb") as file:
        return file.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    meta = _metadata()
    dist_info = os.path.join(metadata_directory, _dist_info(meta))
    os.makedirs(dist_info, exist_ok=True)
    for name, text in _metadata_files(meta).items():
        with open(os.path.join(dist_info, name), "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
    return _dist_info(meta)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    meta = _metadata()
    dist_info = _dist_info(meta)
    filename = f"{_dist_name(meta)}-{meta['version']}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as wheel:
        for name, text in _metadata_files(meta).items():
            data = text.encode("utf-8")
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{dist_info}/{name},sha256={digest.decode()},{len(data)}")
            wheel.writestr(zipfile.ZipInfo(f"{dist_info}/{name}", _ZIP_TIME), data)
        record.append(f"{dist_info}/RECORD,,")
        wheel.writestr(
            zipfile.ZipInfo(f"{dist_info}/RECORD", _ZIP_TIME), "\n".join(record) + "\n"
        )
    return filename


def build_sdist(sdist_directory, config_settings=None):
    meta = _metadata()
    base = f"{_dist_name(meta)}-{meta['version']}"
    filename = f"{base}.tar.gz"
    pkg_info = _metadata_files(meta)["METADATA"]
    sources = ["pyproject.toml", "setup.cfg", ".pre-commit-hooks.yaml", "_build/backend.py"]
    with open(os.path.join(sdist_directory, filename), "wb") as raw, gzip.GzipFile(
        fileobj=raw, mode="wb", mtime=0
    ) as compressed, tarfile.open(fileobj=compressed, mode="w") as sdist:
        entries = [(path, _read(path)) for path in sources]
        entries.append(("PKG-INFO", pkg_info.encode("utf-8")))
        for path, data in entries:
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size = len(data)
            info.mode = 0o644
            sdist.addfile(info, io.BytesIO(data))
    return filename
