# Shared by the bench scripts (sourced): the release binary, a pair of network namespaces, nginx's config, a
# free port, a CA and a server certificate for HTTPS rows.

# Sets BIN to the release build (`packaging/release-flags.sh`, built into SCRATCH, default
# ROOT/.build-release) unless BIN is already set; makes it absolute.
bench_binary() {
    local root=$1 scratch=${2:-$1/.build-release}
    if [ -z "${BIN:-}" ]; then
        echo "building the release binary (static stdlib) into $scratch ..." >&2
        # shellcheck disable=SC1091
        source "$root/packaging/release-flags.sh"
        swift build -c release "${release_flags[@]}" --scratch-path "$scratch" --product meterwise >&2
        BIN="$scratch/release/meterwise"
    fi
    BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
}

# Two network namespaces joined by a veth pair, loopback up in both:
# bench_netns_pair CLIENT_NS SERVER_NS CLIENT_IF SERVER_IF CLIENT_ADDR/24 SERVER_ADDR/24
bench_netns_pair() {
    local ns=$1 server_ns=$2 client_if=$3 server_if=$4 client_addr=$5 server_addr=$6
    ip netns add "$ns"
    ip netns add "$server_ns"
    ip -n "$server_ns" link add "$server_if" type veth peer name "$client_if" netns "$ns"
    ip -n "$server_ns" addr add "$server_addr" dev "$server_if"
    ip -n "$ns" addr add "$client_addr" dev "$client_if"
    ip -n "$server_ns" link set "$server_if" up
    ip -n "$server_ns" link set lo up
    ip -n "$ns" link set "$client_if" up
    ip -n "$ns" link set lo up
}

# Removes the namespaces given, killing what runs in them.
bench_netns_remove() {
    local ns
    for ns in "$@"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
}

# Prints an nginx.conf that keeps its pid, logs and temporary files under WORK (which needs logs/ and tmp/)
# and serves WORK/www from the `server { ... }` lines given, one argument each. No access log.
bench_nginx_conf() {
    local work=$1
    shift
    cat <<CONF
daemon on;
worker_processes 1;
error_log $work/logs/error.log warn;
pid $work/nginx.pid;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
CONF
    local line
    for line in "$@"; do printf '    %s\n' "$line"; done
    echo "}"
}

# Prints a TCP port free on 127.0.0.1 now.
bench_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A CA made for this run and a certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1) signed by it, both
# valid 2 days, in DIR: ca.pem (what clients trust: curl/meterwise --cacert), server.pem and server.key
# (nginx's ssl_certificate and ssl_certificate_key); ca.key, server.csr, ext.cnf and ca.srl beside them.
bench_tls_ca() {
    local dir=$1
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj "/CN=bench CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=127.0.0.1" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$dir/ext.cnf"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
        -out "$dir/server.pem" -days 2 -extfile "$dir/ext.cnf" 2>/dev/null
}
