package wire

import (
	"strings"
	"testing"
)

func TestNodeInfo_RequestAndAnswer(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":1,"op":"nodeinfo","local":{"ca":"mlx5_0","port":1},"lid":12}`:               "",
		`{"id":1,"op":"nodeinfo","local":{"ca":"mlx5_0","port":1},"lid":12,"portNum":300}`: "", // not a PMA read: no port
		`{"id":1,"op":"nodeinfo","local":{"ca":"mlx5_0","port":1}}`:                        "not a unicast LID",
		`{"id":1,"op":"nodeinfo","lid":12}`:                                                "needs a local port",
		`{"id":1,"op":"nodeinfo","local":{"ca":"mlx5_0","port":1},"lid":49152}`:            "not a unicast LID",
	} {
		_, err := DecodeRequest([]byte(line))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	for line, want := range map[string]string{
		`{"id":1,"node":{"nodeGuid":"0xb83fd20300a01000","nodeType":2,"numPorts":41}}`:                                            "",
		`{"id":1,"node":{"nodeGuid":"0xB83FD20300A01000","nodeType":2,"numPorts":41}}`:                                            "node GUID",
		`{"id":1,"node":{"nodeGuid":"0xb83fd20300a01000","nodeType":7,"numPorts":41}}`:                                            "node type",
		`{"id":1,"node":{"nodeGuid":"0xb83fd20300a01000","nodeType":2,"numPorts":0}}`:                                             "ports",
		`{"id":1,"node":{"nodeGuid":"0xb83fd20300a01000","nodeType":2,"numPorts":41},"classPortInfo":{"capMask":1,"capMask2":0}}`: "2 payloads",
	} {
		_, err := DecodeAnswer([]byte(line))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
}
