# Sourced by .ci/typecheck and .ci/lint-imports: the top-level folders only become kubetrio.*
# through setuptools' package-dir mapping, which static tools cannot follow, so they read a
# tree of symlinks laid out the way the package is installed. Sets $top and $tree.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/kubetrio"
for part in runtime api controllers cmd testing emulator sim config; do
  ln -s "$top/$part" "$tree/kubetrio/$part"
done
