#!/usr/bin/env bash
# Fetches the official test suite of the pinned apache-tvm-ffi release (its PyPI sdist, checked
# against a pinned SHA-256) into .peer/tvm-ffi-tests, for crates/pactum-capi/tests/all/python_upstream.rs,
# which runs it on the official libtvm_ffi.so and on pactum's. Nothing fetched is committed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version=0.1.15.post2
sha256=909be9ef5af07726aa9afd38a3111abc4d86cfd5927ebedfa9166232ce7d287b
url="https://files.pythonhosted.org/packages/a8/8f/2fcd88ce2f43dd2c1945c6613356a9bc1f5fdbe6e37080d34d2b980ad9f6/apache_tvm_ffi-$version.tar.gz"
dest=.peer/tvm-ffi-tests
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$version" ]; then
  exit 0
fi
mkdir -p .peer
archive=".peer/apache_tvm_ffi-$version.tar.gz"
if [ ! -f "$archive" ] || ! echo "$sha256  $archive" | sha256sum -c --quiet - 2>/dev/null; then
  curl -fsSL --retry 3 -o "$archive.part" "$url"
  mv "$archive.part" "$archive"
fi
echo "$sha256  $archive" | sha256sum -c --quiet -
rm -rf "$dest" ".peer/extract"
mkdir -p ".peer/extract"
tar xzf "$archive" -C .peer/extract "apache_tvm_ffi-$version/tests/python"
mv ".peer/extract/apache_tvm_ffi-$version/tests/python" "$dest"
rm -rf .peer/extract
echo "$version" > "$dest/VERSION"
echo "official tests of apache-tvm-ffi $version in $dest"
