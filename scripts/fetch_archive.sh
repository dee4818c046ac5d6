#!/usr/bin/env bash
# Shared by the fetch scripts (fetch_cifar10.sh, fetch_cifar100.sh, fetch_tiny_imagenet.sh, which
# set what differs): download an official archive (.tar.gz or .zip), check its md5, and move the
# folder it holds into DIR, all or none.
#
# FEDRUN_FETCH_URL overrides the source (an URL, or a local archive path: a copy you already
# have); FEDRUN_FETCH_MD5 overrides the expected checksum (for tests with a small archive).
set -euo pipefail
: "${ARCHIVE_NAME:?} ${ARCHIVE_URL:?} ${ARCHIVE_MD5:?} ${ARCHIVE_INNER:?} ${ARCHIVE_FILES:?}"
me="${ARCHIVE_SCRIPT:-fetch_archive}"
dir="${1:?usage: scripts/$me.sh DIR}"
url="${FEDRUN_FETCH_URL:-$ARCHIVE_URL}"
md5="${FEDRUN_FETCH_MD5:-$ARCHIVE_MD5}"
read -r -a files <<< "$ARCHIVE_FILES"

if [ -e "$dir/${files[0]}" ] && [ -e "$dir/${files[-1]}" ]; then
    echo "$me: $dir already holds $ARCHIVE_NAME" >&2
    exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
archive="$tmp/$(basename "$ARCHIVE_URL")"
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
mkdir "$tmp/out"
case "$archive" in
    *.zip)
        if command -v unzip > /dev/null; then
            unzip -q "$archive" -d "$tmp/out"
        else
            python3 -m zipfile -e "$archive" "$tmp/out"
        fi ;;
    *) tar -xzf "$archive" -C "$tmp/out" ;;
esac
src="$tmp/out/$ARCHIVE_INNER"
for f in "${files[@]}"; do
    if [ ! -e "$src/$f" ]; then
        echo "$me: the archive has no $ARCHIVE_INNER/$f" >&2
        exit 1
    fi
done
# move the contents in only once all are there, so DIR never holds half a data set
mv "$src"/* "$dir"/
echo "$me: $ARCHIVE_NAME unpacked into $dir" >&2
