#!/bin/sh
# End-to-end test of the .deb under a real systemd, D-Bus and journald.
#
#   packaging/test/e2e-systemd.sh [BIN_DIR [DEB]]
#
# BIN_DIR (default $BIN_DIR, then bin) must hold nichealth-sim; DEB defaults
# to a package built from BIN_DIR with packaging/build-deb.sh.
#
# The host's own root is booted copy-on-write (overlayfs on a tmpfs) in a
# systemd-nspawn container with systemd as PID 1. Inside, the package is
# installed with dpkg and the daemon watches a simulated DGX H100 built by
# nichealth-sim, while the test checks readiness, STATUS=, journal fields,
# D-Bus properties and policy, live reload, a stuck sysfs read, and a
# watchdog restart with the state file intact. Every step is printed.
#
# Needs root. Where the machine cannot run containers (no systemd-nspawn even
# after trying to install it, or the container does not boot) it prints
# "SKIPPED: <why>" and exits 0, except under CI (CI=true): there a run with
# no real-systemd test must not look green, so it fails with the reason.
# Any failed check exits 1.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN_DIR=${1:-${BIN_DIR:-bin}}
DEB=${2:-}
case $BIN_DIR in /*) ;; *) BIN_DIR=$ROOT/$BIN_DIR ;; esac

SIM_ROOT=/var/lib/nichealth-sim     # the simulated host, inside the container
STATE=/var/lib/nichealthd/state.json
BUS=org.nichealth.NicHealth1
OBJ=/org/nichealth/NicHealth1
MGR=org.nichealth.NicHealth1.Manager
# Port 1 of mlx5_0: '_' in the device name is escaped as _5f (dbusapi.PortPath).
PORT_OBJ=$OBJ/port/mlx5_5f0_1

START=$(date +%s)
say() { printf '\n== [%ss] %s\n' "$(($(date +%s) - START))" "$*"; }
under_ci() { case ${CI:-} in [Tt][Rr][Uu][Ee] | 1 | [Yy][Ee][Ss]) return 0 ;; esac; return 1; }
SKIPPED=""
skip() {
    echo "############################################################"
    if under_ci; then
        echo "FAIL: CI=$CI and the real-systemd test cannot run: $*"
        echo "############################################################"
        exit 1
    fi
    echo "SKIPPED: $*"
    echo "############################################################"
    SKIPPED=$*
    exit 0
}
die() { echo "FAIL: $*"; exit 1; }
# bad records a failed check whose later checks can still run.
FAILED=0
bad() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; }

[ "$(id -u)" = 0 ] || skip "the systemd end-to-end test needs root to run a container"
[ -x "$BIN_DIR/nichealth-sim" ] || die "$BIN_DIR/nichealth-sim not found: run 'make build' first"
if [ -z "$DEB" ]; then
    DEB=$("$ROOT/packaging/build-deb.sh" "$BIN_DIR" "$(mktemp -d)" | tail -n1)
fi
[ -f "$DEB" ] || die "package $DEB not found"

# Nothing is installed behind the operator's back: .ci/run installs the
# package; on a workstation the test says what is missing.
command -v systemd-nspawn >/dev/null 2>&1 ||
    skip "systemd-nspawn is missing (apt-get install systemd-container)"

# --- boot -------------------------------------------------------------------
M=nhe2e$$
W=$(mktemp -d /tmp/nichealth-e2e.XXXXXX)
R=$W/root
NSPAWN=""
P=""
cleanup() {
    rc=$?
    set +e
    if [ -n "$P" ] && [ -d "/proc/$P" ]; then
        nsenter -t "$P" -a systemctl poweroff >/dev/null 2>&1
    fi
    if [ -n "$NSPAWN" ]; then
        i=0
        while kill -0 "$NSPAWN" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        kill -0 "$NSPAWN" 2>/dev/null && kill -KILL "$NSPAWN" 2>/dev/null
        wait "$NSPAWN" 2>/dev/null
    fi
    mountpoint -q "$R" && umount "$R"
    mountpoint -q "$W" && umount "$W"
    rmdir "$W" 2>/dev/null
    # Only this run's nspawn state; other containers may be running.
    rm -rf "/run/systemd/nspawn/propagate/$M" "/run/systemd/nspawn/locks/$M"
    rmdir /run/systemd/nspawn/propagate /run/systemd/nspawn/locks /run/systemd/nspawn 2>/dev/null
    if [ $rc -ne 0 ]; then
        echo "e2e-systemd: FAIL (exit $rc)"
    elif [ -n "$SKIPPED" ]; then
        echo "e2e-systemd: SKIPPED ($SKIPPED)"
    else
        echo "e2e-systemd: PASS"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "boot the host root copy-on-write under systemd-nspawn"
mount -t tmpfs tmpfs "$W"
mkdir -p "$W/upper" "$W/work" "$R"
mount -t overlay overlay -o "lowerdir=/,upperdir=$W/upper,workdir=$W/work" "$R"
systemd-id128 new > "$R/etc/machine-id"
# The image's policy-rc.d blocks service starts; .dockerenv confuses systemd.
rm -f "$R/.dockerenv" "$R/usr/sbin/policy-rc.d"
systemctl --root="$R" mask postgresql.service console-getty.service apt-daily.timer \
    apt-daily-upgrade.timer man-db.timer e2scrub_all.timer systemd-timesyncd.service >/dev/null 2>&1
# man-db's index rebuild on every dpkg -i costs seconds and tests nothing here.
rm -f "$R/var/lib/man-db/auto-update"
# A copy of the host's own installation (if any) must not mask the package.
rm -rf "$R/etc/systemd/system/nichealthd.service.d" "$R/var/lib/nichealthd" "$R/etc/nichealthd"
systemd-nspawn -q -D "$R" --private-network --register=no --keep-unit --console=passive -M "$M" -b \
    > "$W/nspawn.log" 2>&1 &
NSPAWN=$!
i=0
while [ -z "$P" ] && [ $i -lt 100 ]; do
    kill -0 "$NSPAWN" 2>/dev/null || break
    P=$(pgrep -P "$NSPAWN" -x systemd || true)
    [ -n "$P" ] || { sleep 0.1; i=$((i + 1)); }
done
[ -n "$P" ] || skip "systemd-nspawn did not boot a container here: $(tail -n5 "$W/nspawn.log")"
i=0
while [ ! -S "/proc/$P/root/run/systemd/private" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "/proc/$P/root/run/systemd/private" ] || skip "the container's systemd never opened its private socket"
state=$(timeout 60 nsenter -t "$P" -a systemctl is-system-running --wait 2>&1 || true)
echo "container systemd (pid $P on the host): $state"
case $state in running|degraded) ;; *) skip "the container did not reach running: $state" ;; esac

# ctr runs a command inside the container.
ctr() { nsenter -t "$P" -a "$@"; }
# until TRIES CMD...: retries CMD every 0.2 s up to TRIES times.
until_ok() {
    n=$1; shift
    while [ "$n" -gt 0 ]; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2; n=$((n - 1))
    done
    return 1
}
prop() { ctr busctl get-property "$BUS" "$1" "$2" "$3" 2>&1; }
generation() { prop "$OBJ" "$MGR" ConfigGeneration | awk '{print $2}'; }
journal() { ctr journalctl -q --no-pager -o json "$@" 2>/dev/null; }
# Unhealthy fatal events of mlx5_0 port 1 in the journal.
fatal_events() {
    journal NIC_DEVICE=mlx5_0 NIC_PORT=1 | grep -c '"IS_FATAL":"true"' || true
}

# --- install ------------------------------------------------------------------
say "dpkg -i $(basename "$DEB")"
mkdir -p "$R/root/e2e"
cp "$DEB" "$R/root/e2e/nichealthd.deb"
cp "$BIN_DIR/nichealth-sim" "$R/root/e2e/nichealth-sim"
ctr dpkg -i /root/e2e/nichealthd.deb
ctr id nichealthd
ctr getent group nichealth-admin >/dev/null || die "group nichealth-admin not created"
[ "$(ctr systemctl is-enabled nichealthd.service)" = enabled ] || die "nichealthd.service not enabled by postinst"
# No RDMA devices in the container's sysfs: postinst must not have started it.
[ "$(ctr systemctl show -P ActiveState nichealthd.service)" = inactive ] ||
    die "postinst started nichealthd on a host without RDMA devices"
for f in /usr/share/nichealthd/prometheus/nichealth.rules.yml /usr/share/nichealthd/grafana/nichealthd.json \
         /usr/lib/udev/rules.d/60-nichealthd-vpd.rules /usr/lib/udev/rules.d/60-nichealthd-umad.rules \
         /usr/libexec/nichealthd/nichealth-mad; do
    ctr test -f "$f" || die "$f not installed"
done
ok "installed, user and group created, enabled, not started (no /sys/class/infiniband); fleet rules, dashboard, udev rules and the MAD helper in place"
# The package ships the fabric map and its example dump.
ctr nichealth-fabric map --ibnetdiscover /usr/share/doc/nichealthd/examples/fabric-dgx-h100.topo --json |
    grep -q '"switches": 12' || die "nichealth-fabric from the package does not map the shipped example fabric"
ok "nichealth-fabric maps the shipped example fabric"

# One version everywhere: the package, both binaries and (below) D-Bus.
# shellcheck disable=SC2016 # dpkg-query's own ${Version} field syntax
PKG_VERSION=$(ctr dpkg-query -W -f '${Version}' nichealthd)
for b in nichealthd nichealthctl; do
    got=$(ctr /usr/bin/$b --version)
    [ "$got" = "$b $PKG_VERSION" ] || bad "$b --version says '$got', the package is $PKG_VERSION"
done
for f in copyright changelog.gz LICENSE; do
    ctr test -s /usr/share/doc/nichealthd/$f || bad "/usr/share/doc/nichealthd/$f not installed"
done
ok "package, nichealthd and nichealthctl are all version $PKG_VERSION; copyright, changelog and LICENSE installed"

say "simulated DGX H100 at $SIM_ROOT"
ctr /root/e2e/nichealth-sim build --shape dgx-h100 --root "$SIM_ROOT"
ctr chmod -R a+rX "$SIM_ROOT"
ctr ls "$SIM_ROOT/sys/class/infiniband"

cat > "$R/etc/nichealthd/config.toml" <<EOF
sysfsRoot = "$SIM_ROOT/sys"
procfsRoot = "$SIM_ROOT/proc"
devRoot = "$SIM_ROOT/dev"
metadataPath = "$SIM_ROOT/var/lib/nvsentinel/gpu_metadata.json"
nodeName = "e2e-node"
pollingInterval = "200ms"
EOF
mkdir -p "$R/etc/systemd/system/nichealthd.service.d" "$R/etc/systemd/system/nichealthd-wait-ready.service.d"
# A short watchdog so that the stuck-daemon check takes seconds, and a short
# abort timeout in case the stopped process does not die of SIGABRT.
cat > "$R/etc/systemd/system/nichealthd.service.d/e2e.conf" <<'EOF'
[Service]
WatchdogSec=3s
TimeoutAbortSec=5s
EOF
cat > "$R/etc/systemd/system/nichealthd-wait-ready.service.d/e2e.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=/usr/bin/nichealthctl wait-ready --timeout 20s
EOF
ctr systemctl daemon-reload
cat "$R/etc/nichealthd/config.toml"
# The container has no RDMA devices; a stand-in node lets the sandbox check
# below see whether /dev/infiniband reaches the service.
ctr mkdir -p /dev/infiniband
ctr touch /dev/infiniband/uverbs0
# World-writable, so that only the read-only bind can refuse a write.
ctr chmod 0666 /dev/infiniband/uverbs0

# --- readiness ----------------------------------------------------------------
say "systemctl start nichealthd returns only once READY=1 was sent"
ctr systemctl start nichealthd.service
active=$(ctr systemctl show -P ActiveState nichealthd.service)
sub=$(ctr systemctl show -P SubState nichealthd.service)
echo "right after start returned: ActiveState=$active SubState=$sub"
[ "$active" = active ] || die "ActiveState=$active right after start returned (Type=notify must wait for READY=1)"
ctr journalctl -q --no-pager -o short-precise -u nichealthd.service | tail -n 12
# The first poll is logged by the daemon before it sends READY=1; systemd
# logs "Started" only after READY=1, so in the unit's journal the first-poll
# line comes first.
lines=$(ctr journalctl -q --no-pager -o short-monotonic -u nichealthd.service |
    grep -i -e 'first poll' -e ' Started nichealthd' || true)
printf '%s\n' "$lines"
case $(printf '%s\n' "$lines" | head -n1) in
    *[Ff]irst\ poll*) ok "first-poll log precedes systemd's Started line" ;;
    *) bad "the first-poll log does not precede 'Started' in journalctl -u nichealthd (nichealthd must log the first poll before it sends READY=1)" ;;
esac

v=$(prop "$OBJ" "$MGR" Version)
[ "$v" = "s \"$PKG_VERSION\"" ] || bad "the Manager's Version property is $v, the package is $PKG_VERSION"

say "the sandbox: what the service itself can see"
# The unit's PrivateDevices=, BindReadOnlyPaths=-/dev/infiniband,
# ProtectKernelTunables=, ProtectProc= and PrivateUsers= must still let the
# daemon's user read the real sysfs/procfs files it needs and stat the RDMA
# character devices. Seen from inside the service's own namespaces.
mainpid=$(ctr systemctl show -P MainPID nichealthd.service)
# Its mount namespace, as its user; not its user namespace, where setgroups()
# is refused (the kernel checks files against the same real uid either way).
sandbox() { ctr nsenter -t "$mainpid" -m setpriv --reuid=nichealthd --regid=nichealthd --clear-groups "$@"; }
if out=$(sandbox true 2>&1); then
    files="/proc/net/route /proc/sys/kernel/random/boot_id /sys/class/net/lo/operstate"
    # Kernels built or booted without IPv6 have no ipv6_route; the daemon skips it then.
    if ctr test -e /proc/net/ipv6_route; then files="$files /proc/net/ipv6_route"; fi
    for f in $files; do
        if out=$(sandbox head -c 64 "$f" 2>&1); then ok "the service reads $f"
        else bad "the service cannot read $f: $out"; fi
    done
    echo "service /dev: $(sandbox ls /dev | tr '\n' ' ')"
    if sandbox test -e /dev/infiniband/uverbs0; then ok "the service sees /dev/infiniband/uverbs0"
    else bad "the service does not see /dev/infiniband/uverbs0 (BindReadOnlyPaths=-/dev/infiniband)"; fi
    if out=$(sandbox sh -c 'echo x > /dev/infiniband/uverbs0' 2>&1); then
        bad "the service could write to /dev/infiniband/uverbs0"
    else
        ok "/dev/infiniband is read-only for the service: $out"
    fi
else
    bad "cannot enter the service's namespaces as its user: $out"
fi

say "systemctl status shows the daemon's STATUS= line"
ctr systemctl status --no-pager nichealthd.service | head -n 12 || true
if ctr systemctl status --no-pager nichealthd.service | grep -q 'Status: ".*monitored'; then
    ok "STATUS= shown"
else
    bad "systemctl status has no Status: line with 'monitored'"
fi

say "nichealthd-wait-ready.service succeeds on a healthy node"
if ctr systemctl start nichealthd-wait-ready.service; then
    ok "wait-ready: $(ctr systemctl show -P ActiveState nichealthd-wait-ready.service)"
else
    ctr journalctl -q --no-pager -u nichealthd-wait-ready.service | tail -n 5
    bad "nichealthd-wait-ready.service failed on the simulated healthy node"
fi

say "D-Bus: port object of mlx5_0 port 1"
ctr busctl tree --list "$BUS" | grep -F "$PORT_OBJ" || die "no $PORT_OBJ in busctl tree $BUS"
healthy=$(prop "$PORT_OBJ" org.nichealth.NicHealth1.Port Healthy)
echo "Healthy: $healthy"
[ "$healthy" = "b true" ] || die "mlx5_0 port 1 Healthy is '$healthy' before any fault"
gen0=$(generation)
echo "ConfigGeneration: $gen0"

# --- a fault ------------------------------------------------------------------
say "fault: mlx5_0 port 1 DOWN/Disabled"
ctr /root/e2e/nichealth-sim port-state --root "$SIM_ROOT" mlx5_0 1 DOWN Disabled
until_ok 50 sh -c "[ \$(nsenter -t $P -a journalctl -q --no-pager -o json NIC_DEVICE=mlx5_0 NIC_PORT=1 | grep -c '\"IS_FATAL\":\"true\"') -ge 1 ]" ||
    die "no fatal event for mlx5_0 port 1 in journalctl -o json NIC_DEVICE=mlx5_0 within 10 s"
journal NIC_DEVICE=mlx5_0 NIC_PORT=1 | grep '"IS_FATAL":"true"' | tail -n1 | cut -c1-600
until_ok 25 sh -c "[ \"\$(nsenter -t $P -a busctl get-property $BUS $PORT_OBJ org.nichealth.NicHealth1.Port Healthy)\" = 'b false' ]" ||
    die "D-Bus Healthy of mlx5_0 port 1 is not false: $(prop "$PORT_OBJ" org.nichealth.NicHealth1.Port Healthy)"
echo "Healthy: $(prop "$PORT_OBJ" org.nichealth.NicHealth1.Port Healthy)"
ok "the fault is in the journal and on D-Bus"

# --- live configuration -------------------------------------------------------
say "edit the configuration (symbol_error threshold 10 -> 25): applied live"
cp "$R/etc/nichealthd/config.toml" "$W/config.new"
cat >> "$W/config.new" <<'EOF'

[[counterDetection.counters]]
name = "symbol_error"
threshold = 25.0
EOF
# An editor's atomic save: write beside the file, rename over it.
cp "$W/config.new" "$R/etc/nichealthd/.config.toml.e2e"
ctr mv /etc/nichealthd/.config.toml.e2e /etc/nichealthd/config.toml
want=$((gen0 + 1))
until_ok 50 sh -c "[ \"\$(nsenter -t $P -a busctl get-property $BUS $OBJ $MGR ConfigGeneration)\" = 't $want' ]" ||
    die "ConfigGeneration is $(generation), want $want after the edit"
ctr nichealthctl status || true
ok "config generation $want after the edit"

say "systemctl reload nichealthd"
ctr systemctl reload nichealthd.service
want=$((want + 1))
until_ok 50 sh -c "[ \"\$(nsenter -t $P -a busctl get-property $BUS $OBJ $MGR ConfigGeneration)\" = 't $want' ]" ||
    die "ConfigGeneration is $(generation), want $want after systemctl reload"
err=$(prop "$OBJ" "$MGR" LastReloadError)
[ "$err" = 's ""' ] || die "LastReloadError after a valid reload: $err"
ok "config generation $want after systemctl reload"

# --- a read stuck in the kernel ----------------------------------------------
say "mlx5_1 port 1 counters/symbol_error becomes a FIFO (a read that never returns)"
ctr /root/e2e/nichealth-sim fifo --root "$SIM_ROOT" mlx5_1 1 counters/symbol_error
until_ok 50 sh -c "nsenter -t $P -a journalctl -q --no-pager -o json EVENT_KIND=read-stuck | grep -q mlx5_1" ||
    die "no EVENT_KIND=read-stuck entry for mlx5_1 in the journal within 10 s"
journal EVENT_KIND=read-stuck | tail -n1 | cut -c1-600
sleep 1
[ "$(ctr systemctl show -P ActiveState nichealthd.service)" = active ] || die "nichealthd is not active after a stuck read"
[ "$(ctr systemctl show -P NRestarts nichealthd.service)" = 0 ] || die "nichealthd restarted because of a stuck read"
ok "stuck read reported, the service stayed up"
ctr /root/e2e/nichealth-sim unfifo --root "$SIM_ROOT" mlx5_1 1 counters/symbol_error || true

# --- watchdog -------------------------------------------------------------------
say "SIGSTOP the daemon: the watchdog kills it and Restart= brings it back"
fatal_before=$(fatal_events)
pid=$(ctr systemctl show -P MainPID nichealthd.service)
ctr kill -STOP "$pid"
until_ok 150 sh -c "[ \"\$(nsenter -t $P -a systemctl show -P NRestarts nichealthd.service)\" = 1 ] &&
    [ \"\$(nsenter -t $P -a systemctl show -P ActiveState nichealthd.service)\" = active ]" ||
    die "no watchdog restart: NRestarts=$(ctr systemctl show -P NRestarts nichealthd.service) ActiveState=$(ctr systemctl show -P ActiveState nichealthd.service)"
newpid=$(ctr systemctl show -P MainPID nichealthd.service)
ctr journalctl -q --no-pager -u nichealthd.service -g 'atchdog' | tail -n 3 || true
echo "MainPID $pid -> $newpid, NRestarts=$(ctr systemctl show -P NRestarts nichealthd.service)"
[ "$newpid" != "$pid" ] || die "MainPID did not change"
compact=$(tr -d ' \n\t' < "$R$STATE")
printf '%s\n' "$compact" | grep -o '"mlx5_0_1":{[^}]*}' || die "state file $STATE has no port state for mlx5_0_1"
printf '%s\n' "$compact" | grep -o '"mlx5_0_1":{[^}]*}' | grep -q DOWN ||
    die "state file lost the fault of mlx5_0 port 1 across the restart"
# Give the restarted daemon a few polls to (wrongly) repeat the event.
sleep 2
fatal_after=$(fatal_events)
echo "fatal events for mlx5_0 port 1: before the restart $fatal_before, after $fatal_after"
[ "$fatal_after" = "$fatal_before" ] || die "the restart re-announced the fatal event of mlx5_0 port 1"
[ "$(prop "$PORT_OBJ" org.nichealth.NicHealth1.Port Healthy)" = "b false" ] ||
    die "after the restart D-Bus says mlx5_0 port 1 is healthy"
ok "restarted by the watchdog with its state intact and no duplicate event"

# --- D-Bus policy --------------------------------------------------------------
say "D-Bus policy: AcknowledgeReset"
if out=$(ctr setpriv --reuid=nobody --regid=nogroup --clear-groups \
        busctl call "$BUS" "$OBJ" "$MGR" AcknowledgeReset sus mlx5_0 1 "" 2>&1); then
    die "unprivileged AcknowledgeReset was accepted: $out"
fi
echo "nobody: $out"
case $out in *"ccess denied"*) ;; *) die "unprivileged AcknowledgeReset failed, but not with Access denied: $out" ;; esac
out=$(ctr busctl call "$BUS" "$OBJ" "$MGR" AcknowledgeReset sus mlx5_0 1 "" 2>&1 || true)
echo "root: ${out:-(accepted)}"
case $out in *"ccess denied"*) die "root was denied AcknowledgeReset: $out" ;; esac
ok "unprivileged caller denied, root let through"

# --- remote scrape -------------------------------------------------------------
say "metrics for a remote scraper (examples/metrics-remote.conf)"
# The management address stands on lo: the container has no other link.
ctr ip addr add 10.20.0.17/32 dev lo
sed 's|^IPAddressAllow=10.20.255.0/28$|IPAddressAllow=10.20.0.17/32|' \
    "$R/usr/share/doc/nichealthd/examples/metrics-remote.conf" \
    > "$R/etc/systemd/system/nichealthd.service.d/metrics-remote.conf"
# A top-level key: before the tables earlier steps appended.
sed -i '1i metricsAddress = "10.20.0.17:2112"' "$R/etc/nichealthd/config.toml"
ctr systemctl daemon-reload
ctr systemctl restart nichealthd.service ||
    bad "restart with metrics-remote.conf failed: $(ctr journalctl -q --no-pager -u nichealthd.service | tail -n 8)"
if until_ok 50 ctr curl -sf --interface 10.20.0.17 http://10.20.0.17:2112/metrics; then
    ctr curl -sf --interface 10.20.0.17 http://10.20.0.17:2112/metrics | grep -E '^nichealth_(healthy|monitored_ports) '
    ok "scraped http://10.20.0.17:2112/metrics through the shipped drop-in"
else
    bad "no scrape of http://10.20.0.17:2112/metrics with metrics-remote.conf: $(ctr journalctl -q --no-pager -u nichealthd.service | tail -n 5)"
fi

say "uninstall"
ctr dpkg --purge nichealthd
[ ! -e "$R/var/lib/nichealthd" ] || die "purge left /var/lib/nichealthd"
[ "$(ctr systemctl show -P ActiveState nichealthd.service)" != active ] || die "nichealthd still active after purge"
ok "purged: service stopped, state removed"

[ $FAILED -eq 0 ] || die "$FAILED check(s) failed (see FAIL: above)"
