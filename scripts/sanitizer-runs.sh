#!/usr/bin/env bash
# Builds cvhost and its plugins with a sanitizer (address: ASan + LeakSanitizer; thread: TSan) and
# runs the representative runs under it: the bundled plugins in and out of cvhost's process,
# parallel instances and the ordered stage, several inputs at once, and the broken fixture plugins
# (emit from a plugin's own thread, a crash contained in a worker, a hang that holds a stop).
# Fails when the sanitizer reports anything. No option turns a check off.
#   scripts/sanitizer-runs.sh address|thread
# A build takes 5-10 minutes on 2 cores (its own scratch folder, /tmp/cvhost-<sanitizer>); not
# part of scripts/test.sh for that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case "$kind" in
address) swiftflag=address cflag=address ;;
thread) swiftflag=thread cflag=thread ;;
*) echo "usage: scripts/sanitizer-runs.sh address|thread" >&2; exit 64 ;;
esac
scratch=/tmp/cvhost-$kind
# --export-dynamic: the sanitizer's runtime is linked into cvhost; plugins built with it (the
# Swift motion plugin) find its entry points there.
swift build --scratch-path "$scratch" -Xswiftc -sanitize=$swiftflag -Xcc -fsanitize=$cflag -Xlinker --export-dynamic
bin=$scratch/debug/cvhost
fixtures=$scratch/fixtures
mkdir -p "$fixtures"
# The fixtures with the toolchain's clang: the sanitizer runtime must be the one cvhost carries.
for f in "emitthread EMIT_FROM_THREAD" "crash CRASH_ON_FRAME" "hang HANG_ON_FRAME" "ordered ORDERED_STAGE"; do
  set -- $f
  clang -shared -fPIC -g -O1 -fsanitize=$cflag -ISources/CVHostPluginABI/include -DPLUGIN_NAME="\"$1\"" -D"$2" \
    Tests/Fixtures/broken-plugin.c -o "$fixtures/libcvhost-$1.so" -lpthread
done
export ASAN_OPTIONS=detect_leaks=1 TSAN_OPTIONS=report_signal_unsafe=0
log=$(mktemp -d)
failed=0
# run NAME EXPECTED_EXIT ARGS...: one run; its stderr kept in $log/NAME.err
run() {
  local name=$1 expected=$2
  shift 2
  local rc=0
  timeout -k 5 300 "$bin" run -q --metrics-interval 0 "$@" > "$log/$name.out" 2> "$log/$name.err" || rc=$?
  # A worker killed on purpose (the crash fixture) is reported by the sanitizer as the SEGV it
  # is: that report is the plugin's crash, not a finding. Every other report is.
  local reports
  reports=$(grep -E "(WARNING|ERROR): (Address|Thread|Leak)Sanitizer" "$log/$name.err" | grep -vc "SEGV on unknown address" || true)
  if [ "$rc" != "$expected" ] || [ "$reports" != 0 ]; then
    echo "FAIL $name: exit $rc (expected $expected), $reports sanitizer reports (see $log/$name.err)"
    failed=1
  else
    echo "ok   $name ($(wc -l < "$log/$name.out") lines)"
  fi
}
run barcode-video 0 --plugin barcode:instances=2 --plugin null:results=1 --input examples/demo/codes.mp4
faces=../shared/corpus/video/faces_1280x720.mp4  # the benchmark corpus beside the project, when it is there
[ -f "$faces" ] || faces=examples/demo/codes.mp4
run face-ordered 0 --plugin face:instances=2 --input "$faces" --max-frames 40
run motion-two-inputs 0 --plugin motion --plugin null --input a=testsrc:320x240@30 --input b=examples/demo/codes.mp4 --max-frames 40
run isolated 0 --plugin null:results=2,instances=2 --plugin barcode:isolation=process --input testsrc:320x240@60 --max-frames 60
run emit-from-thread 0 --plugin "$fixtures/libcvhost-emitthread.so" --plugin null:results=1 --input testsrc:160x120@30 --max-frames 40
run ordered-stage 0 --plugin "$fixtures/libcvhost-ordered.so:instances=3" --input testsrc:160x120@30:unpaced --max-frames 100
run crash-contained 0 --plugin "$fixtures/libcvhost-crash.so:isolation=process" --plugin null:results=1 --input testsrc:160x120@30 --max-frames 60
run hang-held-stop 20 --plugin "$fixtures/libcvhost-hang.so" --plugin null:results=1 --input testsrc:160x120@30 --duration 3
exit $failed
