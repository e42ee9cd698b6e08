#!/bin/sh
# Quality gates for everything packaging ships that a Go test cannot judge:
# systemd units (verify must print nothing; exposure of the daemon's unit
# <= 1.5, of the helper units <= 2.5), sysusers.d and
# tmpfiles.d entries, maintainer scripts, completions, manual pages, and,
# when the binaries are built, the default configuration and the documented
# flags against the binaries themselves.
#
#   packaging/test/unit-quality.sh [BIN_DIR]       BIN_DIR defaults to $BIN_DIR, then bin
#
# Exits non-zero when any check fails, after running all of them.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$ROOT/packaging
BIN_DIR=${1:-${BIN_DIR:-bin}}
case $BIN_DIR in /*) ;; *) BIN_DIR=$ROOT/$BIN_DIR ;; esac
# systemd-analyze security exposure limits: the daemon runs all the time,
# the helpers are short oneshots but run as root or talk to the bus. The
# daemon's 1.2 is CAP_SYSLOG for /dev/kmsg and what it needs (no
# PrivateUsers=, no ProtectKernelLogs=; see the unit's comment).
MAX_EXPOSURE_DAEMON=1.5
MAX_EXPOSURE_HELPER=2.5

failures=0
pass() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
skip() { echo "skip  $*"; }
need() { command -v "$1" >/dev/null 2>&1; }

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# --- manual pages (needed by systemd-analyze verify's Documentation= check) --
MAN=$W/man
MANGEN=$W/mangen
if ! (cd "$ROOT" && go build -o "$MANGEN" ./packaging/mangen); then
    echo "FAIL  cannot build packaging/mangen"
    exit 1
fi
if "$MANGEN" -src "$PKG/man/nichealth.md" -out "$W/manraw" \
        -check-config "$PKG/config/config.toml" > "$W/mangen.out" 2>&1; then
    pass "manual source documents exactly the keys of packaging/config/config.toml"
else
    fail "mangen: $(cat "$W/mangen.out")"
fi
for page in "$W"/manraw/*; do
    [ -f "$page" ] || continue
    sec=${page##*.}
    mkdir -p "$MAN/man$sec"
    cp "$page" "$MAN/man$sec/"
    if need groff; then
        out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
        if [ -z "$out" ]; then pass "$(basename "$page") renders without troff warnings"
        else fail "$(basename "$page"): $out"; fi
    fi
done

# --- systemd units ------------------------------------------------------------
# verify needs a root holding the units it depends on and the binaries named
# by ExecStart=; it exits 0 on warnings, so any output is a failure.
R=$W/root
mkdir -p "$R/lib/systemd/system" "$R/usr/bin" "$R/bin" "$R/etc/systemd/system"
cp -a /lib/systemd/system/. "$R/lib/systemd/system/" 2>/dev/null
cp "$PKG"/systemd/*.service "$R/lib/systemd/system/"
for b in nichealthd nichealthctl; do
    if [ -x "$BIN_DIR/$b" ]; then
        cp "$BIN_DIR/$b" "$R/usr/bin/$b"
    else
        printf '#!/bin/sh\nexit 0\n' > "$R/usr/bin/$b"
        chmod 0755 "$R/usr/bin/$b"
    fi
done
cp /bin/kill "$R/bin/kill"
units=$(cd "$PKG/systemd" && for u in *.service; do echo "$u"; done)
# One run for all units: each message names its unit.
# shellcheck disable=SC2086
out=$(MANPATH=$MAN systemd-analyze verify --root="$R" $units 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then
    pass "systemd-analyze verify prints nothing for: $(echo "$units" | tr '\n' ' ')"
else
    fail "systemd-analyze verify (rc $rc):
$out"
fi

for unit in "$PKG"/systemd/*.service; do
    name=$(basename "$unit")
    max=$MAX_EXPOSURE_HELPER
    [ "$name" = nichealthd.service ] && max=$MAX_EXPOSURE_DAEMON
    threshold=$(awk -v m="$max" 'BEGIN { printf "%d", m * 10 }')
    out=$(systemd-analyze security --offline=yes --no-pager --threshold="$threshold" "$unit" 2>&1)
    rc=$?
    score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    if [ -z "$score" ]; then
        fail "systemd-analyze security printed no exposure level for $name:
$out"
    elif [ $rc -ne 0 ] || ! awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
        fail "$name exposure $score > $max (rc $rc); items that are not ok:
$(printf '%s\n' "$out" | grep '✗')"
    else
        pass "$name exposure $score (limit $max)"
    fi
done

# The shipped drop-ins must verify as they are, and the daemon's unit with
# one of them must still be hardened: the metrics ones widen the network,
# the transceivers one grants CAP_NET_ADMIN for the modules' EEPROM, nothing
# else.
for dropin in "$PKG"/examples/metrics*.conf "$PKG"/examples/transceivers.conf; do
    name=$(basename "$dropin")
    D=$W/dropin-$name
    cp -a "$R" "$D"
    mkdir -p "$D/etc/systemd/system/nichealthd.service.d"
    cp "$dropin" "$D/etc/systemd/system/nichealthd.service.d/$name"
    out=$(MANPATH=$MAN systemd-analyze verify --root="$D" nichealthd.service 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && [ -z "$out" ]; then
        pass "systemd-analyze verify prints nothing for nichealthd.service with $name"
    else
        fail "systemd-analyze verify nichealthd.service with $name (rc $rc):
$out"
    fi
    out=$(systemd-analyze security --offline=yes --no-pager --root="$D" nichealthd.service 2>&1)
    score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    if [ -n "$score" ] && awk -v s="$score" -v m="$MAX_EXPOSURE_DAEMON" 'BEGIN { exit !(s <= m) }'; then
        pass "nichealthd.service with $name: exposure $score (limit $MAX_EXPOSURE_DAEMON)"
    else
        fail "nichealthd.service with $name: exposure ${score:-unknown} > $MAX_EXPOSURE_DAEMON:
$(printf '%s\n' "$out" | grep '✗')"
    fi
done

# --- sysusers.d / tmpfiles.d --------------------------------------------------
U=$W/users
mkdir -p "$U/etc"
if out=$(systemd-sysusers --root="$U" "$PKG/sysusers.d/nichealthd.conf" 2>&1) &&
    grep -q '^nichealthd:' "$U/etc/passwd" && grep -q '^nichealth-admin:' "$U/etc/group"; then
    pass "sysusers.d creates nichealthd and nichealth-admin"
else
    fail "sysusers.d: $out"
fi
if out=$(systemd-tmpfiles --root="$U" --create "$PKG/tmpfiles.d/nichealthd.conf" 2>&1) && [ -z "$out" ] &&
    [ "$(stat -c %a "$U/var/lib/nichealthd")" = 750 ]; then
    pass "tmpfiles.d creates /var/lib/nichealthd 0750"
else
    fail "tmpfiles.d: $out"
fi

# --- journal catalog (installed as is) -----------------------------------------
C=$W/catalog
mkdir -p "$C/usr/lib/systemd/catalog"
cp "$PKG/journal/nichealthd.catalog" "$C/usr/lib/systemd/catalog/"
entries=$(grep -c '^-- ' "$PKG/journal/nichealthd.catalog")
if out=$(journalctl --root="$C" --update-catalog 2>&1) && [ -z "$out" ] &&
    [ "$(journalctl --root="$C" --list-catalog | wc -l)" = "$entries" ]; then
    pass "journal catalog: all $entries entries load with journalctl --update-catalog"
else
    fail "journal catalog does not load cleanly ($entries entries): $out"
fi

# --- shell ------------------------------------------------------------------
for s in "$PKG"/debian/postinst "$PKG"/debian/prerm "$PKG"/debian/postrm \
         "$PKG"/build-deb.sh "$PKG"/install.sh "$PKG"/test/*.sh; do
    if out=$(sh -n "$s" 2>&1); then pass "sh -n $(basename "$s")"; else fail "sh -n $s: $out"; fi
done
if out=$(bash -n "$PKG/completion/nichealthctl.bash" 2>&1); then pass "bash -n completion"
else fail "bash completion: $out"; fi
if need shellcheck; then
    if out=$(shellcheck -S warning "$PKG"/debian/postinst "$PKG"/debian/prerm "$PKG"/debian/postrm \
            "$PKG"/build-deb.sh "$PKG"/install.sh "$PKG"/test/*.sh 2>&1) &&
        out=$(shellcheck -s bash -S warning "$PKG/completion/nichealthctl.bash" 2>&1); then
        pass "shellcheck"
    else
        fail "shellcheck:
$out"
    fi
else
    skip "shellcheck not installed"
fi
if need zsh; then
    if out=$(zsh -n "$PKG/completion/_nichealthctl" 2>&1); then pass "zsh -n completion"
    else fail "zsh completion: $out"; fi
fi

# --- against the built binaries --------------------------------------------
if [ -x "$BIN_DIR/nichealthd" ] && [ -x "$BIN_DIR/nichealthctl" ]; then
    for variant in shipped uncommented; do
        cfg=$W/config-$variant.toml
        if [ $variant = shipped ]; then cp "$PKG/config/config.toml" "$cfg"
        else sed 's/^#\([A-Za-z[]\)/\1/' "$PKG/config/config.toml" > "$cfg"; fi
        if out=$("$BIN_DIR/nichealthd" --check-config --config "$cfg" 2>&1); then
            pass "nichealthd --check-config accepts the $variant default config"
        else
            fail "nichealthd --check-config refuses the $variant default config: $out"
        fi
    done
    # Every flag documented in nichealthd(8) exists, and every flag the
    # daemon has is documented.
    documented=$("$MANGEN" -src "$PKG/man/nichealth.md" -list flags:nichealthd | sort -u)
    actual=$("$BIN_DIR/nichealthd" --help 2>&1 | grep -o '^ *--*[a-z][a-z0-9-]*' | sed 's/^ *-*/--/' | sort -u)
    if [ -n "$actual" ] && [ "$documented" = "$actual" ]; then
        pass "nichealthd(8) documents exactly the flags of nichealthd --help"
    else
        fail "nichealthd(8) flags differ from nichealthd --help (< documented, > binary):
