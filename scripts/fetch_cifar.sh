#!/usr/bin/env bash
# Shared by fetch_cifar10.sh and fetch_cifar100.sh (which set what differs): download an official
# CIFAR binary archive, check its md5, and unpack its files into DIR, all or none.
#
# FEDRUN_CIFAR_URL overrides the source (an URL, or a local .tar.gz path: a copy you already
# have); FEDRUN_CIFAR_MD5 overrides the expected checksum (for tests with a small archive).
set -euo pipefail
: "${CIFAR_NAME:?} ${CIFAR_ARCHIVE:?} ${CIFAR_MD5:?} ${CIFAR_INNER:?} ${CIFAR_FILES:?}"
me="fetch_$(echo "$CIFAR_NAME" | tr -d '-' | tr 'A-Z' 'a-z')"
dir="${1:?usage: scripts/$me.sh DIR}"
url="${FEDRUN_CIFAR_URL:-https://www.cs.toronto.edu/~kriz/$CIFAR_ARCHIVE}"
md5="${FEDRUN_CIFAR_MD5:-$CIFAR_MD5}"
read -r -a files <<< "$CIFAR_FILES"

if [ -f "$dir/${files[0]}" ] && [ -f "$dir/${files[-1]}" ]; then
    echo "$me: $dir already holds $CIFAR_NAME" >&2
    exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
archive="$tmp/$CIFAR_ARCHIVE"
if [ -f "$url" ]; then
    cp "$url" "$archive"
elif command -v curl > /dev/null; then
    curl -fL --retry 3 -o "$archive" "$url"
elif command -v wget > /dev/null; then
    wget -O "$archive" "$url"
else
    echo "$me: neither curl nor wget is installed" >&2
    exit 1
fi
got=$(md5sum "$archive" | cut -d' ' -f1)
if [ "$got" != "$md5" ]; then
    echo "$me: $url has md5 $got, expected $md5 (a broken or different download); nothing was unpacked" >&2
    exit 1
fi
tar -xzf "$archive" -C "$tmp"
src="$tmp/$CIFAR_INNER"
for f in "${files[@]}"; do
    if [ ! -f "$src/$f" ]; then
        echo "$me: the archive has no $CIFAR_INNER/$f" >&2
        exit 1
    fi
done
# move the files in only once all are there, so DIR never holds half a data set
mv "$src"/* "$dir"/
echo "$me: $CIFAR_NAME unpacked into $dir" >&2
