#!/usr/bin/env bash
# Download the official CIFAR-10 binary archive, check its md5, and unpack it into DIR, so that
# `fedrun --data-dir DIR` finds data_batch_1.bin … data_batch_5.bin and test_batch.bin.
#
#   scripts/fetch_cifar10.sh data/cifar10
#
# FEDRUN_CIFAR_URL overrides the source (an URL, or a local .tar.gz path: a copy you already
# have); FEDRUN_CIFAR_MD5 overrides the expected checksum (for tests with a small archive).
set -euo pipefail
dir="${1:?usage: scripts/fetch_cifar10.sh DIR}"
url="${FEDRUN_CIFAR_URL:-https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz}"
md5="${FEDRUN_CIFAR_MD5:-c32a1d4ab5d03f1284b67883e8d87530}"

if [ -f "$dir/data_batch_1.bin" ] && [ -f "$dir/test_batch.bin" ]; then
    echo "fetch_cifar10: $dir already holds CIFAR-10" >&2
    exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch_cifar10.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
archive="$tmp/cifar-10-binary.tar.gz"
if [ -f "$url" ]; then
    cp "$url" "$archive"
elif command -v curl > /dev/null; then
    curl -fL --retry 3 -o "$archive" "$url"
elif command -v wget > /dev/null; then
    wget -O "$archive" "$url"
else
    echo "fetch_cifar10: neither curl nor wget is installed" >&2
    exit 1
fi
got=$(md5sum "$archive" | cut -d' ' -f1)
if [ "$got" != "$md5" ]; then
    echo "fetch_cifar10: $url has md5 $got, expected $md5 (a broken or different download); nothing was unpacked" >&2
    exit 1
fi
# the archive holds cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin, batches.meta.txt, readme.html
tar -xzf "$archive" -C "$tmp"
src="$tmp/cifar-10-batches-bin"
for f in data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin; do
    if [ ! -f "$src/$f" ]; then
        echo "fetch_cifar10: the archive has no cifar-10-batches-bin/$f" >&2
        exit 1
    fi
done
# move the files in only once all are there, so DIR never holds half a data set
mv "$src"/* "$dir"/
echo "fetch_cifar10: CIFAR-10 unpacked into $dir" >&2
