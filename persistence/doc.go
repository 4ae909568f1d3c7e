// Package persistence stores Kassa's actors in Pebble: an event journal
// per actor, the actor's state as a snapshot that doubles as its read
// model, and the secondary indexes that lists and watchers need. Every
// write of one actor event (event, snapshot, indexes, ledger lines, balance
// change) is one batch, committed with fsync before the request that caused
// it is answered. The synced commits that wait together are applied as
// one Pebble commit with one WAL write and sync (group.go), so many
// actors committing at once share the cost. While many
// invoice creates wait for the Lightning backend, a sync waits a few
// milliseconds for the commits on their way (DB.PaceSyncs, syncpace.go),
// so that creates that arrive one at a time, as lnd releases them, share
// syncs too; while many other creates are under way and commit briskly,
// a sync waits a millisecond, so that each carries a few times more.
//
// Every JSON document is written in its kind's format (package
// persistence/format): {"_v":N,...}, its version first.
//
// Keys are ordered byte strings: a short prefix, identifiers separated by
// 0x00 (identifiers never contain it) and fixed-width big-endian numbers,
// so that range scans serve the date filters and keyset pages.
//
//	e/<kind>\0<id>\0<seq:8>              event
//	inv/<id>                             invoice snapshot: seq:8 + JSON
//	sto/<id>                             store snapshot: seq:8 + JSON (the store's state;
//	                                     its events are an audit log)
//	pr/<id>                              payment request JSON
//	ist/<store>\0<createdMs:8><id>       invoices by store and time
//	iad/<address>, iph/<hash>            invoice by address, by payment hash
//	iop/<deadlineMs:8><id>               invoices waiting for a timer → store id
//	isr/<store>\0<field><term>\0<createdMs:8><id>
//	                                     search index: field o (order id), e (e-mail),
//	                                     i (id); term folded (kassa.FoldSearch)
//	ver/search                           version of the search index (search.go)
//	tx/<id:8>                            transaction JSON
//	tst/<store>\0<createdMs:8><id:8>     transactions by store and time
//	tin/<invoice>\0<id:8>                transactions by invoice
//	prs/<store>\0<createdMs:8><id>       payment requests by store
//	prp/<id>                             invoice that paid a pay link
//	bal/<store>                          prepaid balance (int64 merge operands)
//	key/<sha256 of API key>              store of an API key
//	wh/<id>, whs/<store>\0<id>           webhook, webhooks by store
//	dl/<id>                              delivery attempt
//	dlw/<webhook>\0<createdMs:8><id>     deliveries by webhook and time
//	obx/<webhook>\0<seq:8>               outbox: deliveries still to send → id
//	kv/<key>                             small expiring values
//	req/<store>\0<id>                    request record of a create (request.go)
//	rqx/<atMs:8>req/<store>\0<id>        request records that expire, by age
//	ver/requests                         version of the age keys (request.go)
//	st/<name>/<key>                      state of a simulated backend
//	hist/<store>\0<seq:8>                line of a store's history, by its event (history.go)
package persistence
