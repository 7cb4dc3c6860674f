#!/usr/bin/env bash
# Builds cvhost and its plugins with a sanitizer (address: ASan + LeakSanitizer; thread: TSan) and
# runs the representative runs under it: the bundled plugins in and out of cvhost's process,
# parallel instances and the ordered stage, several inputs at once, frames scaled for the plugins
# that ask (begun on other threads as they are queued), the detect plugin, tracks, zones and lines on
# a plugin's boxes (their events kept in the event store, on its own queue), the broken fixture plugins
# (emit from a plugin's own thread, a crash contained in a worker, a hang that holds a stop), the
# live view with a client on every route while frames flow, a Python plugin with instances=2 and
# a reload, an RTSP camera (frames joined on a reader thread), one with a record stream (clips and
# snapshots from it, on a thread of its own) and one that sends a frame without end,
# an MQTT output to a real broker (one with Home Assistant's discovery: states kept from every writer's
# lines), and NATS and Kafka (ASan only) outputs through spools, a damaged spool recovered; a fleet's
# node taking and giving back inputs.
# Run it after any change to threads or locks.
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
for f in "emitthread EMIT_FROM_THREAD" "crash CRASH_ON_FRAME" "hang HANG_ON_FRAME" "ordered ORDERED_STAGE" \
         "sized REQUEST_FRAMES=64,64,CVHOST_RESIZE_LETTERBOX,114,0x33424752"; do
  set -- $f
  clang -shared -fPIC -g -O1 -fsanitize=$cflag -ISources/CVHostPluginABI/include -DPLUGIN_NAME="\"$1\"" -D"$2" \
    Tests/Fixtures/broken-plugin.c -o "$fixtures/libcvhost-$1.so" -lpthread
done
# LSan's one known false report on Swift (weak references' side tables): scripts/lsan-suppressions.txt.
export ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/scripts/lsan-suppressions.txt TSAN_OPTIONS=report_signal_unsafe=0
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
# Its boxes followed (two instances, results put in order), watched by a zone and a line; their
# counts kept beside a state file (the totals' thread) and set back daily.
mkdir -p "$log/state" && chmod 700 "$log/state"
run tracked 0 --plugin face:instances=2 --input "$faces" --max-frames 40 --track face --zone 'z=0,0 0.5,0 0.5,1 0,1' --line 'l=0.5,0 0.5,1' \
  --snapshots "$log/tracked-snapshots" --events-db "$log/events.sqlite" --state "$log/state/state.json" --reset-counts-at 00:00
# Nothing moves in 40 frames of either input: no result, exit 22 (as for any run that finds nothing).
run motion-two-inputs 22 --plugin motion --plugin null --input a=testsrc:320x240@30 --input b=examples/demo/codes.mp4 --max-frames 40
run isolated 0 --plugin null:results=2,instances=2 --plugin barcode:isolation=process --input testsrc:320x240@60 --max-frames 60
run emit-from-thread 0 --plugin "$fixtures/libcvhost-emitthread.so" --plugin null:results=1 --input testsrc:160x120@30 --max-frames 40
run ordered-stage 0 --plugin "$fixtures/libcvhost-ordered.so:instances=3" --input testsrc:160x120@30:unpaced --max-frames 100
run crash-contained 0 --plugin "$fixtures/libcvhost-crash.so:isolation=process" --plugin null:results=1 --input testsrc:160x120@30 --max-frames 60
run hang-held-stop 20 --plugin "$fixtures/libcvhost-hang.so" --plugin null:results=1 --input testsrc:160x120@30 --duration 3
# Frames at the plugins' size: two instances, and the same plugin turned in a worker, on one video.
# (A few frames: a quarter turn is made in Swift, which the sanitizer slows a hundredfold.)
run scaled-frames 0 --plugin "$fixtures/libcvhost-sized.so:instances=2" --plugin "$fixtures/libcvhost-sized.so:isolation=process,rotate=90" \
  --input examples/demo/codes.mp4 --max-frames 12
# The detect plugin (onnxruntime in .venv-onnx, scripts/install-deps.sh --tests) on a test model, two instances.
if [ -x .venv-onnx/bin/python3 ]; then
  /usr/bin/python3 Tests/Fixtures/detect_models.py "$log"
  CVHOST_PYTHON=.venv-onnx/bin/python3 run detect 0 --plugin "detect:model=$log/yolov8.onnx,instances=2" --input examples/demo/codes.mp4
else
  echo "FAIL detect: no .venv-onnx (run scripts/install-deps.sh --tests)"
  failed=1
