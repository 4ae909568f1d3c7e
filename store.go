package kassa

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Store is a merchant's store: its settings, API keys and prepaid balance.
type Store struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Currency Currency `json:"currency"`
	// PercentFee is the service fee in percent of each settled invoice.
	PercentFee decimal.Decimal `json:"percentFee"`
	// UnderpaymentTolerance is the shortfall, in percent of the invoice
	// amount, that still settles an invoice (0.25 is a quarter percent).
	UnderpaymentTolerance decimal.Decimal `json:"underpaymentTolerance"`
	// WalletMinSendable and WalletMaxSendable bound the forwards to the
	// store's Lightning address, in millisatoshis.
	WalletMinSendable MSat   `json:"walletMinSendable"`
	WalletMaxSendable MSat   `json:"walletMaxSendable"`
	LightningAddress  string `json:"lightningAddress,omitempty"`
	// Xpub is the extended public key on-chain addresses are derived from
	// (BIP84); empty means the service's own wallet.
	Xpub string `json:"xpub,omitempty"`
	// XpubType is the address type derived from Xpub: "segwit" (BIP84,
	// the default when empty) or "taproot" (BIP86).
	XpubType         string `json:"xpubType,omitempty"`
	NextAddressIndex uint32 `json:"nextAddressIndex,omitempty"`
	// FreeAddressIndexes are indexes below NextAddressIndex whose
	// invoices expired unpaid and stopped being watched: handed out again
	// before new ones, lowest first.
	FreeAddressIndexes    []uint32 `json:"freeAddressIndexes,omitempty"`
	ConfirmationsRequired int32    `json:"confirmationsRequired"`
	// RatePrimary and RateFallback name the exchange rate providers the
	// store prefers; empty means the median of every configured provider.
	RatePrimary  string `json:"ratePrimary,omitempty"`
	RateFallback string `json:"rateFallback,omitempty"`
	// CreditLimit is how far below zero the prepaid balance may go before
	// the store can no longer create invoices.
	CreditLimit Sats `json:"creditLimit"`
	// MaxInvoiceAmount is the largest amount an invoice may ask for;
	// zero means DefaultMaxInvoiceAmount.
	MaxInvoiceAmount Sats `json:"maxInvoiceAmount,omitempty"`
	// OnchainMinAmount is the smallest invoice amount for which an
	// on-chain address is offered; zero means DefaultOnchainMinAmount.
	OnchainMinAmount Sats `json:"onchainMinAmount,omitempty"`
	// ForwardFeePercent and ForwardFeeMax bound the routing fee a forward
	// to the store's Lightning address may spend: that percent of the
	// amount, at most ForwardFeeMax. Nil and zero take
	// DefaultForwardFeePercent and DefaultForwardFeeCap.
	ForwardFeePercent *decimal.Decimal `json:"forwardFeePercent,omitempty"`
	ForwardFeeMax     Sats             `json:"forwardFeeMax,omitempty"`
	// LogoURL and BrandColor (#rrggbb) brand the store's customer pages;
	// DefaultRedirectURL is where an invoice created without a
	// redirectUrl sends the customer once paid.
	LogoURL            string `json:"logoUrl,omitempty"`
	BrandColor         string `json:"brandColor,omitempty"`
	DefaultRedirectURL string `json:"defaultRedirectUrl,omitempty"`
	// DefaultRedirectAutomatically is whether an invoice whose request
	// does not say sends the customer to its redirect URL by itself once
	// paid.
	DefaultRedirectAutomatically bool `json:"defaultRedirectAutomatically,omitempty"`
	// DefaultLanguage is the BCP 47 tag of the language of the store's
	// customer pages when an invoice asks for none; empty for the
	// browser's.
	DefaultLanguage string `json:"defaultLanguage,omitempty"`
	// RefundAutoApproveMax, in satoshis, approves at its claim a payout
	// of at most that many satoshis, without the merchant, when the
	// prepaid balance covers it (AutoApproves); zero, the default, leaves
	// every payout to the merchant.
	RefundAutoApproveMax Sats `json:"refundAutoApproveMax,omitempty"`
	// WalletGapLimit is the gap limit of the wallet the merchant restores
	// Xpub in: how many unused addresses in a row it scans past the last
	// used one. Zero is WalletGapLimit, the default of most wallets; read
	// it through GapLimit.
	WalletGapLimit int32     `json:"walletGapLimit,omitempty"`
	APIKeys        []APIKey  `json:"apiKeys"`
	CreatedAt      time.Time `json:"createdAt"`
	// TopUpRefs are the references of the store's last top-ups that had
	// one, oldest first, with their ledger lines: a top-up whose
	// reference is here is not credited again (docs/decisions.md,
	// "Top-ups credited once"). At most MaxTopUpRefs are kept.
	TopUpRefs []TopUpRef `json:"topUpRefs,omitempty"`
	// Members and Invites are the store's team (member.go) once
	// MembersKept; before, the dashboard's records of an older version
	// hold it, and ActionMembersImported carries it here.
	Members     []Member `json:"members,omitempty"`
	Invites     []Invite `json:"invites,omitempty"`
	MembersKept bool     `json:"membersKept,omitempty"`
}

