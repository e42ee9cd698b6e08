// Package genl is the daemon's one generic-netlink client: a NETLINK_GENERIC
// socket of the network namespace it was opened in, family lookup
// (CTRL_CMD_GETFAMILY: the family's id and multicast groups), requests that
// end in an acknowledgement, dumps that end in NLMSG_DONE, multicast
// subscription, and the attribute encoding both ways. The ethtool
// (topology/ethtool) and devlink (topology/devlink) readers speak through it.
//
// Written over golang.org/x/sys/unix rather than taken from a library: the
// few messages the daemon sends need a request frame, a reply loop and an
// attribute walk, and a library's deadline could not bound what has to be
// bounded. The kernel runs a family's handler (mlx5 reading a module's
// EEPROM, querying its firmware) inside our sendmsg or recvmsg, so a hang
// there is a hung system call no socket timeout ends; callers bound it the
// way they bound every driver call, by running it on topology/reader's worker
// under its deadline and walking away. Within that, every read is bounded
// in size (one message at most MaxMessage bytes, a dump at most MaxDump
// bytes) and in time (SetTimeout: the receive timeout for a kernel that
// never answers, and a multicast wait), replies to another request (a late
// answer to one that timed out) are dropped by sequence number, and every
// kernel error keeps its errno (errors.Is(err, unix.EOPNOTSUPP)) with the
// extended acknowledgement's message when the kernel sent one.
//
// The parsers (ParseAttrs, the reply walk) are pure functions over bytes,
// fuzzed.
package genl
