// Package kassa is the domain vocabulary of the Kassa payment service:
// money (integer satoshis and millisatoshis, decimal fiat and rates), the
// currencies of the interface, stores, invoices and their state machine,
// transactions, payment requests, coded errors, and the small interfaces
// that the core needs from its adapters (storage, chain, Lightning, rates).
//
// The package imports nothing of the project. Every rule here is a pure
// function of its inputs; time comes in as a value or through a Clock.
package kassa
