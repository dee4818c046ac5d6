#!/usr/bin/env bash
# LEAF's celeba, made from its official raw files by LEAF's own preprocessing: scripts/fetch_leaf.sh.
#
#   scripts/fetch_celeba.sh data/celeba
exec bash "$(dirname "$0")/fetch_leaf.sh" celeba "$@"
