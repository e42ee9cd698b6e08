package farend

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"ports":{"mlx5_0/1":{"peerGUID":"0x0002c90300a1b2c3","peerPort":17,"peerName":"leaf-3 MF0;sw:MQM8700/U1","peerLID":4,"values":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"at":"2026-12-01T10:00:00Z","wide":true,"latched":{"symbol_error":"2026-12-01T09:00:00Z","unstable":"2026-12-01T09:30:00Z"},"saturated":{"PortRcvErrors":"2026-12-01T08:00:00Z"},"windows":{"symbol_error":{"starts":[{"value":1,"timestamp":"2026-12-01T09:59:00Z"}],"judgedTo":"2026-12-01T09:58:00Z"}},"saturationAcked":{"PortXmitDiscards":"2026-12-01T07:00:00Z"},"peers":[{"guid":"0x0002c90300a1b2c4","port":3,"name":"leaf-2","at":"2026-11-30T10:00:00Z"},{"guid":"0x0002c90300a1b2c3","port":17,"at":"2026-12-01T10:00:00Z"}],"stableSince":"2026-12-01T09:30:00Z","witness":{"field":"LinkDownedCounter","delta":1,"at":"2026-12-01T09:45:00Z","episode":{"kind":"link-down","from":"2026-12-01T09:44:00Z","to":"2026-12-01T09:44:30Z"}}},"mlx5_10/2":{"peerGUID":"0x0002c90300a1b2c5","peerPort":1,"values":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"at":"2026-12-01T10:00:00Z","stableSince":"0001-01-01T00:00:00Z"},"mlx5_2/1":{"peerGUID":"0x0002c90300a1b2c6","peerPort":255,"values":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"at":"2026-12-01T10:00:00Z","latched":{"link_downed":"2026-12-01T09:00:00Z"},"stableSince":"0001-01-01T00:00:00Z"}},"lost":{"since":"2026-12-01T09:00:00Z","reason":"helper exited"}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}

func TestStateFile_FarEndPortsNoCheckWroteAreDropped(t *testing.T) {
	const peer = `{"peerGUID":"0x0002c90300a1b2c3","peerPort":17,"values":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"at":"2026-12-01T10:00:00Z"}`
	latchtest.Drops(t, NewCheck(), `{"version":1,"ports":{"mlx5_0":`+peer+`,"mlx5_0/0":`+peer+`,"mlx5_0/1":`+peer+`,"mlx5_0/2":{"peerPort":17}}}`,
		`ports["mlx5_0"]: not DEVICE/PORT`, `ports["mlx5_0/0"]: not DEVICE/PORT`, `ports["mlx5_0/2"]: no valid peer`)
}