$(printf '%s\n' "$documented" > "$W/a"; printf '%s\n' "$actual" > "$W/b"; diff "$W/a" "$W/b")"
    fi
    # ...and every sub-command of nichealthctl --help ("Commands:" section)
    # is documented in nichealthctl(1), and the other way round.
    documented=$("$MANGEN" -src "$PKG/man/nichealth.md" -list commands:nichealthctl | sort -u)
    actual=$("$BIN_DIR/nichealthctl" --help 2>&1 | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' | sort -u)
    if [ -n "$actual" ] && [ "$documented" = "$actual" ]; then
        pass "nichealthctl(1) documents exactly the commands of nichealthctl --help"
    else
        fail "nichealthctl(1) commands differ from nichealthctl --help (< documented, > binary):
$(printf '%s\n' "$documented" > "$W/a"; printf '%s\n' "$actual" > "$W/b"; diff "$W/a" "$W/b")"
    fi
else
    skip "no binaries in $BIN_DIR: config and flag checks against them not run (make build)"
fi

# --- static daemon, dynamic MAD helper ----------------------------------------
# nichealthd links no C: it runs on any host whatever its libc and
# libraries; only nichealth-mad links rdma-core's MAD libraries, and only
# those and libc (DESIGN.md section 13).
if [ -x "$BIN_DIR/nichealthd" ] && need readelf; then
    for b in nichealthd nichealthctl nichealth-fabric; do
        [ -x "$BIN_DIR/$b" ] || continue
        if readelf -l "$BIN_DIR/$b" | grep -q 'INTERP' || readelf -d "$BIN_DIR/$b" 2>/dev/null | grep -q 'NEEDED'; then
            fail "$b is dynamically linked ($(readelf -d "$BIN_DIR/$b" | grep NEEDED | tr -s ' ' | tr '\n' ';')): build it with CGO_ENABLED=0 (make build)"
        else
            pass "$b is a static binary"
        fi
    done
    if [ -x "$BIN_DIR/nichealth-mad" ]; then
        needed=$(readelf -d "$BIN_DIR/nichealth-mad" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
        if [ "$needed" = "libc.so.6 libibmad.so.5 libibumad.so.3 " ]; then
            pass "nichealth-mad links exactly libibumad, libibmad and libc"
        else
            fail "nichealth-mad links: $needed (want libc.so.6 libibmad.so.5 libibumad.so.3)"
        fi
    else
        fail "no $BIN_DIR/nichealth-mad (make build; needs libibumad-dev and libibmad-dev)"
    fi
fi

if [ $failures -ne 0 ]; then
    echo "unit-quality: $failures check(s) failed"
    exit 1
fi
echo "unit-quality: all checks passed"
