# Sourced by .ci/typecheck and .ci/lint-imports: static tools read the kubetrio namespace from
# src/, whose symlinks lay the top-level folders out the way the package is installed.
# Sets $top and $tree.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tree=$top/src
