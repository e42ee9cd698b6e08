package metrics

// Family is one metric family /metrics can serve.
type Family struct {
	Name string
	Type string // counter, gauge, histogram or summary
	Help string
}

// Families lists every family /metrics can serve, from the same tables the
// page is written from, so dashboards and rule files can be checked
// against it without a running daemon. A histogram or summary family also
// answers to its _bucket, _sum and _count series names.
func Families() []Family {
	ds := descriptors()
	rs := runtimeDescs()
	out := make([]Family, 0, len(ds)+len(rs))
	for _, d := range ds {
		out = append(out, Family{d.name, d.kind.String(), d.help})
	}
	for _, d := range rs {
		out = append(out, Family{d.name, d.kind.String(), d.help})
	}
	return out
}