// Equal reports whether s and o are the same store document: every
// field equal, decimals by value, times as instants, an empty list as
// none. A field added to Store is compared here too (the test of Equal
// fails until it is).
func (s *Store) Equal(o *Store) bool {
	return s.ID == o.ID && s.Name == o.Name && s.Currency == o.Currency &&
		s.PercentFee.Equal(o.PercentFee) && s.UnderpaymentTolerance.Equal(o.UnderpaymentTolerance) &&
		s.WalletMinSendable == o.WalletMinSendable && s.WalletMaxSendable == o.WalletMaxSendable &&
		s.LightningAddress == o.LightningAddress && s.Xpub == o.Xpub && s.XpubType == o.XpubType &&
		s.NextAddressIndex == o.NextAddressIndex && slices.Equal(s.FreeAddressIndexes, o.FreeAddressIndexes) &&
		s.ConfirmationsRequired == o.ConfirmationsRequired &&
		s.RatePrimary == o.RatePrimary && s.RateFallback == o.RateFallback &&
		s.CreditLimit == o.CreditLimit && s.MaxInvoiceAmount == o.MaxInvoiceAmount && s.OnchainMinAmount == o.OnchainMinAmount &&
		equalDecimalPtr(s.ForwardFeePercent, o.ForwardFeePercent) && s.ForwardFeeMax == o.ForwardFeeMax &&
		s.LogoURL == o.LogoURL && s.BrandColor == o.BrandColor && s.DefaultRedirectURL == o.DefaultRedirectURL &&
		s.DefaultRedirectAutomatically == o.DefaultRedirectAutomatically &&
		s.DefaultLanguage == o.DefaultLanguage && s.RefundAutoApproveMax == o.RefundAutoApproveMax && s.WalletGapLimit == o.WalletGapLimit && slices.EqualFunc(s.APIKeys, o.APIKeys, APIKey.Equal) && s.CreatedAt.Equal(o.CreatedAt) &&
		slices.Equal(s.TopUpRefs, o.TopUpRefs) &&
		slices.Equal(s.Members, o.Members) && slices.EqualFunc(s.Invites, o.Invites, Invite.equal) && s.MembersKept == o.MembersKept
}

// equalDecimalPtr reports whether two optional decimals are both absent
// or both present and equal in value.
func equalDecimalPtr(a, b *decimal.Decimal) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// TopUpRef is a credited top-up's reference and its ledger line.
type TopUpRef struct {
	Reference     string `json:"reference"`
	TransactionID int64  `json:"transactionId"`
}

// MaxTopUpRefs is how many top-up references a store remembers.
const MaxTopUpRefs = 1000

// MaxReferenceLength bounds a top-up reference.
const MaxReferenceLength = 255

