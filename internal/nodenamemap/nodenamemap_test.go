package nodenamemap

import (
	"testing"
)

// The slides' own map (B. Caldwell, "Scripts for InfiniBand Monitoring",
// the "Configuration" page): runs of blanks, names with spaces.
const slidesMap = `# Compute nodes
0x0002c903001c5e31      "oss1"
0x0002c90300dde441    "oss2"

# Core switch
0x0002c903008726a0    "ibsw-core1 Spine 1"
0x0002c903008476d0    "ibsw-core1 Line 1"
`

func TestParse_SlidesMap(t *testing.T) {
	m, probs := Parse([]byte(slidesMap))
	if len(probs) != 0 || len(m) != 4 || m[0x0002c903008726a0] != "ibsw-core1 Spine 1" || m[0x2c903001c5e31] != "oss1" {
		t.Fatalf("%v %v", m, probs)
	}
}

func TestParse_ProblemsAndForms(t *testing.T) {
	m, probs := Parse([]byte("0xzz \"x\"\n0x1 \"unterminated\n0x2\nb83f:d203:00a0:b010 plain name # note\n5 \"first\"\n0x0000000000000005 \"later\"\r\n"))
	if len(probs) != 3 || probs[0].Line != 1 || probs[1].Line != 2 || probs[2].Line != 3 {
		t.Fatalf("problems %+v", probs)
	}
	if m[0xb83fd20300a0b010] != "plain name" || m[5] != "later" || len(m) != 2 {
		t.Fatalf("map %v", m)
	}
	long := make([]byte, MaxLine+1)
	for i := range long {
		long[i] = 'a'
	}
	if _, probs := Parse(long); len(probs) != 1 {
		t.Fatalf("long line: %v", probs)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(slidesMap))
	f.Add([]byte("0x1 \"a\"\n0x1 b # c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, probs := Parse(b)
		for _, p := range probs {
			if p.Line < 1 || p.Reason == "" {
				t.Fatalf("problem %+v", p)
			}
		}
		for g, name := range m {
			if name == "" {
				t.Fatalf("GUID %x has an empty name", g)
			}
		}
	})
}
