#!/usr/bin/env bash
# Fuzzes every parser of bytes that someone else wrote (fuzz/targets/FuzzTarget.swift: plugin
# files, results, config files, plugin options, stdin commands, /controls bodies, worker messages,
# MJPEG frames, spool segments, RTSP packets with arrival times, plugin results through the analytics and
# evidence, evidence indexes, snapshot regions) with libFuzzer and AddressSanitizer, each target for SECONDS (default 60), starting
# from its seeds in fuzz/corpus/TARGET.
#   scripts/fuzz.sh [SECONDS] [TARGET...]        JOBS=2 scripts/fuzz.sh 600   (two targets at once)
# A finding (a crash, a trap such as an overflow, a memory error, an input that takes over 10 s,
# more than 2 GB, or a broken check of the target) stops that target; its input is copied to
# fuzz/findings/TARGET/ and the script exits 1 after the others have run. Fix the code and keep the
# file: FuzzRegressionTests replays every finding in every test run. The corpus a run grows is
# kept in .build/fuzz-corpus/TARGET (the next run starts from it too); fuzz logs in .build/fuzz-logs.
# The build (its own scratch folder, .build/fuzz) takes about 5 minutes the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 64; }
shift || true
all=(plugin-file json-result config-file plugin-options stdin-commands controls-body worker-message mjpeg-frame spool-record rtsp-packets
     result-stages evidence-index snapshot-region site-entries)
targets=("${@:-${all[@]}}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target '$t': the targets are ${all[*]}" >&2; exit 64; }
done
jobs=${JOBS:-1}

# The plugin-options target checks options against the barcode plugin, found beside the plain build.
swift build --product cvhost-barcode >&2
# Coverage for libFuzzer and AddressSanitizer in every module (Swift and C); libFuzzer's driver
# without its main (the target's main hands over to it: SwiftPM names an executable's main itself).
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")
libfuzzer=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1)
[ -n "$libfuzzer" ] || { echo "fuzz.sh: no libclang_rt.fuzzer_no_main in $toolchain/lib/clang: this Swift toolchain has no libFuzzer" >&2; exit 69; }
swift build --product cvhost-fuzz --scratch-path .build/fuzz -Xswiftc -DFUZZING \
  -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table \
  -Xcc -fsanitize=address -Xcc -fsanitize-coverage=inline-8bit-counters,indirect-calls,trace-cmp,pc-table \
  -Xlinker "$libfuzzer" -Xlinker -lstdc++ >&2
fuzzer=.build/fuzz/debug/cvhost-fuzz
export CVHOST_PLUGIN_PATH=$PWD/.build/debug
# CPluginGuard's per-thread signal stack and ASan's own do not mix (FACTS: sanitizers).
export ASAN_OPTIONS=use_sigaltstack=0:detect_leaks=0
mkdir -p .build/fuzz-logs

fuzz_one() {
  local t=$1 grown=.build/fuzz-corpus/$1 findings=fuzz/findings/$1 log=.build/fuzz-logs/$1.log
  mkdir -p "$grown" "$findings"
  local status=0
  CVHOST_FUZZ_TARGET=$t "$fuzzer" "$grown" "fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ "$status" = 0 ]; then
    echo "fuzz: $t: ${runs:-?} inputs in ${seconds} s, ${cov:-cov: ?}, no finding"
  else
    echo "fuzz: $t: FINDING after ${runs:-?} inputs (exit $status): $(ls -t "$findings" | head -1 | sed "s|^|$findings/|")"
    grep -m3 -E 'ERROR|Fatal error|fuzz check failed|deadly signal|timeout' "$log" | sed 's/^/    /' || true
    echo "    whole log: $log"
    return 1
  fi
}

failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || failed=1; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
exit $failed