// TopUpRef returns the ledger line of the top-up with reference ref, if
// the store remembers it.
func (s *Store) TopUpRef(ref string) (int64, bool) {
	for i := len(s.TopUpRefs) - 1; i >= 0; i-- {
		if s.TopUpRefs[i].Reference == ref {
			return s.TopUpRefs[i].TransactionID, true
		}
	}
	return 0, false
}

// WithTopUpRef returns a copy of the store that remembers the top-up
// with reference ref (the oldest one is forgotten past MaxTopUpRefs).
func (s *Store) WithTopUpRef(ref string, txID int64) *Store {
	next := *s
	refs := s.TopUpRefs
	if len(refs) >= MaxTopUpRefs {
		refs = refs[len(refs)-MaxTopUpRefs+1:]
	}
	next.TopUpRefs = append(append(make([]TopUpRef, 0, len(refs)+1), refs...), TopUpRef{Reference: ref, TransactionID: txID})
	return &next
}

// CheckReference checks a top-up reference: 1 to MaxReferenceLength
// visible ASCII characters, as an Idempotency-Key (docs/api.md).
func CheckReference(ref string) error {
	if len(ref) == 0 || len(ref) > MaxReferenceLength {
		return InvalidFields([]FieldError{{Field: "reference", Message: "must be 1 to 255 visible ASCII characters"}})
	}
	for i := 0; i < len(ref); i++ {
		if ref[i] < 0x21 || ref[i] > 0x7e {
			return InvalidFields([]FieldError{{Field: "reference", Message: "must be 1 to 255 visible ASCII characters"}})
		}
	}
	return nil
}

// APIKey is one of a store's API keys. Keys can be shown again at any
// time (docs/api.md, Stores), so the key itself is stored.
type APIKey struct {
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	Key       string    `json:"key"`
	CreatedAt time.Time `json:"createdAt"`
	// Permissions are what the key may do on its store; none means
	// DefaultKeyPermissions, so a key stored before keys carried
	// permissions, or made without a choice, works as keys always did.
	Permissions Permissions `json:"permissions,omitempty"`
}

// Granted is what the key may do on its store.
func (k APIKey) Granted() Permissions {
	if len(k.Permissions) == 0 {
		return DefaultKeyPermissions
	}
	return k.Permissions
}

// Equal reports whether k and o are the same key: the secret compared in
// constant time, the creation time as an instant.
func (k APIKey) Equal(o APIKey) bool {
	return k.ID == o.ID && k.Label == o.Label && k.CreatedAt.Equal(o.CreatedAt) &&
		subtle.ConstantTimeCompare([]byte(k.Key), []byte(o.Key)) == 1 &&
		slices.Equal(k.Permissions, o.Permissions)
}

// Default store settings.
var (
	DefaultWalletMinSendable MSat = 1_000
	DefaultWalletMaxSendable MSat = 100_000_000_000 // one bitcoin
	DefaultCreditLimit       Sats = 100_000
	// DefaultMaxInvoiceAmount is ten bitcoin: more than a shop sells in
	// one order, far less than a typo of a few zeros can ask for.
	DefaultMaxInvoiceAmount Sats = 10 * SatsPerBTC
	// DefaultOnchainMinAmount keeps on-chain payments well above the
	// 294-sat dust limit of a segwit output, and above what the network
	// fee of spending the output later would eat.
	DefaultOnchainMinAmount Sats = 1_000
)

// MaxInvoice is the largest amount an invoice of the store may ask for.
func (s *Store) MaxInvoice() Sats {
	if s.MaxInvoiceAmount > 0 {
		return s.MaxInvoiceAmount
	}
	return DefaultMaxInvoiceAmount
}

// OnchainMin is the smallest invoice amount for which the store offers an
// on-chain address.
func (s *Store) OnchainMin() Sats {
	if s.OnchainMinAmount > 0 {
		return s.OnchainMinAmount
	}
	return DefaultOnchainMinAmount
}

