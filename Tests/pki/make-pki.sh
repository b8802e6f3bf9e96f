#!/usr/bin/env bash
# Makes a throwaway PKI for the TLS tests in DIR (created): a CA that no system trusts, and certificates
# it signed: server.crt (127.0.0.1, localhost), expired.crt (valid in 2020 only), future.crt (valid from
# 2099), wronghost.crt (only wrong.invalid), lab.crt (10.88.0.1, NetworkManagerLab's access point), client.crt (a device certificate for mTLS), and other-ca.crt,
# a second CA that signed nothing here. Keys are unencrypted EC P-256; everything is made anew each run.
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=Meterwise Test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt 2>/dev/null
key other-ca.key
openssl req -x509 -new -key other-ca.key -sha256 -days 2 -subj "/CN=Meterwise Other CA" \
    -addext "basicConstraints=critical,CA:TRUE" -out other-ca.crt 2>/dev/null
# `openssl ca` takes explicit validity dates (x509 -req cannot make an expired certificate).
mkdir -p db
: >db/index.txt
echo 1000 >db/serial
cat >ca.cnf <<CNF
[ ca ]
default_ca = test
[ test ]
dir = .
database = db/index.txt
serial = db/serial
new_certs_dir = db
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = any
unique_subject = no
copy_extensions = copy
[ any ]
commonName = supplied
CNF
sign() { # name subject-CN SAN ext-usage startdate enddate
    key "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$2" -addext "subjectAltName=$3" -addext "extendedKeyUsage=$4" \
        -out "$1.csr" 2>/dev/null
    openssl ca -batch -config ca.cnf -notext -startdate "$5" -enddate "$6" -in "$1.csr" -out "$1.crt" 2>/dev/null
}
now=$(date -u -d '-1 hour' +%Y%m%d%H%M%SZ)
later=$(date -u -d '+2 days' +%Y%m%d%H%M%SZ)
sign server 127.0.0.1 "IP:127.0.0.1,DNS:localhost" serverAuth "$now" "$later"
sign expired 127.0.0.1 "IP:127.0.0.1,DNS:localhost" serverAuth 20200101000000Z 20200201000000Z
sign future 127.0.0.1 "IP:127.0.0.1,DNS:localhost" serverAuth 20990101000000Z 20990201000000Z
sign wronghost wrong.invalid "DNS:wrong.invalid" serverAuth "$now" "$later"
sign lab 10.88.0.1 "IP:10.88.0.1" serverAuth "$now" "$later"
sign client device-0001 "DNS:device-0001" clientAuth "$now" "$later"
rm -f ./*.csr
