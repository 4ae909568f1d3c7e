package kassa

// NoticeType is the kind of a Notice.
type NoticeType uint8

// Notice types.
const (
	// NoticePaymentReceived: a payment was added to the invoice, whatever
	// the invoice's status, partial ones too.
	NoticePaymentReceived NoticeType = iota + 1
	// NoticePaymentSettled: a payment became final (confirmed as the
	// invoice requires; a Lightning payment at once).
	NoticePaymentSettled
	// NoticeInvalid: the invoice became Invalid, by the chain (monitoring
	// ended with nothing confirmed) or by hand.
	NoticeInvalid
)

// Notice says that something happened to an invoice that Coinsnap's
// webhooks carry no event for and Greenfield's do (InvoiceReceivedPayment,
// InvoicePaymentSettled, InvoiceInvalid). It is a fact of the transition,
// like Emit, sent only to webhooks registered in a format that has it.
type Notice struct {
	Type NoticeType
	// PaymentID names the payment of a payment notice.
	PaymentID string
	// AfterExpiration says the invoice was Expired or Invalid when the
	// payment's input came.
	AfterExpiration bool
	// ManuallyMarked says a person marked the invoice Invalid.
	ManuallyMarked bool
}

func (Notice) effect() {}

// afterExpiration reports whether a payment arriving now comes after the
// invoice expired (or turned Invalid), as Greenfield's afterExpiration
// says.
func (inv *Invoice) afterExpiration() bool {
	return inv.Status == InvoiceExpired || inv.Status == InvoiceInvalid
}

// paymentNotices returns the notices of payment p as it is now, given
// whether it was on the invoice before (known) and final before
// (wasFinal), with the invoice's status before the input (late).
func (inv *Invoice) paymentNotices(p *Payment, known, wasFinal, late bool) []Effect {
	var out []Effect
	if !known {
		out = append(out, Notice{Type: NoticePaymentReceived, PaymentID: p.ID, AfterExpiration: late})
	}
	if !wasFinal && inv.Final(p) {
		out = append(out, Notice{Type: NoticePaymentSettled, PaymentID: p.ID, AfterExpiration: late})
	}
	return out
}