// ForwardFeeLimit is the most a forward of amount to the store's
// Lightning address may spend on routing.
func (s *Store) ForwardFeeLimit(amount MSat) MSat {
	percent, max := DefaultForwardFeePercent, DefaultForwardFeeCap
	if s.ForwardFeePercent != nil {
		percent = *s.ForwardFeePercent
	}
	if s.ForwardFeeMax > 0 {
		max = s.ForwardFeeMax.MSat()
	}
	return ForwardFeeLimit(amount, percent, max)
}

// StoreSettings are the fields a store is created with.
type StoreSettings struct {
	Name                  string
	Currency              Currency
	PercentFee            decimal.Decimal
	UnderpaymentTolerance decimal.Decimal
	Xpub                  string
	XpubType              string
	LightningAddress      string
	ConfirmationsRequired int32
	RatePrimary           string
	RateFallback          string
	// MaxInvoiceAmount and OnchainMinAmount: zero takes the defaults.
	MaxInvoiceAmount Sats
	OnchainMinAmount Sats
	// ForwardFeePercent (nil: the default) and ForwardFeeMax (zero: the
	// default) bound the routing fee of forwards (Store).
	ForwardFeePercent *decimal.Decimal
	ForwardFeeMax     Sats
	// LogoURL and BrandColor brand the customer pages (Store).
	LogoURL    string
	BrandColor string
}

// Validate checks the settings of a new store.
func (s *StoreSettings) Validate() error {
	var fields []FieldError
	if s.Name == "" || len(s.Name) > 100 {
		fields = append(fields, FieldError{"name", "is required, at most 100 characters"})
	}
	if s.Currency == "" {
		s.Currency = EUR
	} else if c, err := ParseCurrency(string(s.Currency)); err != nil {
		fields = append(fields, FieldError{"currency", ErrorMessage(err)})
	} else {
		s.Currency = c
	}
	if s.PercentFee.IsNegative() || s.PercentFee.GreaterThan(decHundred) {
		fields = append(fields, FieldError{"percentFee", "must be between 0 and 100"})
	}
	if s.UnderpaymentTolerance.IsNegative() || s.UnderpaymentTolerance.GreaterThan(decHundred) {
		fields = append(fields, FieldError{"underpaymentTolerance", "must be between 0 and 100"})
	}
	if s.RateFallback != "" && s.RatePrimary == "" {
		fields = append(fields, FieldError{"rateFallback", "needs a ratePrimary"})
	}
	if s.ConfirmationsRequired < 0 || s.ConfirmationsRequired > MaxConfirmationsRequired {
		fields = append(fields, FieldError{"confirmations", "must be between 0 and 100"})
	}
	if s.MaxInvoiceAmount < 0 || s.MaxInvoiceAmount > MaxSats {
		fields = append(fields, FieldError{"maxInvoiceAmount", "must be between 1 and 2100000000000000 sat (0: the default)"})
	}
	if s.OnchainMinAmount < 0 || s.OnchainMinAmount > MaxSats {
		fields = append(fields, FieldError{"onchainMinAmount", "must be between 1 and 2100000000000000 sat (0: the default)"})
	}
	if p := s.ForwardFeePercent; p != nil && (p.IsNegative() || p.GreaterThan(decHundred)) {
		fields = append(fields, FieldError{"forwardFeePercent", "must be between 0 and 100"})
	}
	if s.ForwardFeeMax < 0 || s.ForwardFeeMax > MaxSats {
		fields = append(fields, FieldError{"forwardFeeMax", "must be between 1 and 2100000000000000 sat (0: the default)"})
	}
	fields = append(fields, fieldErrors(ValidateXpub(s.Xpub, s.XpubType))...)
	fields = append(fields, fieldErrors(ValidateLightningAddress(s.LightningAddress))...)
	if err := ValidateLogoURL(s.LogoURL); err != nil {
		fields = append(fields, FieldError{"logoUrl", ErrorMessage(err)})
	}
	if err := ValidateBrandColor(s.BrandColor); err != nil {
		fields = append(fields, FieldError{"brandColor", ErrorMessage(err)})
	}
	if len(fields) > 0 {
		return InvalidFields(fields)
	}
	return nil
}

