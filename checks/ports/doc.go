// Package ports is the port state checks (InfiniBandStateCheck,
// EthernetStateCheck): each port's state crossings (seed link-state 3.2,
// 3.4, 9), device disappearance and renames (7.2), and what they remember
// across restarts (the state file's "ports" section). It judges what
// package observe saw and reads nothing itself.
package ports
