// Package certs makes and loads the certificates Corkboard's components
// use for mutual TLS.
//
// A certificate names its holder with one URI SAN, in the forms
// models.Identity defines and the board and the reps read:
//
//	corkboard://cell/<cell_id>     the rep of one cell
//	corkboard://role/api-client    an API client (schedulers, route emitters)
//	corkboard://role/operator      an operator (cork)
//	corkboard://role/board         the board, when it calls reps
//
// Every certificate is signed by one CA, which both sides of every
// connection trust and nothing else, and the URI is the whole identity.
// Servers act on the client's identity (the board's authorization table,
// the rep's routes); clients check the server's (ExpectPeer): the board's
// role when they call the board, the cell's id when they call its rep, so
// that a certificate the CA signed for one holder cannot stand in for
// another. Development certificates come from
// cmd/corkboard-certs (WriteSet); production ones may come from any CA
// that puts the same URIs in.
package certs
