#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the host and every plugin, and runs
# every test (unit tests of each module, end-to-end tests of the cvhost binary).
#   scripts/test.sh            everything (what CI runs: the .deb, the vivid VM, every server)
#   scripts/test.sh --quick    the unit tests of every module and the fuzz seeds alone: no VM,
#                              no .deb, no end-to-end run of the binary (a few minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 64 ;;
esac
scripts/install-deps.sh
swift build
if $quick; then
  # Swift Testing only: XCTest would print a second, empty summary.
  swift test --disable-xctest --filter 'CVHost(Core|Lines|Output|Analytics|Evidence|Plugins|Run|HTTP|Sources|V4L2)Tests|FuzzRegressionTests'
  exit 0
fi
# The Debian package, which a test installs into a fresh Debian 12 root (DebianPackageTests).
scripts/build-deb.sh .build/deb
# Swift Testing only: XCTest would print a second, empty summary.
swift test --disable-xctest
