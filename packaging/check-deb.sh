#!/usr/bin/env bash
# Checks a package built by packaging/deb.sh without installing it:
#   bash packaging/check-deb.sh out/meterwise_VERSION_ARCH.deb
# Its files (binary, units, default policy as a conffile, drop-ins, man pages, completions, docs), no
# maintainer script (installing starts nothing), and the extracted binary, man page and completions work.
set -euo pipefail
deb="${1:?usage: bash packaging/check-deb.sh DEB}"
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