// StoreUpdate holds the settings a merchant may change on an existing
// store (the dashboard's settings form). Applied in full, every field
// replaces the stored one; applied to some StoreFields, only those do
// (Store.Apply). percentFee, underpaymentTolerance and the credit limit
// are the operator's and are not here.
type StoreUpdate struct {
	Name                  string
	Currency              Currency
	LightningAddress      string
	Xpub                  string
	XpubType              string
	ConfirmationsRequired int32
	// OnchainMinAmount zero takes the default.
	OnchainMinAmount   Sats
	LogoURL            string
	BrandColor         string
	DefaultRedirectURL string
	// DefaultRedirectAutomatically is Store.DefaultRedirectAutomatically.
	DefaultRedirectAutomatically bool
	// DefaultLanguage is Store.DefaultLanguage; empty for none.
	DefaultLanguage string
	// RefundAutoApproveMax is Store.RefundAutoApproveMax; zero for none.
	RefundAutoApproveMax Sats
	// WalletGapLimit is Store.WalletGapLimit; zero for the default.
	WalletGapLimit int32
}

// StoreField names one setting of a StoreUpdate, as its field errors
// name it. A caller that changes some settings names them, so that a
// concurrent change of the others is kept (Store.Apply).
type StoreField string

// The settings of a StoreUpdate.
const (
	StoreName                         StoreField = "name"
	StoreCurrency                     StoreField = "currency"
	StoreLightningAddress             StoreField = "lightningAddress"
	StoreXpub                         StoreField = "xpub"
	StoreXpubType                     StoreField = "xpubType"
	StoreConfirmations                StoreField = "confirmations"
	StoreOnchainMinAmount             StoreField = "onchainMinAmount"
	StoreLogoURL                      StoreField = "logoUrl"
	StoreBrandColor                   StoreField = "brandColor"
	StoreDefaultRedirectURL           StoreField = "defaultRedirectUrl"
	StoreDefaultRedirectAutomatically StoreField = "defaultRedirectAutomatically"
	StoreDefaultLanguage              StoreField = "defaultLanguage"
	StoreRefundAutoApproveMax         StoreField = "refundAutoApproveMax"
	StoreWalletGapLimit               StoreField = "walletGapLimit"
)

// storeFields lists every StoreField, in StoreUpdate's order.
var storeFields = []StoreField{StoreName, StoreCurrency, StoreLightningAddress, StoreXpub, StoreXpubType,
	StoreConfirmations, StoreOnchainMinAmount, StoreLogoURL, StoreBrandColor, StoreDefaultRedirectURL,
	StoreDefaultRedirectAutomatically, StoreDefaultLanguage, StoreRefundAutoApproveMax, StoreWalletGapLimit}

// field is a pointer to u's field f; nil for a name no field has.
func (u *StoreUpdate) field(f StoreField) any {
	switch f {
	case StoreName:
		return &u.Name
	case StoreCurrency:
		return &u.Currency
	case StoreLightningAddress:
		return &u.LightningAddress
	case StoreXpub:
		return &u.Xpub
	case StoreXpubType:
		return &u.XpubType
	case StoreConfirmations:
		return &u.ConfirmationsRequired
	case StoreOnchainMinAmount:
		return &u.OnchainMinAmount
	case StoreLogoURL:
		return &u.LogoURL
	case StoreBrandColor:
		return &u.BrandColor
	case StoreDefaultRedirectURL:
		return &u.DefaultRedirectURL
	case StoreDefaultRedirectAutomatically:
		return &u.DefaultRedirectAutomatically
	case StoreDefaultLanguage:
		return &u.DefaultLanguage
	case StoreRefundAutoApproveMax:
		return &u.RefundAutoApproveMax
	case StoreWalletGapLimit:
		return &u.WalletGapLimit
	}
	return nil
}

// Digest is a short fingerprint of each of u's settings, for a form to
// carry beside the settings it shows: ChangedSince names the ones a
// submitted form changed without the form carrying every value twice
// (a logo can take most of a form's size).
func (u StoreUpdate) Digest() string {
	parts := make([]string, len(storeFields))
	for i, f := range storeFields {
		parts[i] = string(f) + ":" + fieldDigest(u.field(f))
	}
	return strings.Join(parts, ",")
}

