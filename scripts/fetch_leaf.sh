#!/usr/bin/env bash
# LEAF's FEMNIST or CelebA as fedrun reads them (`data.dataset = "femnist"` / `"celeba"`): the
# official raw archives, each checked against its md5, turned into LEAF's JSON by LEAF's own
# preprocessing (github.com/TalwalkarLab/leaf, pinned below) with the full-data flags of LEAF's
# README and fixed sampling and split seeds, then moved into DIR only once complete.
#
#   scripts/fetch_leaf.sh femnist DIR     # NIST SD19 by_class.zip and by_write.zip (downloaded)
#   scripts/fetch_leaf.sh celeba DIR      # CelebA's files from FEDRUN_FETCH_DIR (see below)
#
# FEDRUN_FETCH_DIR: a folder holding the raw archives already (used instead of downloading; CelebA's
# img_align_celeba.zip, list_attr_celeba.txt and identity_CelebA.txt are on the authors' Google
# Drive, mmlab.ie.cuhk.edu.hk/projects/CelebA.html, and must be downloaded by hand into it).
# FEDRUN_LEAF: an existing LEAF checkout (its Python requirements installed) instead of cloning. FEDRUN_FETCH_MD5S: "name=md5 …"
# overrides for tests with small archives. Needs python3 with numpy and Pillow (LEAF's FEMNIST
# script calls Image.ANTIALIAS: Pillow < 10).
set -euo pipefail
name="${1:?usage: scripts/fetch_leaf.sh femnist|celeba DIR}"
dir="${2:?usage: scripts/fetch_leaf.sh femnist|celeba DIR}"
me="fetch_$name"
leaf_commit=09ec454a5675e32e1f0546b456b77857fdece018
case "$name" in
    femnist)
        files=(by_class.zip by_write.zip)
        md5s=(79572b1694a8506f2b722c7be54130c4 a29f21babf83db0bb28a2f77b2b456cb)
        url=https://s3.amazonaws.com/nist-srd/SD19
        raw=raw_data
        flags=(-s niid --sf 1.0 -k 0 -t sample --smplseed 0 --spltseed 0) ;;
    celeba)
        files=(img_align_celeba.zip list_attr_celeba.txt identity_CelebA.txt)
        md5s=(00d2c5bc6d35e252742224ab0c1e8fcb 75e246fa4810816ffd6ee81facbd244c 32bd1bd63d3c78cd57e08160ec5ed1e2)
        url=""
        raw=raw
        flags=(-s niid --sf 1.0 -k 5 -t sample --smplseed 0 --spltseed 0) ;;
    *) echo "$me: unknown data set $name (femnist or celeba)" >&2; exit 2 ;;
esac

if [ -d "$dir/train" ] && [ -d "$dir/test" ]; then
    echo "$me: $dir already holds LEAF $name (train/ and test/)" >&2
    exit 0
fi
if [ -z "${FEDRUN_LEAF:-}" ] && ! python3 -c 'import numpy, PIL' 2> /dev/null; then
    echo "$me: LEAF's preprocessing needs python3 with numpy and Pillow (pip install numpy 'pillow<10')" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# the raw files, each checked
mkdir "$tmp/raw"
for i in "${!files[@]}"; do
    f="${files[$i]}"
    want="${md5s[$i]}"
    for o in ${FEDRUN_FETCH_MD5S:-}; do [ "${o%%=*}" = "$f" ] && want="${o#*=}"; done
    if [ -n "${FEDRUN_FETCH_DIR:-}" ] && [ -f "$FEDRUN_FETCH_DIR/$f" ]; then
        cp "$FEDRUN_FETCH_DIR/$f" "$tmp/raw/$f"
    elif [ -n "$url" ]; then
        curl -fL --retry 3 -o "$tmp/raw/$f" "$url/$f"
    else
        echo "$me: $f is not in FEDRUN_FETCH_DIR (${FEDRUN_FETCH_DIR:-unset}); download it by hand from CelebA's page" >&2
        exit 1
    fi
    got=$(md5sum "$tmp/raw/$f" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        echo "$me: $f has md5 $got, expected $want (a broken or different download); nothing was made" >&2
        exit 1
    fi
done

# LEAF, pinned
if [ -n "${FEDRUN_LEAF:-}" ]; then
    cp -r "$FEDRUN_LEAF" "$tmp/leaf"
else
    git clone -q https://github.com/TalwalkarLab/leaf "$tmp/leaf"
    git -C "$tmp/leaf" checkout -q "$leaf_commit"
fi
work="$tmp/leaf/data/$name"
mkdir -p "$work/data/$raw"
for f in "${files[@]}"; do
    case "$f" in
        *.zip) python3 -m zipfile -e "$tmp/raw/$f" "$work/data/$raw" ;;
        *) mv "$tmp/raw/$f" "$work/data/$raw/" ;;
    esac
done
(cd "$work" && ./preprocess.sh "${flags[@]}")
for part in train test; do
    if ! ls "$work/data/$part/"*.json > /dev/null 2>&1; then
        echo "$me: LEAF's preprocessing wrote no $part JSON; nothing was moved into $dir" >&2
        exit 1
    fi
done
# move in only once all is there, so DIR never holds half a data set
mkdir -p "$dir"
if [ "$name" = celeba ]; then
    mkdir -p "$dir/raw"
    mv "$work/data/raw/img_align_celeba" "$dir/raw/"
fi
mv "$work/data/train" "$work/data/test" "$dir/"
echo "$me: LEAF $name (train/, test/) made in $dir with LEAF's preprocessing at $leaf_commit" >&2
