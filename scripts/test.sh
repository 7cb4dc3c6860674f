#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the host and every plugin, and runs
# every test (unit tests of each module, end-to-end tests of the cvhost binary).
#   scripts/test.sh            everything (what CI runs: the .deb, the vivid VM, every server)
#   scripts/test.sh --quick    the unit tests of every module and the fuzz seeds alone: no VM,
#                              no .deb, no end-to-end run of the binary; on a tree already built
#                              it installs nothing first (under a minute)
#   scripts/test.sh --loaded   everything, beside stress-ng keeping twice the cores busy (what a
#                              shared CI machine does to the suite): a test must pass there too
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
loaded=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  --loaded) loaded=true ;;
  *) echo "usage: scripts/test.sh [--quick|--loaded]" >&2; exit 64 ;;
esac
# The quick tier on a tree already built needs nothing the build did not: it skips the installer
# (which checks every test package and the virtual environments).
if ! $quick || [ ! -x .build/debug/cvhost ]; then scripts/install-deps.sh --tests; fi
if $loaded; then
  stress-ng --cpu "$((2 * $(nproc)))" --timeout 0 --quiet &
  stress=$!
  trap 'kill "$stress" 2>/dev/null || true' EXIT
  echo "test.sh: beside stress-ng --cpu $((2 * $(nproc))) (pid $stress)" >&2
fi
swift build
if $quick; then
  # Swift Testing only: XCTest would print a second, empty summary.
  swift test --disable-xctest --filter 'CVHost(Core|Lines|Output|Analytics|Motion|Evidence|Events|Plugins|Run|HTTP|Sources|V4L2|Fleet)Tests|FuzzRegressionTests'
  exit 0
fi
# The Debian package, which a test installs into a fresh Debian 12 root (DebianPackageTests).
scripts/build-deb.sh .build/deb
# Swift Testing only: XCTest would print a second, empty summary.
swift test --disable-xctest
