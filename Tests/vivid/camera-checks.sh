#!/bin/bash
# Runs inside the vivid VM (scripts/vivid-run.sh): drives the built cvhost against the kernel's
# vivid driver and leaves each step's stdout, stderr and exit code in OUTDIR for the Swift tests
# (Tests/EndToEndTests/CameraTests.swift) to check. Every capture has its own time limit, and
# the module is reloaded between format combinations (vivid 6.1 oopses after several changes).
#   camera-checks.sh webcam|loop|multiplanar OUTDIR CVHOST [QR_PNG]
set -u
mode=$1 out=$2 cvhost=$3 qr=${4:-}
mkdir -p "$out"
step() { # step NAME TIMEOUT COMMAND...: run, keep stdout/stderr/exit code
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" "$@" > "$out/$name.out" 2> "$out/$name.err"
  echo $? > "$out/$name.rc"
}
wait_for() { # wait_for FILE TEXT [SECONDS]: until a line of FILE contains TEXT (at most SECONDS, 60). The VM is
  # emulated, and slower still on a loaded machine: what acts on a running cvhost waits for it to run, never a fixed time.
  for _ in $(seq $(( ${3:-60} * 5 ))); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
  return 1
}
wait_for_after() { # wait_for_after FILE TEXT AFTER [SECONDS]: until a line containing TEXT follows one containing AFTER
  for _ in $(seq $(( ${4:-60} * 5 ))); do
    sed -n "/$3/,\$p" "$1" 2>/dev/null | grep -q -- "$2" && return 0
    sleep 0.2
  done
  return 1
}
loop_qr() { # loop_qr NAME FFMPEG_PIXFMT FOURCC [PLUGIN]: show the camera the QR code through vivid's loop, read it with barcode
  # (FFMPEG_PIXFMT bayer_bggr8: FFmpeg cannot write Bayer, so its RGB is sampled in the BGGR pattern here.)
  local fmt=$2
  [ "$fmt" = bayer_bggr8 ] && fmt=rgb24
  ffmpeg -nostdin -loglevel error -y -i "$qr" -vf "scale=-2:400,pad=640:480:(ow-iw)/2:(oh-ih)/2:color=white,format=$fmt" \
    -f rawvideo -frames:v 1 "/tmp/qr.$2"
  if [ "$2" = bayer_bggr8 ]; then
    /usr/bin/python3 -c '
import sys
w, h = 640, 480
rgb = open(sys.argv[1], "rb").read()
out = bytearray(w * h)
for y in range(h):
    for x in range(w):
        c = 2 if (y % 2 == 0 and x % 2 == 0) else (0 if (y % 2 == 1 and x % 2 == 1) else 1)  # B G / G R
        out[y * w + x] = rgb[(y * w + x) * 3 + c]
open(sys.argv[1], "wb").write(out)' "/tmp/qr.$2"
  fi
  vivid_inject "/tmp/qr.$2" "$3" 640 480
  step "$1" 90 "$cvhost" run --device /dev/video0 --format 640x480 --pixel-format "$3" --plugin "${4:-barcode}" --max-frames 20 \
    --metrics-interval 0
}
live_controls() { # brightness changed while running, by a command on stdin and over HTTP, each read back by v4l2-ctl
  local o="$out/live-controls" port=18099
  rm -f /tmp/cvhost-commands; mkfifo /tmp/cvhost-commands
  timeout -k 5 90 "$cvhost" run --device /dev/video0 --format 640x480 --plugin null --http 127.0.0.1:$port \
    --metrics-interval 0 < /tmp/cvhost-commands > "$o.out" 2> "$o.err" &
  local pid=$!
  exec 7> /tmp/cvhost-commands  # stdin stays open until the stop command
  for _ in $(seq 60); do [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/healthz)" = 200 ] && break; sleep 0.5; done
  echo '{"command":"set_control","name":"brightness","value":150,"id":"from-stdin"}' >&7
  wait_for "$o.out" '"id":"from-stdin"'
  v4l2-ctl -d /dev/video0 --get-ctrl brightness > "$o.stdin-readback" 2>&1
  curl -s -w '\n%{http_code}\n' -H 'Content-Type: application/json' -d '{"name":"brightness","value":170}' http://127.0.0.1:$port/controls > "$o.http" 2>&1
  v4l2-ctl -d /dev/video0 --get-ctrl brightness > "$o.http-readback" 2>&1
  curl -s http://127.0.0.1:$port/controls > "$o.get" 2>&1
  echo '{"command":"stop","id":"end"}' >&7
  exec 7>&-
  wait $pid
  echo $? > "$o.rc"
}
if [ "$mode" = webcam ]; then
  step devices 60 "$cvhost" devices --json
  step devices-text 60 "$cvhost" devices
  step run 90 "$cvhost" run --device /dev/video0 --format 640x480@30 --plugin barcode --plugin null:results=1 \
    --max-frames 30 --control brightness=140 --control focus_absolute=10 --control focus_auto=on \
    --control exposure_auto=1 --control white_balance_auto=on --control zoom_absolute=2 --control torch=2 --metrics-interval 0
  step default-camera 90 "$cvhost" run --plugin null:results=1 --max-frames 5 --metrics-interval 0
  vivid_reload
  step nv12 90 "$cvhost" run --device /dev/video0 --format 320x240 --pixel-format NV12 --plugin null:results=1 --max-frames 10
  vivid_reload
  # A raw YUYV camera's clip: its frames encoded (libx264), the MP4 then decoded to its end.
  step clip 120 "$cvhost" run --device /dev/video0 --format 320x240 --pixel-format YUYV --plugin null:results=1 --max-frames 60 \
    --metrics-interval 0 --clips /tmp/cvhost-vivid-clips:on=result,pre=1,post=1,max=5,min_free_gb=0
  clip=$(ls /tmp/cvhost-vivid-clips/*.mp4 2>/dev/null | head -1)
  step clip-decodes 60 ffmpeg -nostdin -v error -xerror -i "${clip:-/nonexistent.mp4}" -f null -
  vivid_reload
  step bad-format 60 "$cvhost" run --device /dev/video0 --format 9999x9999 --plugin null --max-frames 1
  step near-size 60 "$cvhost" run --device /dev/video0 --format 123x45 --plugin null:results=1 --max-frames 1
  step bad-control 60 "$cvhost" run --device /dev/video0 --control brightness=bright --plugin null --max-frames 1
  # vivid's output node stands for the metadata nodes UVC cameras add (/dev/video1 and so on).
  step not-capture 60 "$cvhost" run --device /dev/video1 --plugin null --max-frames 1
  # Busy: a second reader of a streaming camera.
  # The first must be streaming before the second tries: emulated and loaded, that can take minutes.
  timeout 400 "$cvhost" run --device /dev/video0 --format 640x480 --plugin null:results=1 > /tmp/first.out 2>&1 &
  first=$!
  wait_for /tmp/first.out '"event":"result"' 300
  step busy 90 "$cvhost" run --device /dev/video0 --format 640x480 --plugin null --max-frames 1
  kill -INT $first; wait $first
  vivid_reload
  live_controls
  # The camera disappears mid-run: vivid's "disconnect" control acts like an unplugged USB camera.
  (wait_for "$out/disconnect.out" '"event":"result"'; v4l2-ctl -d /dev/video0 -c disconnect=1) &
  step disconnect 90 "$cvhost" run --device /dev/video0 --format 640x480 --plugin null:results=1 --metrics-interval 0
  wait
  # --reconnect: unplugged, then back. Unbinding the driver from its device removes the nodes
  # while cvhost has one open, as unplugging a USB camera does; binding it again re-creates
  # them, as the camera re-enumerating. (vivid's disconnect control only fails the open file:
  # a new open works at once, so nothing would be unplugged.)
  vivid_reload
  # Stopped as a user would, once frames flow again after the camera came back.
  (wait_for "$out/reconnect.out" '"event":"result"'
   echo vivid.0 > /sys/bus/platform/drivers/vivid/unbind
   sleep 2; echo vivid.0 > /sys/bus/platform/drivers/vivid/bind
   wait_for_after "$out/reconnect.out" '"event":"result"' '"event":"session.interruption_ended"' 90
   pkill -INT -x cvhost) &
  step reconnect 120 "$cvhost" run --device /dev/video0 --format 640x480 --plugin null:results=1 --reconnect --metrics-interval 0
  wait
  # A camera not there when cvhost starts (a USB camera not enumerated yet at boot), with
  # --reconnect: the input starts interrupted, then the camera is set up as asked and streamed
  # once its node appears.
  echo vivid.0 > /sys/bus/platform/drivers/vivid/unbind
  (wait_for "$out/awaited.out" '"event":"session.interrupted"'
   echo vivid.0 > /sys/bus/platform/drivers/vivid/bind
   wait_for_after "$out/awaited.out" '"event":"result"' '"event":"session.interrupted"' 90
   pkill -INT -x cvhost) &
  step awaited 120 "$cvhost" run --device /dev/video0 --format 640x480 --plugin null:results=1 --reconnect --metrics-interval 0
  wait
elif [ "$mode" = loop ]; then
  # Show the camera a QR code: raw YUYV frames into vivid's HDMI output loop back into its HDMI input.
  loop_qr loop yuyv422 YUYV
  vivid_reload
  # Bayer (BA81), which only libv4lconvert reads: converted to I420 and still read.
  loop_qr loop-bayer bayer_bggr8 BA81
elif [ "$mode" = multiplanar ]; then
  # vivid loaded with multiplanar=2: its nodes speak only the multi-planar API.
  step mp-devices 60 "$cvhost" devices --json
  # The loop in a one-buffer format (YUYV) and in one with a buffer per plane (NV12M: Y, then UV).
  loop_qr mp-yuyv yuyv422 YUYV
  vivid_reload
  loop_qr mp-nv12m nv12 NM12
  vivid_reload
  # The same in a worker process: the driver's buffers exported (VIDIOC_EXPBUF) and read there with no copy.
  loop_qr mp-nv12m-isolated nv12 NM12 barcode:isolation=process
  vivid_reload
  step mp-yuv420m 90 "$cvhost" run --device /dev/video0 --format 640x480 --pixel-format YM12 --plugin null:results=1 --max-frames 10 \
    --metrics-interval 0
  vivid_reload
  # Frames the driver flags with V4L2_BUF_FLAG_ERROR are dropped and counted as corrupt.
  (wait_for "$out/mp-corrupt.out" '"event":"result"'
   for i in 1 2 3; do v4l2-ctl -d /dev/video0 -c inject_v4l2_buf_flag_error=1; sleep 0.5; done
   sleep 1; pkill -INT -x cvhost) &
  step mp-corrupt 90 "$cvhost" run --device /dev/video0 --format 640x480 --pixel-format YUYV --plugin null:results=1 \
    --metrics-interval 0
  wait
fi
exit 0
