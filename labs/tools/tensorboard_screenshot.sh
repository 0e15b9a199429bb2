#!/bin/bash
# tensorboard_screenshot.sh LOG_DIR OUT.png [DASHBOARD]: the book's TensorBoard
# figures, from a real run's --log_dir: starts `tensorboard --logdir` (from
# build/tb-venv, as tests/tensorboard.t installs it) on a free loopback port,
# has headless Chromium draw DASHBOARD (default: scalars) into OUT.png, and
# stops the server by its process id. WINDOW_SIZE=W,H (default 1400,900).
# Needs chromium (apt-get install chromium).
set -eu
if [ $# -lt 2 ] || [ "$1" = --help ]; then
    echo "usage: labs/tools/tensorboard_screenshot.sh LOG_DIR OUT.png [DASHBOARD]"
    echo "Draws TensorBoard's DASHBOARD (scalars, graphs, or e.g. 'scalars&tagFilter=loss') of LOG_DIR into OUT.png."
    [ "${1:-}" = --help ] && exit 0
    exit 2
fi
log_dir=$1 out=$2 dashboard=${3:-scalars}
venv=build/tb-venv
[ -x $venv/bin/tensorboard ] || { echo "tensorboard_screenshot: no $venv/bin/tensorboard (run prove tests/tensorboard.t once)" >&2; exit 1; }
command -v chromium >/dev/null || { echo "tensorboard_screenshot: chromium is not installed (apt-get install chromium)" >&2; exit 1; }
port=$($venv/bin/python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
$venv/bin/tensorboard --logdir "$log_dir" --host 127.0.0.1 --port "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null' EXIT
for _ in $(seq 1 60); do
    $venv/bin/python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/data/runs', timeout=5)" 2>/dev/null && break
    echo "tensorboard_screenshot: waiting for tensorboard on port $port" >&2
    sleep 1
done
# The virtual time budget lets the page fetch its data and draw before the shot.
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=${WINDOW_SIZE:-1400,900} \
    --virtual-time-budget=20000 --screenshot="$out" "http://127.0.0.1:$port/#$dashboard" 2>/dev/null
echo "tensorboard_screenshot: wrote $out"
