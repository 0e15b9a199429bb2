#!/bin/sh
# make_test_certs.sh DIR: TLS certificates for the tests and the bench, made
# fresh at test time (never committed): a cluster CA and one certificate for
# its tasks (ca.pem, task.pem, task.key), and a second CA with a certificate
# of its own (other_ca.pem, other.pem, other.key), a stranger's. EC P-256
# keys, valid for two days, by the openssl command line.
set -e
dir=$1
[ -n "$dir" ] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
umask 077
curve="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
# $1: CA name; $2: certificate name; $3: common name
make_pair() {
    openssl req -x509 $curve -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=flowlab test $1" 2>/dev/null
    openssl req $curve -keyout "$2.key" -out "$2.csr" -subj "/CN=$3" 2>/dev/null
    openssl x509 -req -in "$2.csr" -CA "$1.pem" -CAkey "$1.key" -CAcreateserial -out "$2.pem" -days 2 2>/dev/null
    rm -f "$2.csr" "$1.srl"
}
make_pair ca task "flowlab task"
make_pair other_ca other "a stranger"
