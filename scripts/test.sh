#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the host and every plugin, and runs
# every test (unit tests of each module, end-to-end tests of the cvhost binary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build
# The Debian package, which a test installs into a fresh Debian 12 root (DebianPackageTests).
scripts/build-deb.sh .build/deb
# Swift Testing only: XCTest would print a second, empty summary.
swift test --disable-xctest
