package journal

import "github.com/nichealth/nichealthd/event"

// Message IDs, one per event kind, generated once with `systemd-id128 new`.
// They are a public interface: catalog entries, operators' saved queries
// (`journalctl MESSAGE_ID=…`) and alerting rules key on them, so an ID
// never changes and is never reused for another kind.
const (
	MessageIDPortFatal          = "08a43449f7a342f3b0a6b40c30174905"
	MessageIDPortNonFatal       = "c15ab2b43de34d4ba616d6d8a39b8d88"
	MessageIDPortRecovered      = "33fe3e41c0bf45c7b5a7faa7979b15a2"
	MessageIDPortBaseline       = "20eea726d2db4b43a7239aa29044eaf7"
	MessageIDCounterBreach      = "a92a17e86f9d4dd99d3247fdbe734e15"
	MessageIDCounterRecovered   = "3e3552c13288426db9421239569d74b8"
	MessageIDCounterBaseline    = "b6bf4b9ae58e42afb9a0aca59fbceff7"
	MessageIDCounterSaturated   = "63cd28dccc2041549c53eb30d7d66173"
	MessageIDDeviceDisappeared  = "43f86ebad59041bda02990029aa90fcf"
	MessageIDDeviceReappeared   = "ea5097caed5b49a8aaffdceb5f1a04e1"
	MessageIDCardAnomaly        = "a852eebe501d4017b87c2add7fd4bc67"
	MessageIDCardRecovered      = "940c8ab6c6364492b0f58452aecbf203"
	MessageIDCheckCleared       = "b7b567c3d9624032b6afe7439b8a5187"
	MessageIDReadStuck          = "0d5f8ce957094d46a51c75d494f0a489"
	MessageIDReadRecovered      = "ab1a22906dc84c3ab9d151934a158bfb"
	MessageIDLinkSanity         = "b9c2a485a9494528b118228e44cf94c2"
	MessageIDLinkSanityOK       = "a20f6737f6474ebfa6fb487df019250e"
	MessageIDRuleRaised         = "4af7f7a9bb0b40e6a34aa8e9ebd67b9a"
	MessageIDRuleCleared        = "40aad8a437454425b6ec4acf60d2d91b"
	MessageIDReadParked         = "96491fa78b184bd085a27cf781eeca5f"
	MessageIDReadResumed        = "3bbe207d7c784a78a432ff0a74cd1054"
	MessageIDPCIeAER            = "21cf9a9b22184e86b2ab306dd6ada3c0"
	MessageIDPCIeAERRecovered   = "a23c699b54b04d9687f8dada11d7dd3c"
	MessageIDCounterUnsaturated = "eae9c2ddeb3e4ffcb7c6cfccdcccf88f"
	MessageIDCongestion         = "8f8388f9fab74bf2954609f11d45f050"
	MessageIDCongestionCleared  = "a0e15c9116234382b3fd0944db4a385e"
	MessageIDNoSubnetManager    = "63eb9e4175294be3a0ad962bd69a2750"
	MessageIDSubnetManagerFound = "ffe0e5544e494181bcbecc2371ddfb17"
	MessageIDCheckFailed        = "e34a456c703a4e91a244c1a03d3fc5b3"
	MessageIDCheckResumed       = "44b4e9944cf74c4c87ab404c5cf6bb9c"
	MessageIDFunctionFailed     = "76899e0dad0747c59057ca7a29359c25"
	MessageIDFunctionAbsent     = "2c505c8e70d54c8e8bb9c7c81f87da08"
	MessageIDFunctionOK         = "41fe05dc35534bceb2f492ee3c41c356"
	MessageIDDrift              = "0c24024fe28a4ddf8b6f30c7e2e04a15"
	MessageIDDriftOK            = "a831f72ee571494bb5964ff12966a3e4"
	MessageIDPortsShort         = "409f16923ff3418babaa5957ad88cf5d"
	MessageIDPortsOK            = "842489fd711d485b9cc0ea0e99309140"
	MessageIDKernelLog          = "7c2e6c418d804840b05ef941d9c46bbc"
	MessageIDKernelLogCleared   = "5d9538bb2d59445fbc9c79cad234117f"
	MessageIDPeerBreach         = "98e55d46516a45cc8b9eacc2a1f5d0e9"
	MessageIDPeerRecovered      = "9310d1100a3e4b34988e32372689035e"
	MessageIDPeerSaturated      = "3b8b79d322fa48c5b907d467bc449851"
	MessageIDPeerUnsaturated    = "4e039e71f9f54829919ef39c7096cafe"
	MessageIDFarEndLost         = "329579ac411047f79a5764f2c976a1f5"
	MessageIDFarEndRestored     = "2c181056e45a4028b073a4ef446cee22"
	MessageIDTransceiver        = "85c13033aa964e2db3c97ec81ab42e9f"
	MessageIDTransceiverOK      = "e74dc0ff65d04b06be9511e907792127"
	MessageIDFirmwareHealth     = "43cb978fc4314fc29c33efb55addd714"
	MessageIDFirmwareHealthOK   = "1fe0111b794d47caa60211c208176fee"
	MessageIDRoCE               = "b03e3c45259744d8a042acede02ceb99"
	MessageIDRoCECleared        = "7351e3cf0b4f46ae99cb9d4fb07cd6ac"
)

