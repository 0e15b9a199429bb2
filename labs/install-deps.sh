#!/bin/sh
# install-deps.sh: installs the Debian packages flowlab needs, only those missing.
# Called by `make lab` and `make test`; safe to run again at any time.
# clang and libclang-rt-14-dev (libFuzzer) are for `make fuzz`, chapter 3's wire protocol;
# pandoc for `make book-html`, librsvg2-bin (rsvg-convert) for the check of the book's figures;
# libopenmpi-dev and openmpi-bin (mpicc, mpirun) for chapter 6's allreduce lab.
# libssl-dev (OpenSSL 3) for the cluster's shared secret (HMAC-SHA256) and TLS, and openssl to make
# the tests' certificates (tests/make_test_certs.sh); libevent-dev brings
# libevent_openssl, the task server's TLS connections.
# slurm-wlm (slurmctld, slurmd, srun), munge and slurm-wlm-basic-plugins (srun --mpi=pmix's plugin)
# for tests/slurm.t, which launches chapters 3 and 6's labs on a one-node Slurm cluster of its own.
# libprotobuf-c-dev and protobuf-c-compiler (protoc-c) for the TensorBoard event files (src/summary/);
# python3-venv for tests/tensorboard.t, which installs TensorBoard from PyPI into build/tb-venv.
# iproute2 (ip, tc) for the network namespaces and shaped links of launch_cluster --links (chapter 6)
# and tests/netns.t and tests/links.t.
set -e
packages="gcc make perl zlib1g-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
libclblast-dev libopenblas-dev libevent-dev libssl-dev openssl dataset-fashion-mnist graphviz gnuplot-nox
clang libclang-rt-14-dev pandoc librsvg2-bin libopenmpi-dev openmpi-bin
slurm-wlm munge slurm-wlm-basic-plugins
libprotobuf-c-dev protobuf-c-compiler python3-venv iproute2"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "flowlab: installing missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "flowlab: apt-get not found; install these packages by hand:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null || true
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
