#!/usr/bin/env bash
# Download the official Tiny-ImageNet archive (tiny-imagenet-200.zip, 248 MB), check its md5, and
# unpack the tiny-imagenet-200 folder's contents into DIR, so that `fedrun --data-dir DIR` finds
# wnids.txt, train/ and val/ (`data.dataset = "tiny-imagenet"`). Unzips with unzip, or Python's
# zipfile where unzip is missing.
#
#   scripts/fetch_tiny_imagenet.sh data/tiny-imagenet-200
#
# FEDRUN_FETCH_URL and FEDRUN_FETCH_MD5 override the source and the checksum, as for CIFAR-10.
set -euo pipefail
export ARCHIVE_SCRIPT=fetch_tiny_imagenet ARCHIVE_NAME=Tiny-ImageNet \
    ARCHIVE_URL=http://cs231n.stanford.edu/tiny-imagenet-200.zip \
    ARCHIVE_MD5=90528d7ca1a48142e341f4ef8d21d0de ARCHIVE_INNER=tiny-imagenet-200 \
    ARCHIVE_FILES="wnids.txt train val/val_annotations.txt"
exec bash "$(dirname "$0")/fetch_archive.sh" "$@"