// MessageID returns the journal MESSAGE_ID of an event kind, and false for
// an empty or unknown kind (such an event is still journaled, without one).
func MessageID(k event.Kind) (string, bool) {
	switch k {
	case event.KindPortFatal:
		return MessageIDPortFatal, true
	case event.KindPortNonFatal:
		return MessageIDPortNonFatal, true
	case event.KindPortRecovered:
		return MessageIDPortRecovered, true
	case event.KindPortBaseline:
		return MessageIDPortBaseline, true
	case event.KindCounterBreach:
		return MessageIDCounterBreach, true
	case event.KindCounterRecovered:
		return MessageIDCounterRecovered, true
	case event.KindCounterBaseline:
		return MessageIDCounterBaseline, true
	case event.KindCounterSaturated:
		return MessageIDCounterSaturated, true
	case event.KindDeviceDisappeared:
		return MessageIDDeviceDisappeared, true
	case event.KindDeviceReappeared:
		return MessageIDDeviceReappeared, true
	case event.KindCardAnomaly:
		return MessageIDCardAnomaly, true
	case event.KindCardRecovered:
		return MessageIDCardRecovered, true
	case event.KindCheckCleared:
		return MessageIDCheckCleared, true
	case event.KindReadStuck:
		return MessageIDReadStuck, true
	case event.KindReadRecovered:
		return MessageIDReadRecovered, true
	case event.KindLinkSanity:
		return MessageIDLinkSanity, true
	case event.KindLinkSanityOK:
		return MessageIDLinkSanityOK, true
	case event.KindRuleRaised:
		return MessageIDRuleRaised, true
	case event.KindRuleCleared:
		return MessageIDRuleCleared, true
	case event.KindReadParked:
		return MessageIDReadParked, true
	case event.KindReadResumed:
		return MessageIDReadResumed, true
	case event.KindPCIeAER:
		return MessageIDPCIeAER, true
	case event.KindPCIeAERRecovered:
		return MessageIDPCIeAERRecovered, true
	case event.KindCheckFailed:
		return MessageIDCheckFailed, true
	case event.KindCheckResumed:
		return MessageIDCheckResumed, true
	case event.KindCounterUnsaturated:
		return MessageIDCounterUnsaturated, true
	case event.KindCongestion:
		return MessageIDCongestion, true
	case event.KindCongestionCleared:
		return MessageIDCongestionCleared, true
	case event.KindNoSubnetManager:
		return MessageIDNoSubnetManager, true
	case event.KindSubnetManagerFound:
		return MessageIDSubnetManagerFound, true
	case event.KindFunctionFailed:
		return MessageIDFunctionFailed, true
	case event.KindFunctionAbsent:
		return MessageIDFunctionAbsent, true
	case event.KindFunctionOK:
		return MessageIDFunctionOK, true
	case event.KindDrift:
		return MessageIDDrift, true
	case event.KindDriftOK:
		return MessageIDDriftOK, true
	case event.KindPortsShort:
		return MessageIDPortsShort, true
	case event.KindPortsOK:
		return MessageIDPortsOK, true
	case event.KindKernelLog:
		return MessageIDKernelLog, true
	case event.KindKernelLogCleared:
		return MessageIDKernelLogCleared, true
	case event.KindPeerBreach:
		return MessageIDPeerBreach, true
	case event.KindPeerRecovered:
		return MessageIDPeerRecovered, true
	case event.KindPeerSaturated:
		return MessageIDPeerSaturated, true
	case event.KindPeerUnsaturated:
		return MessageIDPeerUnsaturated, true
	case event.KindFarEndLost:
		return MessageIDFarEndLost, true
	case event.KindFarEndRestored:
		return MessageIDFarEndRestored, true
	case event.KindTransceiver:
		return MessageIDTransceiver, true
	case event.KindTransceiverOK:
		return MessageIDTransceiverOK, true
	case event.KindFirmwareHealth:
		return MessageIDFirmwareHealth, true
	case event.KindFirmwareHealthOK:
		return MessageIDFirmwareHealthOK, true
	case event.KindRoCE:
		return MessageIDRoCE, true
	case event.KindRoCECleared:
		return MessageIDRoCECleared, true
	}
	return "", false
}
