// Package component is how a test says that a real component it needs (a
// private dbus-daemon, journald, systemd-nspawn, setpriv, chattr, groff,
// root) is not available here.
//
// On a developer machine such a test is skipped with the reason. Under CI
// (CI=true, as .ci/run and every common CI service set it) it fails instead:
// a suite that is green because nothing real ran would say nothing about
// the product.
package component
