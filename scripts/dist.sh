#!/usr/bin/env bash
# Builds this machine's release artifacts into dist/ and checks them (issue 44):
#   prefixlint-VERSION-cp39-abi3-manylinux2014_ARCH.manylinux_2_17_ARCH.whl
#       the `prefixlint` command and the Python module, for glibc 2.17 and later (zig links it
#       against glibc 2.17; auditwheel must confirm the tag);
#   prefixlint-VERSION-ARCH-unknown-linux-musl.tar.gz
#       a static-pie binary (musl, no shared library at all: any Linux) and the README;
#   prefixlint.1 (the man page, from the binary's `prefixlint man`)
#   SHA256SUMS
#       `sha256sum -c SHA256SUMS` in dist/ checks every artifact.
# Usage: bash scripts/dist.sh [wheel] [binary]   (no argument: both). dist/ is emptied first;
# PREFIXLINT_DIST_DIR names another folder. PREFIXLINT_DIST_PROFILE picks the cargo profile
# (default `dist`: release, stripped; Cargo.toml).
# Needs: cargo and rustup's ARCH-unknown-linux-musl target, python3 with venv, `file`. The
# build tools (maturin, zig, auditwheel: scripts/requirements/dist/) go to .tools/dist-venv.
set -euo pipefail
cd "$(dirname "$0")/.."

parts=("$@")
[ "${#parts[@]}" -gt 0 ] || parts=(wheel binary)
for part in "${parts[@]}"; do
  case "$part" in
    wheel | binary) ;;
    *) echo "scripts/dist.sh: unknown part '$part' (wheel, binary)" >&2; exit 2 ;;
  esac
done
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }

arch=$(uname -m)
case "$arch" in
  x86_64 | aarch64) ;;
  *) echo "scripts/dist.sh: no release target for $arch" >&2; exit 2 ;;
esac
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
profile=${PREFIXLINT_DIST_PROFILE:-dist}
# Cargo's folder for a profile: dev builds into debug/, every other profile into its name.
profile_dir=$profile
[ "$profile" != dev ] || profile_dir=debug
musl=$arch-unknown-linux-musl
target_dir=${CARGO_TARGET_DIR:-target}
dist=${PREFIXLINT_DIST_DIR:-$PWD/dist}

missing=()
command -v file >/dev/null || missing+=("file (Debian: apt-get install file)")
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=("python3 with venv (Debian: apt-get install python3-venv)")
if wants binary && ! rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
  missing+=("Rust's $musl target (rustup target add $musl)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "scripts/dist.sh needs:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

# The build tools, pinned, in a venv of their own, at its real path: .tools may link to a
# folder that several clones share (.ci/run's), and a venv's scripts name the path it was
# made at. The stamp holds that path too, so a venv made through another clone is remade.
tools=$(realpath -m "$PWD/.tools/dist-venv")
requirements=scripts/requirements/dist/requirements.txt
want=$( (cat "$requirements"; echo "$tools") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$tools/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$tools/bin/python" -m pip install -q -r "$requirements"
  echo "$want" > "$tools/.requirements.sha256"
fi
export PATH="$tools/bin:$PATH"

rm -rf "$dist"
mkdir -p "$dist"
# zig cc turns UBSan traps on in unoptimized C (the `dist-test` profile); off, as in a
# release's -O3 build.
export CFLAGS_${arch}_unknown_linux_gnu=-fno-sanitize=undefined
export CFLAGS_${arch}_unknown_linux_musl=-fno-sanitize=undefined
# The archive carries the last commit's time, so the same commit gives the same bytes.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

if wants wheel; then
  echo "== dist: manylinux2014 wheel ($profile profile)" >&2
  # maturin's --zig: zig compiles the C code and links against glibc 2.17's symbols.
  maturin build --locked --profile "$profile" --zig --compatibility manylinux2014 \
    --target "$arch-unknown-linux-gnu" --manifest-path python/Cargo.toml --out "$dist"
  wheel=$(ls "$dist"/prefixlint-"$version"-*.whl)
  shown=$(auditwheel show "$wheel")
  echo "$shown" >&2
  if [[ "$shown" != *"\"manylinux_2_17_$arch\""* || "$wheel" != *manylinux_2_17_"$arch"* ]]; then
    echo "scripts/dist.sh: $wheel is not manylinux_2_17_$arch" >&2
    exit 1
  fi
fi

if wants binary; then
  echo "== dist: static $musl binary ($profile profile)" >&2
  # zig is only the C compiler here (mimalloc, tree-sitter): rustc links with its own musl
  # start files and libc, which is what makes the binary static-pie. cc-rs passes Rust's
  # target triple as --target=, which zig spells differently: the wrapper drops it.
  mkdir -p "$target_dir/dist-tools"
  wrappers=$(cd "$target_dir/dist-tools" && pwd)
  cat > "$wrappers/zig-cc-$musl" <<EOF
#!/bin/sh
for arg do
  shift
  case "\$arg" in --target=*) ;; *) set -- "\$@" "\$arg" ;; esac
done
exec "$tools/bin/python" -m ziglang cc -target $arch-linux-musl "\$@"
EOF
  cat > "$wrappers/zig-ar" <<EOF
#!/bin/sh
exec "$tools/bin/python" -m ziglang ar "\$@"
EOF
  chmod +x "$wrappers/zig-cc-$musl" "$wrappers/zig-ar"
  triple_var=${musl//-/_}
  env "CC_$triple_var=$wrappers/zig-cc-$musl" "AR_$triple_var=$wrappers/zig-ar" \
    cargo build --locked --profile "$profile" --target "$musl" --bin prefixlint
  binary=$target_dir/$musl/$profile_dir/prefixlint
  kind=$(file -b "$binary")
  echo "$binary: $kind" >&2
  if [[ "$kind" != *"static-pie linked"* ]]; then
    echo "scripts/dist.sh: $binary is not static-pie" >&2
    exit 1
  fi
  # It runs, and checks the sample templates (exit 1: they have findings; 2 would be an error).
  status=0
  PREFIXLINT_NO_CACHE=1 "$binary" check --format concise fixtures/prompts >/dev/null || status=$?
  if [ "$status" -gt 1 ]; then
    echo "scripts/dist.sh: $binary check fixtures/prompts exited $status" >&2
    exit 1
  fi
  SOURCE_DATE_EPOCH=$epoch python3 scripts/dist-archive.py "$version" "$musl" "$binary" "$dist" >/dev/null
  # The man page, generated from the same clap definitions as --help (clap_mangen).
  "$binary" man > "$dist/prefixlint.1"
fi

(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort |
  xargs sha256sum -- > SHA256SUMS)
(cd "$dist" && sha256sum -c --quiet SHA256SUMS)
ls -l "$dist" >&2
