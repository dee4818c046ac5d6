#!/usr/bin/env bash
# Download the official CIFAR-100 binary archive, check its md5, and unpack it into DIR, so that
# `fedrun --data-dir DIR` finds train.bin and test.bin (`data.dataset = "cifar100"`).
#
#   scripts/fetch_cifar100.sh data/cifar100
#
# FEDRUN_FETCH_URL and FEDRUN_FETCH_MD5 override the source and the checksum, as for CIFAR-10.
set -euo pipefail
export ARCHIVE_SCRIPT=fetch_cifar100 ARCHIVE_NAME=CIFAR-100 \
    ARCHIVE_URL=https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz \
    ARCHIVE_MD5=03b5dce01913d631647c71ecec9e9cb8 ARCHIVE_INNER=cifar-100-binary \
    ARCHIVE_FILES="train.bin test.bin"
exec bash "$(dirname "$0")/fetch_archive.sh" "$@"
