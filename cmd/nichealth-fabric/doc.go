// Command nichealth-fabric is the fleet-side view of the InfiniBand
// fabric: `map` draws what ibnetdiscover saw with the health every
// nichealthd reports laid over it (fabric/ibnet, fabric/overlay,
// fabric/page), and `plan` shares the reading of a job's fabric among
// the job's hosts from the switches' forwarding tables (fabric/plan).
package main
