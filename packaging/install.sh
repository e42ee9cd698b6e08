#!/bin/sh
# Install nichealthd from a build tree (make install) on hosts without the
# .deb. Honours DESTDIR and PREFIX; every directory can be overridden.
#
#   packaging/install.sh [BIN_DIR]          BIN_DIR defaults to $BIN_DIR, then bin
#   DESTDIR=/tmp/stage PREFIX=/usr packaging/install.sh bin
#
# With an empty DESTDIR, as root on a host running systemd, it also creates
# the user, loads the D-Bus policy and journal catalog and reloads systemd;
# it never enables or starts the service.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG=$ROOT/packaging
BIN_DIR=${1:-${BIN_DIR:-bin}}
case $BIN_DIR in /*) ;; *) BIN_DIR=$ROOT/$BIN_DIR ;; esac

DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
SYSUSERSDIR=${SYSUSERSDIR:-$PREFIX/lib/sysusers.d}
TMPFILESDIR=${TMPFILESDIR:-$PREFIX/lib/tmpfiles.d}
CATALOGDIR=${CATALOGDIR:-$PREFIX/lib/systemd/catalog}
MANDIR=${MANDIR:-$PREFIX/share/man}
BASHCOMPDIR=${BASHCOMPDIR:-$PREFIX/share/bash-completion/completions}
ZSHCOMPDIR=${ZSHCOMPDIR:-$PREFIX/share/zsh/site-functions}
DOCDIR=${DOCDIR:-$PREFIX/share/doc/nichealthd}
# nichealth-mad, the MAD helper nichealthd runs as its child: not a command
# for operators, so beside the daemon's other private files.
LIBEXECDIR=${LIBEXECDIR:-$PREFIX/libexec/nichealthd}
# The fleet's Prometheus rules and Grafana dashboard, for the monitoring
# host to pick up (README "Fleet").
DATADIR=${DATADIR:-$PREFIX/share/nichealthd}
UDEVRULESDIR=${UDEVRULESDIR:-$PREFIX/lib/udev/rules.d}
# dbus-daemon reads policies only from /usr/share/dbus-1/system.d and
# /etc/dbus-1/system.d, whatever the prefix.
if [ "$PREFIX" = /usr ]; then
    DBUSPOLICYDIR=${DBUSPOLICYDIR:-/usr/share/dbus-1/system.d}
else
    DBUSPOLICYDIR=${DBUSPOLICYDIR:-$SYSCONFDIR/dbus-1/system.d}
fi
VERSION=${VERSION:-}

die() { echo "install.sh: $*" >&2; exit 1; }

# Files written by other parts of the tree: name each missing one.
missing=""
for f in "$BIN_DIR/nichealthd" "$BIN_DIR/nichealthctl" "$BIN_DIR/nichealth-fabric" "$BIN_DIR/nichealth-mad" \
         "$PKG/dbus/org.nichealth.NicHealth1.conf" "$PKG/journal/nichealthd.catalog"; do
    [ -e "$f" ] || missing="$missing
  $f"
done
[ -z "$missing" ] || die "missing input files:$missing
(build the binaries with 'make build'; the D-Bus policy and journal catalog are part of the source tree)"
command -v go >/dev/null 2>&1 || die "go is needed to generate the manual pages (packaging/mangen)"

umask 022
inst() { # inst MODE SRC DEST
    mkdir -p "$(dirname "$3")"
    cp "$2" "$3.tmp.$$"
    chmod "$1" "$3.tmp.$$"
    mv -f "$3.tmp.$$" "$3"
}
d=$DESTDIR

inst 0755 "$BIN_DIR/nichealthd" "$d$BINDIR/nichealthd"
inst 0755 "$BIN_DIR/nichealthctl" "$d$BINDIR/nichealthctl"
inst 0755 "$BIN_DIR/nichealth-fabric" "$d$BINDIR/nichealth-fabric"
inst 0755 "$BIN_DIR/nichealth-mad" "$d$LIBEXECDIR/nichealth-mad"

for u in "$PKG"/systemd/*.service; do
    dest=$d$UNITDIR/$(basename "$u")
    mkdir -p "$(dirname "$dest")"
    # The units name /usr/bin; follow BINDIR when it differs.
    sed "s|/usr/bin/nichealth|$BINDIR/nichealth|g" "$u" > "$dest"
    chmod 0644 "$dest"
done
inst 0644 "$PKG/sysusers.d/nichealthd.conf" "$d$SYSUSERSDIR/nichealthd.conf"
inst 0644 "$PKG/tmpfiles.d/nichealthd.conf" "$d$TMPFILESDIR/nichealthd.conf"
inst 0644 "$PKG/dbus/org.nichealth.NicHealth1.conf" "$d$DBUSPOLICYDIR/org.nichealth.NicHealth1.conf"
inst 0644 "$PKG/journal/nichealthd.catalog" "$d$CATALOGDIR/nichealthd.catalog"
inst 0644 "$PKG/udev/60-nichealthd-vpd.rules" "$d$UDEVRULESDIR/60-nichealthd-vpd.rules"
inst 0644 "$PKG/udev/60-nichealthd-umad.rules" "$d$UDEVRULESDIR/60-nichealthd-umad.rules"
inst 0644 "$PKG/prometheus/nichealth.rules.yml" "$d$DATADIR/prometheus/nichealth.rules.yml"
inst 0644 "$PKG/prometheus/nichealth.rules.test.yml" "$d$DATADIR/prometheus/nichealth.rules.test.yml"
inst 0644 "$PKG/grafana/nichealthd.json" "$d$DATADIR/grafana/nichealthd.json"
inst 0644 "$PKG/completion/nichealthctl.bash" "$d$BASHCOMPDIR/nichealthctl"
inst 0644 "$PKG/completion/_nichealthctl" "$d$ZSHCOMPDIR/_nichealthctl"

# The operator's configuration is never overwritten.
conf=$d$SYSCONFDIR/nichealthd/config.toml
if [ -e "$conf" ]; then
    echo "install.sh: keeping existing $conf (the new default is in $DOCDIR/config.toml)"
else
    inst 0644 "$PKG/config/config.toml" "$conf"
fi

# Manual pages: generated from the one source, never checked in.
mantmp=$(mktemp -d)
trap 'rm -rf "$mantmp"' EXIT
date=""
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
fi
(cd "$ROOT" && go run ./packaging/mangen -src packaging/man/nichealth.md -out "$mantmp" \
    -version "$VERSION" -date "$date") || die "generating the manual pages failed"
for page in "$mantmp"/*; do
    sec=${page##*.}
    mkdir -p "$d$MANDIR/man$sec"
    gzip -9n -c "$page" > "$d$MANDIR/man$sec/$(basename "$page").gz"
    chmod 0644 "$d$MANDIR/man$sec/$(basename "$page").gz"
done

inst 0644 "$PKG/config/config.toml" "$d$DOCDIR/config.toml"
inst 0644 "$PKG/examples/metrics.conf" "$d$DOCDIR/examples/metrics.conf"
inst 0644 "$PKG/examples/metrics-remote.conf" "$d$DOCDIR/examples/metrics-remote.conf"
inst 0644 "$PKG/examples/transceivers.conf" "$d$DOCDIR/examples/transceivers.conf"
inst 0644 "$PKG/examples/slurmd-after-nichealthd.conf" "$d$DOCDIR/examples/slurmd-after-nichealthd.conf"
inst 0644 "$PKG/examples/fabric-dgx-h100.topo" "$d$DOCDIR/examples/fabric-dgx-h100.topo"
[ ! -f "$ROOT/README.md" ] || inst 0644 "$ROOT/README.md" "$d$DOCDIR/README.md"
# The README's pages, where its links point (docs/<page>.md beside it).
for f in "$ROOT"/docs/*.md; do
    [ -f "$f" ] || continue
    inst 0644 "$f" "$d$DOCDIR/docs/$(basename "$f")"
done
inst 0644 "$ROOT/LICENSE" "$d$DOCDIR/LICENSE"
inst 0644 "$PKG/debian/copyright" "$d$DOCDIR/copyright"
mkdir -p "$d$DOCDIR"
# A build between releases names its own version in the newest entry, as
# the package and the binaries do.
if [ -n "$VERSION" ]; then
    sed "1s/^nichealthd ([^)]*)/nichealthd ($VERSION)/" "$PKG/debian/changelog"
else
    cat "$PKG/debian/changelog"
fi | gzip -9n > "$d$DOCDIR/changelog.gz"
chmod 0644 "$d$DOCDIR/changelog.gz"

echo "install.sh: installed into ${DESTDIR:-/} with PREFIX=$PREFIX"

if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && [ -d /run/systemd/system ]; then
    systemd-sysusers nichealthd.conf
    systemd-tmpfiles --create nichealthd.conf
    journalctl --update-catalog || true
    udevadm control --reload 2>/dev/null || true
    systemctl daemon-reload
    systemctl reload dbus.service 2>/dev/null || true
    echo "install.sh: start it with: systemctl enable --now nichealthd"
fi