// ChangedSince names the settings in which u differs from the ones
// digest (Digest) was made of. A setting digest does not list was not
// on the form and is not named; a digest that is no digest is Invalid.
func (u StoreUpdate) ChangedSince(digest string) ([]StoreField, error) {
	was := map[StoreField]string{}
	for _, part := range strings.Split(digest, ",") {
		f, d, ok := strings.Cut(part, ":")
		if !ok || len(d) != 16 {
			damaged := FieldError{"form", "the form's record of the settings it showed is damaged: load the page again"}
			return nil, InvalidFields([]FieldError{damaged})
		}
		was[StoreField(f)] = d
	}
	changed := []StoreField{}
	for _, f := range storeFields {
		if d, ok := was[f]; ok && d != fieldDigest(u.field(f)) {
			changed = append(changed, f)
		}
	}
	return changed, nil
}

// fieldDigest is 8 bytes of the SHA-256 of the value p points to, in hex.
func fieldDigest(p any) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%v", reflect.ValueOf(p).Elem().Interface()))
	return hex.EncodeToString(sum[:8])
}

// over is the update that sets fields to u's values and keeps the
// others as they are in base; u itself when fields is nil (every field).
func (u StoreUpdate) over(base StoreUpdate, fields []StoreField) (StoreUpdate, error) {
	if fields == nil {
		return u, nil
	}
	for _, f := range fields {
		dst := base.field(f)
		if dst == nil {
			unknown := FieldError{"fields", fmt.Sprintf("%q is not a store setting", string(f))}
			return u, InvalidFields([]FieldError{unknown})
		}
		reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(u.field(f)).Elem())
	}
	return base, nil
}

// MaxAPIKeys bounds the API keys of one store, and MaxAPIKeyLabel the
// length of a key's label.
const (
	MaxAPIKeys     = 20
	MaxAPIKeyLabel = 100
)

// Apply returns a copy of s with u applied, or the fields u gets wrong.
// With fields named, only those settings take u's values and the others
// stay as s has them, whatever u holds for them; with none, every one
// does. The settings are checked as they end up, the kept ones too.
// The derivation index stays where it is when the xpub changes: indexes
// only ever grow, so no index is handed out twice whichever key it is
// derived from.
func (s *Store) Apply(u StoreUpdate, only ...StoreField) (*Store, error) {
	u, err := u.over(s.Settings(), only)
	if err != nil {
		return nil, err
	}
	var fields []FieldError
	add := func(field, msg string) { fields = append(fields, FieldError{field, msg}) }
	if u.Name == "" || len(u.Name) > 100 {
		add("name", "is required, at most 100 characters")
	}
	c, err := ParseCurrency(string(u.Currency))
	if err != nil {
		add("currency", ErrorMessage(err))
	}
	fields = append(fields, fieldErrors(ValidateLightningAddress(u.LightningAddress))...)
	fields = append(fields, fieldErrors(ValidateXpub(u.Xpub, u.XpubType))...)
	if u.ConfirmationsRequired < 0 || u.ConfirmationsRequired > MaxConfirmationsRequired {
		add("confirmations", "must be between 0 and 100")
	}
	if u.OnchainMinAmount < 0 || u.OnchainMinAmount > MaxSats {
		add("onchainMinAmount", "must be between 1 and 2100000000000000 sat (0: the default)")
	}
	if err := ValidateLogoURL(u.LogoURL); err != nil {
		add("logoUrl", ErrorMessage(err))
	}
	if u.BrandColor != "" && !validColor(u.BrandColor) {
		add("brandColor", "must be a colour like #1a2b3c")
	}
	if u.DefaultLanguage != "" && !ValidLanguageTag(u.DefaultLanguage) {
		fields = append(fields, FieldError{"defaultLanguage", "must be a language tag such as en, de-CH or pt-BR"})
	}
	if u.DefaultRedirectURL != "" && (len(u.DefaultRedirectURL) > MaxURL || !validURL(u.DefaultRedirectURL)) {
		add("defaultRedirectUrl", "must be an http(s) URL")
	}
	if u.RefundAutoApproveMax < 0 || u.RefundAutoApproveMax > MaxSats {
		add("refundAutoApproveMax", "must be between 0 (none) and 2100000000000000 sat")
	}
	if u.WalletGapLimit < 0 || u.WalletGapLimit > MaxWalletGapLimit {
		add("walletGapLimit", "must be between 1 and 1000 addresses (0: the default, 20)")
	}
	if len(fields) > 0 {
		return nil, InvalidFields(fields)
	}
	next := *s
	next.Name, next.Currency, next.LightningAddress = u.Name, c, u.LightningAddress
	next.Xpub, next.XpubType, next.ConfirmationsRequired = u.Xpub, u.XpubType, u.ConfirmationsRequired
	next.OnchainMinAmount, next.LogoURL, next.BrandColor, next.DefaultRedirectURL = u.OnchainMinAmount, u.LogoURL, u.BrandColor, u.DefaultRedirectURL
	next.DefaultLanguage, next.DefaultRedirectAutomatically = u.DefaultLanguage, u.DefaultRedirectAutomatically
	next.RefundAutoApproveMax, next.WalletGapLimit = u.RefundAutoApproveMax, u.WalletGapLimit
	return &next, nil
}

