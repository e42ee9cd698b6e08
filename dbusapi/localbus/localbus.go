package localbus

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Bus is a running private bus.
type Bus struct {
	// Address is the value for DBUS_SYSTEM_BUS_ADDRESS.
	Address string
	cmd     *exec.Cmd
}

// PermissivePolicy lets anyone own names and call anything: the daemon
// under demonstration runs as the invoking user, not as root or nichealthd.
const PermissivePolicy = `  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
`

// HostPolicy is the <policy context="default"> of the stock
// /usr/share/dbus-1/system.conf: connect, no names, no method calls, except
// to the bus itself. The project's policy file (in an included directory)
// punches its holes into it, exactly as on a real system bus.
const HostPolicy = `  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="UpdateActivationEnvironment"/>
  </policy>
`

// Config is a system-type bus configuration (policy checks behave as on a
// real host; a session bus would refuse other uids) listening on the
// address value listen (escaped for a D-Bus address), with policy and, when
// includeDir is set, the policy files in it.
func Config(listen, policy, includeDir string) string {
	inc := ""
	if includeDir != "" {
		inc = "  <includedir>" + includeDir + "</includedir>\n"
	}
	return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=` + listen + `</listen>
  <auth>EXTERNAL</auth>
` + policy + inc + `</busconfig>
`
}

// Start runs dbus-daemon with its socket and configuration in dir. It fails
// when dbus-daemon is not installed (apt-get install dbus) or does not come
// up within five seconds.
func Start(dir string) (*Bus, error) {
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return nil, fmt.Errorf("dbus-daemon not installed (apt-get install dbus): %w", err)
	}
	sock := filepath.Join(dir, "bus.sock")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(Config(sock, PermissivePolicy, "")), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", conf, err)
	}
	// --print-address writes the address once the bus accepts connections;
	// the socket file alone exists between bind and listen, when a client
	// is refused.
	c := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(line)
		io.Copy(io.Discard, out) // it prints nothing more; keep the pipe drained
	}()
	select {
	case a := <-addr:
		if a != "" {
			return &Bus{Address: a, cmd: c}, nil
		}
	case <-time.After(5 * time.Second):
	}
	c.Process.Kill()
	c.Wait()
	return nil, fmt.Errorf("dbus-daemon did not start listening on %s within 5s", sock)
}

// Stop ends the bus.
func (b *Bus) Stop() {
	if b != nil && b.cmd.Process != nil {
		b.cmd.Process.Kill()
		b.cmd.Wait()
	}
}