fi
# free_port: a loopback port nobody listens on now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The live view: the page, the MJPEG stream, the event stream, /metrics and POST /controls, all
# while frames flow (clients start once /healthz answers).
port=$(free_port)
(
  for _ in $(seq 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
  curl -s -o /dev/null "http://127.0.0.1:$port/"
  curl -s -o /dev/null --max-time 3 "http://127.0.0.1:$port/stream.mjpg" &
  curl -s -o /dev/null --max-time 3 "http://127.0.0.1:$port/events" &
  for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/metrics"; curl -s -o /dev/null "http://127.0.0.1:$port/snapshot.jpg"; done
  for body in '{"command":"set_plugin","plugin":"barcode","enabled":false}' '{"command":"set_plugin","plugin":"barcode","enabled":true}' \
              '{"command":"get_controls"}'; do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$port/controls"
  done
  wait
) &
run live-view 0 --plugin barcode --plugin null:results=1 --input testsrc:640x480@30 --http "127.0.0.1:$port" --duration 15
wait

# A Python plugin in two workers, reloaded mid-run by a change of its file.
python_dir=$(mktemp -d)
cp examples/python/sharpness.py "$python_dir/"
( sleep 8; echo "# changed" >> "$python_dir/sharpness.py" ) &
CVHOST_PYTHON=/usr/bin/python3 run python-reload 0 --plugin "$python_dir/sharpness.py:instances=2,threshold=1e9" --input testsrc:320x240@30 --duration 15
wait

# An RTSP camera (GStreamer's RTSP server serving the demo) whose frames are joined as they arrive,
# on a reader thread of their own; the file's end is a lost connection (exit 2). Then the same as a
# camera's two streams: the record stream read on a thread of its own for clips and snapshots.
coproc rtsp { /usr/bin/python3 Tests/Servers/rtsp_server.py --file examples/demo/codes.mp4 --also main=examples/demo/codes.mp4; }
read -r _ rtsp_port <&"${rtsp[0]}"
run rtsp-live 2 --plugin barcode --plugin null:results=1 --input "rtsp://127.0.0.1:$rtsp_port/codes"
run rtsp-record 2 --plugin barcode --input "door=rtsp://127.0.0.1:$rtsp_port/codes,record=rtsp://127.0.0.1:$rtsp_port/main" \
  --clips "$log/record-clips:on=result,pre=1,post=1" --snapshots "$log/record-snapshots:from=record"
kill "$rtsp_PID"; wait "$rtsp_PID" 2>/dev/null || true
# A camera that sends one frame without end (100 MB of one timestamp): the joiner's caps drop it
# and joining resumes at the next frame.
ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 50 -c:v libx264 -bf 0 -x264-params slices=1 \
  -pix_fmt yuv420p -f h264 "$log/hostile.h264"
coproc hostile { /usr/bin/python3 Tests/Servers/hostile_rtsp_server.py --clip "$log/hostile.h264" --endless 100; }
read -r _ hostile_port <&"${hostile[0]}"
run rtsp-endless-frame 2 --plugin null:results=1 --input "rtsp://127.0.0.1:$hostile_port/cam"
# (It serves one client and ends: bash forgets a coprocess's pid once it has ended.)
if [ -n "${hostile_PID:-}" ]; then kill "$hostile_PID" 2>/dev/null || true; wait "$hostile_PID" 2>/dev/null || true; fi

# An MQTT output to a real broker on loopback, beside stdout.
port=$(free_port)
mosquitto -p "$port" > "$log/mosquitto.log" 2>&1 &
broker=$!
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
run mqtt-output 0 --plugin null:results=2 --input testsrc:320x240@30 --max-frames 90 --output "mqtt://127.0.0.1:$port/cvhost" --output - \
  --output "mqtt://127.0.0.1:$port/ha?discovery=homeassistant&events=session.*+metrics"
kill "$broker"; wait "$broker" 2>/dev/null || true

# NATS JetStream and Kafka outputs with spools (a spool writer's thread beside the sender's, the
# clients' own threads calling back), to real servers on loopback: nats-server, librdkafka's mock cluster.
port=$(free_port)
nats-server -js -a 127.0.0.1 -p "$port" -sd "$log/jetstream" > "$log/nats-server.log" 2>&1 &
server=$!
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
run nats-spool 0 --plugin null:results=5 --input testsrc:320x240@30 --max-frames 90 --output "nats://127.0.0.1:$port/cvhost?spool=$log/spool-nats" --output -
# A spool's recovery: lines left by a run whose server was away, a byte flipped in the middle of
# the segment, then sent by the next run (the damage skipped and counted: exit 4).
run spool-left 0 --plugin null:results=5 --input testsrc:320x240@30 --max-frames 90 --output "nats://127.0.0.1:$(free_port)/cvhost?spool=$log/spool-damaged&drain=0" --output -
python3 -c 'import glob,sys; p=max(glob.glob(sys.argv[1]+"/*.spool"), key=lambda f: len(open(f,"rb").read())); b=bytearray(open(p,"rb").read()); b[len(b)//2]^=0x20; open(p,"wb").write(b)' "$log/spool-damaged"
run spool-recovery 4 --plugin null:results=1 --input testsrc:320x240@30 --max-frames 10 --output "nats://127.0.0.1:$port/cvhost?spool=$log/spool-damaged" --output -
# A fleet's node (its loop thread, the queues that add and remove its inputs, the leases the lines'
# envelope reads): two inputs given to a one-server site, one taken away while the node runs.
site="nats://127.0.0.1:$port/sanitizer"
"$bin" fleet --fleet "$site" add-input a testsrc:160x120@10 --needs null > /dev/null
"$bin" fleet --fleet "$site" add-input b testsrc:160x120@10 --needs null > /dev/null
( sleep 8; "$bin" fleet --fleet "$site" remove-input b > /dev/null ) &
run fleet-node 0 --plugin null:results=1 --fleet "$site" --node s --duration 14
kill "$server"; wait "$server" 2>/dev/null || true
# Not under TSan: librdkafka makes its threads with glibc's thrd_create, which TSan does not see
# (its allocator crashes at a broker thread's first malloc, before any report).
if [ "$kind" = address ]; then
  cc -O1 -o "$log/kafka_mock_cluster" Tests/Servers/kafka_mock_cluster.c -lrdkafka
  coproc cluster { "$log/kafka_mock_cluster" 3; }
  read -r bootstrap <&"${cluster[0]}"
  echo "topic results 3" >&"${cluster[1]}"
  read -r _ <&"${cluster[0]}"
  run kafka-spool 0 --plugin null:results=5 --input testsrc:320x240@30 --max-frames 90 --output "kafka://$bootstrap/results?spool=$log/spool-kafka" --output -
  exec {cluster[1]}>&-
  wait "$cluster_PID" 2>/dev/null || true
fi
exit $failed
