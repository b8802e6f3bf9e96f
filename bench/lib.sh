# Shared by the bench scripts (sourced): the release binary, a pair of network namespaces, nginx's config.

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
