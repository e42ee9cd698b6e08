#!/bin/sh
# Build the nichealthd .deb from built binaries.
#
#   packaging/build-deb.sh [BIN_DIR [OUT_DIR]]     defaults: $BIN_DIR or bin, dist
#
# The package's version is the one the binaries print (`nichealthd
# --version`, stamped by `make build` from internal/version), so `dpkg -l`
# and every binary agree; VERSION overrides it only for a deliberate
# repackaging. ARCH
# overrides the architecture (default: dpkg --print-architecture).
# Prints the path of the package on its last line.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG=$ROOT/packaging
BIN_DIR=${1:-${BIN_DIR:-bin}}
OUT_DIR=${2:-dist}
case $BIN_DIR in /*) ;; *) BIN_DIR=$ROOT/$BIN_DIR ;; esac
case $OUT_DIR in /*) ;; *) OUT_DIR=$ROOT/$OUT_DIR ;; esac

die() { echo "build-deb.sh: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found (apt-get install dpkg)"

# A Debian version starts with a digit and uses [0-9A-Za-z.+~-]; the
# binaries print the same string (internal/version).
if [ -z "${VERSION:-}" ]; then
    [ -x "$BIN_DIR/nichealthd" ] || die "$BIN_DIR/nichealthd not found: run 'make build' first"
    VERSION=$("$BIN_DIR/nichealthd" --version | sed -n 's/^nichealthd //p')
    [ -n "$VERSION" ] || die "$BIN_DIR/nichealthd --version printed no version"
fi
printf '%s' "$VERSION" | grep -Eq '^[0-9][0-9A-Za-z.+~-]*$' ||
    die "VERSION=$VERSION is not a Debian version (start with a digit; use 0-9 A-Z a-z . + ~ -)"
ARCH=${ARCH:-$(dpkg --print-architecture)}

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

# The file layout is install.sh's, with Debian's directories.
DESTDIR=$STAGE PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system LIBEXECDIR=/usr/libexec/nichealthd \
    SYSUSERSDIR=/usr/lib/sysusers.d TMPFILESDIR=/usr/lib/tmpfiles.d \
    CATALOGDIR=/usr/lib/systemd/catalog DBUSPOLICYDIR=/usr/share/dbus-1/system.d \
    UDEVRULESDIR=/usr/lib/udev/rules.d DATADIR=/usr/share/nichealthd \
    BASHCOMPDIR=/usr/share/bash-completion/completions ZSHCOMPDIR=/usr/share/zsh/vendor-completions \
    VERSION=$VERSION "$PKG/install.sh" "$BIN_DIR" >/dev/null

mkdir -p "$STAGE/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@INSTALLED_SIZE@/$size/" \
    "$PKG/debian/control" > "$STAGE/DEBIAN/control"
cp "$PKG/debian/conffiles" "$STAGE/DEBIAN/conffiles"
for s in postinst prerm postrm; do
    cp "$PKG/debian/$s" "$STAGE/DEBIAN/$s"
    chmod 0755 "$STAGE/DEBIAN/$s"
done
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
    xargs md5sum) > "$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/control" "$STAGE/DEBIAN/conffiles" "$STAGE/DEBIAN/md5sums"
find "$STAGE" -type d -exec chmod 0755 {} +

mkdir -p "$OUT_DIR"
deb=$OUT_DIR/nichealthd_${VERSION}_${ARCH}.deb
# gzip: several times faster than xz on a Go binary, for a few MB more.
dpkg-deb --root-owner-group -Zgzip --build "$STAGE" "$deb" >/dev/null
echo "$deb"
