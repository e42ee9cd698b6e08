// Package plan shares the reading of a job's fabric among the job's
// hosts, as the slides' "Balanced perfqueries" do: every switch port on
// the forwarding paths between the job's hosts is read once, by one of
// them, with the load spread. It parses dump_lfts output (the switches'
// linear forwarding tables) and a job's host list, and computes the plan
// as a pure function of those and an ibnet graph; nichealth-fabric plan
// prints it or writes one file per host.
package plan
