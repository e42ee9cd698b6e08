// Package nodenamemap reads the node-name map of infiniband-diags and
// opensm (/etc/rdma/ib-node-name-map): one `GUID "name"` per line, which
// names switches and hosts by what their operators call them rather than
// by their NodeDescription. Parse is a pure function over bytes, fuzzed;
// it is shared by the node daemon (which names the switch at the far end
// of each cable) and the fleet's fabric view, which may import nothing
// else of each other.
package nodenamemap
