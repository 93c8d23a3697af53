// Package rep is the cell agent and the rep's HTTP API.
//
// The agent (Agent) speaks for one cell to the board: it registers and
// heartbeats the cell, claims what the board places there, starts it,
// reports its start, crash or removal, bulk-reports what the cell runs,
// sends what instances say of their occupancy, and evacuates the cell on
// a drain. It does not run processes: it hands each instance to an
// Executor and acts on the events it sends back. On a real cell that is
// rep/executor's Executor (child processes); the agent's specs use a
// double that runs nothing.
//
// The cell side of that protocol is one client, CellCalls: every board
// call the agent makes goes through it, with its rules (which calls are
// repeated until the board answers, and what counts as an answer:
// Answered; how a bulk report and the calls about one instance stay
// apart: CallGate). internal/simcell, the simulated cell of the board's
// tests, makes its calls through it too.
//
// The HTTP API (NewServer, NewTLSServer, NewInstanceServer) answers for
// both halves of the rep: what the cell runs and the instances' logs come
// from the executor, draining and occupancy go to the agent.
//
// Layout:
//
//	rep/            the agent (agent*.go), the Executor it needs, the cell
//	                protocol's client and rules (protocol*.go), the HTTP API
//	rep/executor/   runs instances: processes, ports, assets, setup, health,
//	                memory, logs
//	rep/isolation/  keeps instances apart (uids, namespaces), used by the executor
//	rep/internal/   test helpers: reptest (shared specs' helpers), memhog, testparent
package rep
