// Package crashpoint kills the process at named points of the code, so
// that tests can crash a built kassa binary at an exact moment (kill -9
// just after a payout's approval, its sending, the record of its
// outcome) rather than at a random one.
//
// Hit does something only in a binary built with the build tag
// crashpoints (`go build -tags crashpoints`) run with the environment
// variable KASSA_TEST_CRASHPOINT naming the point: it then kills the
// process with SIGKILL. In a normal build Hit is empty and the variable
// is never read, so that no setting of an operator's environment can
// crash a production server.
package crashpoint

// Env is the environment variable that names the point at which a
// binary built with the crashpoints tag kills itself.
const Env = "KASSA_TEST_CRASHPOINT"

// The points of the one payment-out path (actors' sender, for refund
// payouts and Lightning forwards alike).
const (
	// PayoutApproved: the sender holds an approved payout (its approval
	// is durable); nothing of its payment is recorded or sent.
	PayoutApproved = "payout-approved"
	// PayoutAttemptRecorded: the payout's invoice and payment hash, or
	// its signed transaction, are recorded; nothing is sent yet.
	PayoutAttemptRecorded = "payout-attempt-recorded"
	// PaymentSent: the payment was handed to the Lightning node and it
	// answered, or the on-chain transaction was published; its outcome
	// is not recorded yet.
	PaymentSent = "payment-sent"
	// PayoutRecorded: the payout's outcome (completed or failed) is
	// recorded.
	PayoutRecorded = "payout-recorded"
)
