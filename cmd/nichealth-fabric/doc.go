// Command nichealth-fabric draws the InfiniBand fabric that ibnetdiscover
// saw, with the health every nichealthd of the fleet reports laid over
// it: `map` parses the dump (fabric/ibnet), gathers the overlay from the
// Prometheus HTTP API or from `nichealthctl status --json` dumps
// (fabric/overlay), and writes one offline HTML page (fabric/page) or the
// graph as JSON.
package main
