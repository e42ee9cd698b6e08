package localbus

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Bus is a running private bus.
type Bus struct {
	// Address is the value for DBUS_SYSTEM_BUS_ADDRESS.
	Address string
	cmd     *exec.Cmd
}

// config is a system bus (policy checks behave as on a real host) whose
// default policy lets anyone own names and call anything: the daemon under
// demonstration runs as the invoking user, not as root or nichealthd.
const config = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

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
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(config, sock)), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", conf, err)
	}
	c := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile")
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(sock); err == nil {
			return &Bus{Address: "unix:path=" + sock, cmd: c}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Process.Kill()
	c.Wait()
	return nil, fmt.Errorf("dbus-daemon did not create %s within 5s", sock)
}

// Stop ends the bus.
func (b *Bus) Stop() {
	if b != nil && b.cmd.Process != nil {
		b.cmd.Process.Kill()
		b.cmd.Wait()
	}
}
