#!/usr/bin/env bash
# Builds meterwise_VERSION_ARCH.deb into OUTDIR:
#   bash packaging/deb.sh OUTDIR
# A release build with the Swift standard library linked statically (in .build-release, kept apart from
# the debug build), man pages from swift-argument-parser's generate-manual, completions from
# `meterwise --generate-completion-script`, the systemd units, the default policy as a conffile, the
# ExecCondition= drop-ins (shipped, not enabled) and the docs. Dependencies come from dpkg-shlibdeps.
# Installing the package runs no maintainer script: it never starts, stops or restarts a service.
#
# For a quick check of the packaging itself: DEBUG=1 packages the debug build instead (.build/debug,
# dynamic stdlib: not for installing elsewhere). SCRATCH=DIR builds in DIR instead (CI builds the release
# package in a clean one, as a maintainer's fresh clone would).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: bash packaging/deb.sh OUTDIR" >&2
    exit 64
fi
mkdir -p "$1"
out="$(cd "$1" && pwd)"
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
for tool in swift dpkg-deb dpkg-shlibdeps gzip strip; do
    command -v "$tool" >/dev/null || { echo "deb.sh: $tool is needed (apt-get install dpkg-dev binutils)" >&2; exit 69; }
done

if [ -n "${DEBUG:-}" ]; then
    configuration=debug
    scratch="${SCRATCH:-$root/.build}"
    flags=()
else
    configuration=release
    scratch="${SCRATCH:-$root/.build-release}"
    source "$root/packaging/release-flags.sh"
    flags=("${release_flags[@]}")
fi
stage="$(mktemp -d -t meterwise-deb.XXXXXX)"
trap 'rm -rf "$stage"' EXIT
swift build -c "$configuration" "${flags[@]}" --scratch-path "$scratch" --product meterwise
# The man pages: swift-argument-parser's generate-manual (the tool behind its GenerateManual plugin), built
# with the same flags so nothing else is rebuilt, run on the binary being shipped. (The plugin itself
# would build every product again without the static stdlib: `swift package` has no such flag.) These
# flags are for every product; what only meterwise's link takes (lld's ordering file) is in Package.swift.
swift build -c "$configuration" "${flags[@]}" --scratch-path "$scratch" --product generate-manual
binary="$scratch/$configuration/meterwise"
version="$("$binary" --version)"
case "$version" in
    [0-9]*.[0-9]*) ;;
    *) echo "deb.sh: 'meterwise --version' printed '$version', not a version" >&2; exit 70 ;;
esac
manuals="$stage/manuals"
mkdir -p "$manuals"
# SOURCE_DATE_EPOCH (reproducible builds) or today.
date="$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d)"
"$scratch/$configuration/generate-manual" "$binary" --multi-page --date "$date" --output-directory "$manuals"
[ -f "$manuals/meterwise.1" ] || { echo "deb.sh: generate-manual wrote no meterwise.1 in $manuals" >&2; exit 70; }
arch="$(dpkg --print-architecture)"

pkg="$stage/root"
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/usr/lib/systemd/user" \
    "$pkg/etc/meterwise/policies.d" "$pkg/usr/share/meterwise/drop-ins" "$pkg/usr/share/man/man1" \
    "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/zsh/vendor-completions" \
    "$pkg/usr/share/fish/vendor_completions.d" "$pkg/usr/share/doc/meterwise/docs" \
    "$pkg/usr/share/doc/meterwise/examples"

install -m 0755 "$binary" "$pkg/usr/bin/meterwise"
[ "$configuration" = debug ] || strip --strip-unneeded "$pkg/usr/bin/meterwise"
install -m 0644 packaging/meterwise.service "$pkg/lib/systemd/system/meterwise.service"
install -m 0644 packaging/meterwise-user.service "$pkg/usr/lib/systemd/user/meterwise.service"
install -m 0644 policies/default.yaml "$pkg/etc/meterwise/policies.d/default.yaml"
for dropin in packaging/drop-ins/*.d; do
    install -d -m 0755 "$pkg/usr/share/meterwise/drop-ins/$(basename "$dropin")"
    install -m 0644 "$dropin"/*.conf "$pkg/usr/share/meterwise/drop-ins/$(basename "$dropin")/"
done

# Man pages: one per command (meterwise.1, meterwise.daemon.1, ...), gzipped as Debian ships them.
for page in "$manuals"/*.1; do
    gzip -9n <"$page" >"$pkg/usr/share/man/man1/$(basename "$page").gz"
done
chmod 0644 "$pkg"/usr/share/man/man1/*

# Completions, from the binary being shipped.
"$binary" --generate-completion-script bash >"$pkg/usr/share/bash-completion/completions/meterwise"
"$binary" --generate-completion-script zsh >"$pkg/usr/share/zsh/vendor-completions/_meterwise"
"$binary" --generate-completion-script fish >"$pkg/usr/share/fish/vendor_completions.d/meterwise.fish"
chmod 0644 "$pkg"/usr/share/*/*completion*/* "$pkg"/usr/share/fish/vendor_completions.d/*


install -m 0644 README.md "$pkg/usr/share/doc/meterwise/README.md"
install -m 0644 docs/*.md "$pkg/usr/share/doc/meterwise/docs/"
install -m 0644 policies/*.yaml "$pkg/usr/share/doc/meterwise/examples/"
cat >"$pkg/usr/share/doc/meterwise/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: meterwise

Files: *
Copyright: Meterwise contributors
License: unspecified
 No license has been chosen yet; ask the Meterwise maintainers before redistributing.
EOF
chmod 0644 "$pkg/usr/share/doc/meterwise/copyright"

# Shared-library dependencies of the binary, as Debian computes them (dpkg-shlibdeps wants a
# debian/control next to it; a minimal one in the staging directory).
mkdir -p "$stage/shlibs/debian"
printf 'Source: meterwise\n\nPackage: meterwise\nArchitecture: any\n' >"$stage/shlibs/debian/control"
depends="$(cd "$stage/shlibs" && dpkg-shlibdeps -O "$pkg/usr/bin/meterwise" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
[ -n "$depends" ] || { echo "deb.sh: dpkg-shlibdeps found no dependencies for the binary" >&2; exit 70; }

echo /etc/meterwise/policies.d/default.yaml >"$pkg/DEBIAN/conffiles"
installed_size="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
cat >"$pkg/DEBIAN/control" <<EOF
Package: meterwise
Version: $version
Architecture: $arch
Maintainer: Meterwise maintainers <maintainers@meterwise.invalid>
Installed-Size: $installed_size
Depends: $depends
Section: net
Priority: optional
Description: network-aware download engine that pauses on metered links
 Meterwise downloads files in the background and pauses them the moment the
 device moves to a metered link (cellular, a phone hotspot), resuming where
 it stopped when an allowed link returns. Policy files decide per job from the
 link's kind and metered-ness, time windows and data budgets.
 .
 Other tools ask it "may I download now?": meterwise check (for systemd's
 ExecCondition=, drop-ins for apt and fwupd in /usr/share/meterwise/drop-ins)
 and meterwise run -- COMMAND. The service is installed, not enabled:
 systemctl enable --now meterwise
EOF
(cd "$pkg" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/conffiles" "$pkg/DEBIAN/md5sums"

deb="$out/meterwise_${version}_${arch}.deb"
# xz for the real package; none for the quick check (the debug binary is large and goes nowhere).
compression=xz
[ "$configuration" = debug ] && compression=none
dpkg-deb --root-owner-group "-Z$compression" --build "$pkg" "$deb" >/dev/null
echo "$deb"
