#!/usr/bin/env bash
# Installs a release build of cvhost under PREFIX (default /usr/local):
#   PREFIX/bin/cvhost
#   PREFIX/lib/cvhost/plugins/libcvhost-*.so   (where cvhost looks for plugins by name)
#   PREFIX/include/cvhost/plugin.h             (for plugin authors)
#   PREFIX/share/cvhost/cvhost-events.schema.json
# The binaries find the Swift runtime through the toolchain they were built with
# (their RUNPATH names its runtime folder), so keep that toolchain installed.
#   scripts/install.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
swift build -c release >&2
bin=$(swift build -c release --show-bin-path)
install -d "$prefix/bin" "$prefix/lib/cvhost/plugins" "$prefix/include/cvhost" "$prefix/share/cvhost"
install -m 755 "$bin/cvhost" "$prefix/bin/cvhost"
for plugin in "$bin"/libcvhost-*.so; do install -m 755 "$plugin" "$prefix/lib/cvhost/plugins/"; done
install -m 644 Sources/CVHostPluginABI/include/cvhost/plugin.h "$prefix/include/cvhost/plugin.h"
install -m 644 schema/cvhost-events.schema.json "$prefix/share/cvhost/"
echo "installed cvhost and $(ls "$prefix/lib/cvhost/plugins" | wc -l) plugins under $prefix" >&2
