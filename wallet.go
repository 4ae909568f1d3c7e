package kassa

import (
	"errors"
	"strings"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
)

// MaxXpubLength bounds a store's xpub: a serialised extended key is 111
// characters.
const MaxXpubLength = 200

// Version bytes of the extended public keys a store may give (BIP32 and
// SLIP-132); chain/derive reads them and checks the network.
var (
	xpubVersion = [4]byte{0x04, 0x88, 0xb2, 0x1e} // xpub: BIP32 mainnet
	zpubVersion = [4]byte{0x04, 0xb2, 0x47, 0x46} // zpub: SLIP-132 mainnet P2WPKH
	tpubVersion = [4]byte{0x04, 0x35, 0x87, 0xcf} // tpub: BIP32 testnet
	vpubVersion = [4]byte{0x04, 0x5f, 0x1c, 0xf6} // vpub: SLIP-132 testnet P2WPKH
)

// ValidateXpub checks a store's extended public key and its address type
// before they are saved, on every path that saves them (the admin API,
// the dashboard, a store update): an account-level extended public key
// (xpub… or tpub…; zpub… or vpub… for segwit) whose receive branch m/0
// derives, and a type of "" or "segwit" (BIP84) or "taproot" (BIP86).
// An empty xpub is valid (the store takes no on-chain payments to its own
// wallet). The chain backend checks the network on top
// (actors.Service.CreateStore). Errors name the field and never repeat
// the key.
func ValidateXpub(xpub, xpubType string) error {
	var fields []FieldError
	switch xpubType {
	case "", "segwit", "taproot":
	default:
		fields = append(fields, FieldError{"xpubType", "must be segwit or taproot"})
	}
	if msg := xpubProblem(xpub, xpubType); msg != "" {
		fields = append(fields, FieldError{"xpub", msg})
	}
	if len(fields) > 0 {
		return InvalidFields(fields)
	}
	return nil
}

// xpubProblem says what is wrong with xpub, or "".
func xpubProblem(xpub, xpubType string) string {
	if xpub == "" {
		return ""
	}
	if len(xpub) > MaxXpubLength {
		return "is too long"
	}
	if xpub != strings.TrimSpace(xpub) {
		return "must not start or end with spaces"
	}
	key, err := hdkeychain.NewKeyFromString(xpub)
	if err != nil {
		return "is not an extended public key (xpub…, zpub…, tpub… or vpub…)"
	}
	if key.IsPrivate() {
		return "is a private key: give the account's extended public key instead, and keep the private key secret"
	}
	var version [4]byte
	copy(version[:], key.Version())
	switch version {
	case xpubVersion, tpubVersion:
	case zpubVersion, vpubVersion:
		if xpubType == "taproot" {
			return "is a zpub/vpub, which is for segwit (BIP84) addresses: give the xpub or tpub of a taproot account"
		}
	default:
		return "has version bytes of another script type: give an xpub… or tpub… (zpub… or vpub… for segwit)"
	}
	if _, err := key.ECPubKey(); err != nil {
		return "holds no valid public key"
	}
	if _, err := key.Derive(0); err != nil {
		return "has no receive branch m/0"
	}
	return ""
}

// ValidateLightningAddress checks a store's Lightning address (LUD-16)
// before it is saved: user@domain, the user part of a-z, 0-9, '-', '_',
// '.' and '+' (any case), the domain a host name or IP address with an
// optional port. Empty is valid (no forwards). lnurl.ParseAddress reads
// an address with the same rule, LightningAddressProblem.
func ValidateLightningAddress(address string) error {
	if address == "" {
		return nil
	}
	if msg := LightningAddressProblem(address); msg != "" {
		return InvalidFields([]FieldError{{"lightningAddress", msg}})
	}
	return nil
}

// LightningAddressProblem says what is wrong with a Lightning address
// (LUD-16), or "" when nothing is: the one rule of a store's address
// (ValidateLightningAddress) and of the address a forward reads
// (lnurl.ParseAddress).
func LightningAddressProblem(address string) string {
	if len(address) > MaxShortText {
		return "is too long"
	}
	user, domain, ok := strings.Cut(address, "@")
	if !ok || user == "" || domain == "" {
		return "must look like name@domain"
	}
	for _, r := range strings.ToLower(user) {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.+", r)) {
			return "must look like name@domain: the name may hold only a-z, 0-9, '-', '_', '.' and '+'"
		}
	}
	host := domain
	if strings.HasPrefix(host, "[") { // [IPv6]:port
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return "must look like name@domain: the domain is not a host name"
		}
		rest := host[end+1:]
		host = host[1:end]
		if rest != "" && (rest[0] != ':' || !validPort(rest[1:])) {
			return "must look like name@domain: the port is not a number"
		}
		for _, r := range strings.ToLower(host) {
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == ':' || r == '.') {
				return "must look like name@domain: the domain is not a host name"
			}
		}
		return ""
	}
	if h, port, ok := strings.Cut(host, ":"); ok {
		if !validPort(port) {
			return "must look like name@domain: the port is not a number"
		}
		host = h
	}
	if host == "" || len(host) > 253 || strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return "must look like name@domain: the domain is not a host name"
	}
	for _, label := range strings.Split(strings.ToLower(host), ".") {
		if len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return "must look like name@domain: the domain is not a host name"
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "must look like name@domain: the domain is not a host name"
			}
		}
	}
	return ""
}

// validPort reports whether s is a TCP port number.
func validPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		n = n*10 + int(r-'0')
	}
	return n > 0 && n <= 65535
}

// fieldErrors returns the field errors of err (nil for nil).
func fieldErrors(err error) []FieldError {
	var e *Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}
