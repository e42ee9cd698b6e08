package firmware

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
	"github.com/nichealth/nichealthd/event"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"functions":{"0000:0c:00.0":{"errors":{"fw_fatal":3,"tx":0},"raised":{"devlink:fw_fatal":"2026-12-01T09:00:00Z","firmware-activation-pending":"2026-12-01T09:01:00Z"}},"0000:0d:00.1":{"errors":{"fw":1}}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}

// A finding the outbox said before the state was saved is in the memory
// after the replay, and its clear takes it out again.
func TestStateFile_ReplayedFindingIsRaisedThenCleared(t *testing.T) {
	c := NewCheck()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	md := map[string]string{"pci": "0000:0c:00.0", "finding": "devlink:fw_fatal"}
	c.Replay(&event.Event{Kind: event.KindFirmwareHealth, CheckName: event.FirmwareHealthCheck, Metadata: md, GeneratedTimestamp: at})
	if !c.mem.Functions["0000:0c:00.0"].Raised.Has("devlink:fw_fatal") {
		t.Fatal("the replayed raise is not in the memory")
	}
	c.Replay(&event.Event{Kind: event.KindFirmwareHealthOK, CheckName: event.FirmwareHealthCheck, Metadata: md, GeneratedTimestamp: at})
	if c.mem.Functions["0000:0c:00.0"].Raised.Has("devlink:fw_fatal") {
		t.Fatal("the replayed clear left the finding raised")
	}
}
