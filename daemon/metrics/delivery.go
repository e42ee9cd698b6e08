package metrics

// Families about delivery under pressure, kept apart from the main table
// in collect.go; their indexes follow it.
const (
	mOutboxFolded = numFamilies + iota
	mEventsRejected
	numAllFamilies
)

func deliveryDescriptors() []desc {
	const p = "nichealth_"
	return []desc{
		mOutboxFolded - numFamilies:   {p + "outbox_folded_total", "Undelivered events removed by the outbox size bound since start because a newer event of the same check and entity superseded them.", counter},
		mEventsRejected - numFamilies: {p + "events_rejected", "Events the sink rejected as invalid, parked until nichealthctl events --retry-rejected or a reload offers them again.", gauge},
	}
}

func fillDelivery(e *encoder, s *snapshot) {
	none := e.labels()
	e.add(mOutboxFolded, none, uval(s.ob.Folded))
	for name, st := range s.ob.Sinks {
		e.add(mEventsRejected, e.labels("sink", name), uval(uint64(max(st.Rejected, 0))))
	}
}
