// Package actors runs Kassa's stores and invoices as supervised
// protoactor-go actors, each with its own mailbox.
//
// A store actor owns the store's settings and pay links and supervises its
// invoice actors (one-for-one: a panic in one invoice actor restarts that
// actor from storage and touches no other). An invoice actor runs while
// its invoice is due within two minutes, or busy, and owns its timer
// then. Actors persist through kassa.Journal: an event, the
// new state and everything that follows from it (indexes, ledger lines,
// balance) are one batch, durable before the request is answered or any
// effect happens.
//
// Invoice actors are activated lazily: by a request, by a payment, or by
// the deadline sweeper (package expiry, run by RunSweeper) as their
// deadline approaches: every 2 s it claims from the deadline index the
// invoices due within two minutes and fires them through FireDeadline,
// early on purpose, so that a passivated invoice wakes and arms its own
// timer before it is due. The timer and FireDeadline meet in one
// function of the invoice actor (deadline). An invoice actor stops once
// it waits for nothing near; a new invoice due later than that is
// written without one. So a restart (Recover, one round of the
// sweeper) wakes only the invoices due now or soon (those whose deadline
// passed while the service was down fire at once), and start-up time and
// memory follow what is due, not what is open.
//
// A node's core is three types, made together by NewSystem, which
// System names as fields (it embeds none). The Runtime runs the actors:
// it looks up or spawns the actor of a store or webhook endpoint by id
// (Runtime.store, Runtime.webhook), and runs their recovery, draining,
// shutdown and health. The Cluster, owned by the Runtime, is the node's
// part in its cluster: membership and the halts of the node, placement
// of the store grains, routing of a store command to the node that runs
// the store (route) and serving the commands other nodes route here
// (serveCall), and the membership fence every commit goes through. The
// Service holds the commands of kassa's service ports and the events of
// the chain, Lightning and expiry: each command has one body, which
// orchestrates what lies outside the actors (rates, addresses,
// Lightning invoices, URL checks) and has the store's actor decide; it
// sees the Runtime and the Cluster only through small interfaces
// (actorRuntime, router), and the Cluster runs a routed command through
// the Service's dispatchCall (callHandler). The credit limit is checked
// once, by the store actor, before any backend is asked. A call has one
// budget, its context's deadline (withBudget).
//
// The store, invoice and webhook actors reach the node only through
// their ports (ports.go: clock, journal, commit, ledger, webhook outbox,
// timers), built once by NewSystem and shared by every actor of the
// kind, never through the Runtime or the Service. Their messages carry a
// callContext (deadline, trace, request id), never a context.Context.
// Messages that cross nodes are the protobuf messages of package protos.
package actors
