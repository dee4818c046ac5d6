#!/usr/bin/env bash
# Download the official CIFAR-10 binary archive, check its md5, and unpack it into DIR, so that
# `fedrun --data-dir DIR` finds data_batch_1.bin … data_batch_5.bin and test_batch.bin.
#
#   scripts/fetch_cifar10.sh data/cifar10
#
# FEDRUN_FETCH_URL overrides the source (an URL, or a local .tar.gz path: a copy you already
# have); FEDRUN_FETCH_MD5 overrides the expected checksum (for tests with a small archive).
set -euo pipefail
export ARCHIVE_SCRIPT=fetch_cifar10 ARCHIVE_NAME=CIFAR-10 \
    ARCHIVE_URL=https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz \
    ARCHIVE_MD5=c32a1d4ab5d03f1284b67883e8d87530 ARCHIVE_INNER=cifar-10-batches-bin \
    ARCHIVE_FILES="data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin"
exec bash "$(dirname "$0")/fetch_archive.sh" "$@"
