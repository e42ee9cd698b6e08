package sysfs

// Link is one reading of a port: its logical state (ports/<n>/state) and
// its physical state (ports/<n>/phys_state). The zero Link is a port whose
// state was never read, or could not be.
type Link struct {
	State PortState
	Phys  PortState
}

// Known reports whether the logical state was read.
func (l Link) Known() bool { return l.State.ID != 0 }

// Up reports whether the port carries traffic: logical ACTIVE and
// physical LinkUp, the seeds' one definition of a healthy port (link
// state 3.4 step 3) and of an active port in card homogeneity (4.3.2).
// Every judgement of "up" (the port state check, card homogeneity, link
// sanity, the node-local rules, wait-ready through the daemon's verdict)
// asks this method and nothing else.
//
// ACTIVE_DEFER (5) is not up. The InfiniBand spec enters it from ACTIVE
// when the physical link drops into error recovery: the port keeps its
// configuration while the link-down timer runs, and returns to ACTIVE if
// the link recovers in time or falls to DOWN if not. No data moves
// meanwhile, so it is a non-fatal, transient state like the
// LinkErrorRecovery it accompanies; a port that stays there falls behind
// its peers and card homogeneity escalates it after its hold.
func (l Link) Up() bool { return l.State.ID == StateActive && l.Phys.ID == PhysLinkUp }

// Down reports whether the logical state is DOWN.
func (l Link) Down() bool { return l.State.ID == StateDown }