// Settings returns the update that leaves s as it is: a caller that
// changes some settings starts from it.
func (s *Store) Settings() StoreUpdate {
	return StoreUpdate{Name: s.Name, Currency: s.Currency, LightningAddress: s.LightningAddress, Xpub: s.Xpub, XpubType: s.XpubType,
		ConfirmationsRequired: s.ConfirmationsRequired, OnchainMinAmount: s.OnchainMinAmount, LogoURL: s.LogoURL, BrandColor: s.BrandColor,
		DefaultRedirectURL: s.DefaultRedirectURL, DefaultRedirectAutomatically: s.DefaultRedirectAutomatically,
		DefaultLanguage: s.DefaultLanguage, RefundAutoApproveMax: s.RefundAutoApproveMax, WalletGapLimit: s.WalletGapLimit}
}

// AutoApproves reports whether the store approves a payout of amount
// satoshis at its claim, without the merchant: only when it set a limit
// and amount is within it.
func (s *Store) AutoApproves(amount Sats) bool {
	return s.RefundAutoApproveMax > 0 && amount > 0 && amount <= s.RefundAutoApproveMax
}

func validColor(c string) bool {
	if len(c) != 7 || c[0] != '#' {
		return false
	}
	for _, r := range c[1:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

// NewStore returns a new store with one API key.
func NewStore(id string, s StoreSettings, now time.Time) *Store {
	return &Store{
		ID:                    id,
		Name:                  s.Name,
		Currency:              s.Currency,
		PercentFee:            s.PercentFee,
		UnderpaymentTolerance: s.UnderpaymentTolerance,
		WalletMinSendable:     DefaultWalletMinSendable,
		WalletMaxSendable:     DefaultWalletMaxSendable,
		LightningAddress:      s.LightningAddress,
		Xpub:                  s.Xpub,
		XpubType:              s.XpubType,
		ConfirmationsRequired: s.ConfirmationsRequired,
		RatePrimary:           s.RatePrimary,
		RateFallback:          s.RateFallback,
		CreditLimit:           DefaultCreditLimit,
		MaxInvoiceAmount:      s.MaxInvoiceAmount,
		OnchainMinAmount:      s.OnchainMinAmount,
		ForwardFeePercent:     s.ForwardFeePercent,
		ForwardFeeMax:         s.ForwardFeeMax,
		LogoURL:               s.LogoURL,
		BrandColor:            s.BrandColor,
		APIKeys:               []APIKey{{ID: NewID("key_"), Label: "default", Key: NewSecret(), CreatedAt: now}},
		CreatedAt:             now,
	}
}
