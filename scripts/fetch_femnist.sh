#!/usr/bin/env bash
# LEAF's femnist, made from its official raw files by LEAF's own preprocessing: scripts/fetch_leaf.sh.
#
#   scripts/fetch_femnist.sh data/femnist
exec bash "$(dirname "$0")/fetch_leaf.sh" femnist "$@"
