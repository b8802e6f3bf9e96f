#!/usr/bin/env bash
# Checks a package built by packaging/deb.sh without installing it:
#   bash packaging/check-deb.sh [--install] out/meterwise_VERSION_ARCH.deb
# Its files (binary, units, default policy as a conffile, drop-ins, man pages, completions, docs), no
# maintainer script (installing starts nothing), and the extracted binary, man page and completions work.
#
# With --install (root), then as a user would: `dpkg -i`, `meterwise --version`, `man -w meterwise`, no
# service enabled or started, `dpkg -r` (and --purge, so the conffile goes too). Only on a machine that has
# no meterwise of its own (no package, no /usr/bin/meterwise, no /etc/meterwise): what the machine had is
# never changed; otherwise it says so and skips that part.
set -euo pipefail
install=""
if [ "${1:-}" = "--install" ]; then install=1; shift; fi
deb="${1:?usage: bash packaging/check-deb.sh [--install] DEB}"
[ -f "$deb" ] || { echo "check-deb: no file $deb" >&2; exit 66; }
failures=0
fail() { echo "check-deb: $*" >&2; failures=$((failures + 1)); }

contents="$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')"
for path in /usr/bin/meterwise /lib/systemd/system/meterwise.service /usr/lib/systemd/user/meterwise.service \
    /etc/meterwise/policies.d/default.yaml /usr/share/man/man1/meterwise.1.gz /usr/share/man/man1/meterwise.check.1.gz \
    /usr/share/man/man1/meterwise.daemon.1.gz /usr/share/bash-completion/completions/meterwise \
    /usr/share/zsh/vendor-completions/_meterwise /usr/share/fish/vendor_completions.d/meterwise.fish \
    /usr/share/meterwise/drop-ins/apt-daily.service.d/meterwise.conf \
    /usr/share/meterwise/drop-ins/apt-daily-upgrade.service.d/meterwise.conf \
    /usr/share/meterwise/drop-ins/fwupd-refresh.service.d/meterwise.conf \
    /usr/share/meterwise/drop-ins/unattended-upgrades.service.d/meterwise.conf \
    /usr/share/doc/meterwise/README.md /usr/share/doc/meterwise/copyright /usr/share/doc/meterwise/docs/integrations.md; do
    grep -qxF "$path" <<<"$contents" || fail "missing $path"
done
# Drop-ins are shipped, never enabled: nothing under /etc/systemd.
if grep -q '^/etc/systemd' <<<"$contents"; then fail "installs into /etc/systemd (drop-ins must not be enabled)"; fi

control="$(mktemp -d -t meterwise-check-deb.XXXXXX)"
trap 'rm -rf "$control"' EXIT
dpkg-deb -e "$deb" "$control/DEBIAN"
grep -qxF /etc/meterwise/policies.d/default.yaml "$control/DEBIAN/conffiles" || fail "default.yaml is not a conffile"
for script in preinst postinst prerm postrm; do
    [ ! -e "$control/DEBIAN/$script" ] || fail "has a $script script: installing must start, stop or restart nothing"
done
grep -q '^Depends: .*libnl-route-3' "$control/DEBIAN/control" || fail "Depends lacks libnl-route-3: $(grep ^Depends "$control/DEBIAN/control")"

dpkg-deb -x "$deb" "$control/root"
version="$(dpkg-deb -f "$deb" Version)"
[ "$("$control/root/usr/bin/meterwise" --version)" = "$version" ] || fail "meterwise --version is not $version"
if command -v man >/dev/null; then
    MANPAGER=cat man -l "$control/root/usr/share/man/man1/meterwise.1.gz" 2>/dev/null | grep -q 'meterwise' \
        || fail "man meterwise does not render"
fi
grep -q 'complete' "$control/root/usr/share/bash-completion/completions/meterwise" || fail "no bash completion function"
bash -n "$control/root/usr/share/bash-completion/completions/meterwise" || fail "bash completion is not valid bash"
grep -q 'ExecStart=/usr/bin/meterwise daemon --user' "$control/root/usr/lib/systemd/user/meterwise.service" \
    || fail "the user unit does not run daemon --user"

if [ "$failures" -gt 0 ]; then
    echo "check-deb: $failures problem(s) in $deb" >&2
    exit 1
fi
echo "check-deb: $deb is complete ($(wc -l <<<"$contents") entries, version $version)"

[ -n "$install" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "check-deb: --install needs root (dpkg -i); not installed" >&2
    exit 1
fi
had="$(dpkg-query -W -f='${Status}' meterwise 2>/dev/null || true)"
if [ -n "$had" ] && [ "$had" != "unknown ok not-installed" ]; then
    echo "check-deb: skipped installing: this machine has a meterwise package ($had); it is left as it is"
    exit 0
fi
for path in /usr/bin/meterwise /etc/meterwise; do
    if [ -e "$path" ]; then
        echo "check-deb: skipped installing: $path exists here and is not from a package; it is left as it is"
        exit 0
    fi
done
removed=""
remove() {
    [ -z "$removed" ] || return 0
    removed=1
    dpkg -r meterwise >/dev/null || fail "dpkg -r meterwise failed"
    dpkg --purge meterwise >/dev/null || fail "dpkg --purge meterwise failed"
}
trap 'remove; rm -rf "$control"' EXIT
dpkg -i "$deb" >/dev/null || { fail "dpkg -i $deb failed"; exit 1; }
installed="$(/usr/bin/meterwise --version)" || fail "the installed meterwise --version failed"
[ "$installed" = "$version" ] || fail "the installed meterwise --version printed '$installed', not $version"
page="$(man -w meterwise 2>&1)" || fail "man -w meterwise found no page: $page"
[ "$page" = /usr/share/man/man1/meterwise.1.gz ] || fail "man -w meterwise is '$page', not /usr/share/man/man1/meterwise.1.gz"
MANPAGER=cat man meterwise 2>/dev/null | grep -q 'meterwise' || fail "man meterwise shows nothing"
for wants in /etc/systemd/system/*.wants/meterwise.service; do
    [ ! -e "$wants" ] || fail "installing enabled the service ($wants)"
done
remove
[ ! -e /usr/bin/meterwise ] || fail "dpkg -r left /usr/bin/meterwise"
[ ! -e /etc/meterwise ] || fail "dpkg --purge left /etc/meterwise"
if [ "$failures" -gt 0 ]; then
    echo "check-deb: $failures problem(s) installing $deb" >&2
    exit 1
fi
echo "check-deb: installed $deb: meterwise --version $installed, man -w $page; removed and purged"
