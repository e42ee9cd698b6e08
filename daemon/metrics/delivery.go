package metrics

// fillDelivery adds the delivery-under-pressure families: events folded
// at the outbox's size bound, events not yet durable (held in memory)
// and events a sink rejected and parked.
func fillDelivery(e *encoder, s *snapshot) {
	none := e.labels()
	e.add(mOutboxFolded, none, uval(s.ob.Folded))
	e.add(mOutboxHeld, none, uval(uint64(max(s.ob.Held, 0))))
	for name, st := range s.ob.Sinks {
		e.add(mEventsRejected, e.labels("sink", name), uval(uint64(max(st.Rejected, 0))))
	}
}
