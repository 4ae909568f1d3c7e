// Package derive turns a store's account-level extended public key into
// receive addresses, locally and without a node wallet: BIP84 native
// segwit (P2WPKH) by default, BIP86 taproot (P2TR, key path only) as an
// option. Both chain backends use it. Addresses are the children m/0/i of
// the account key; the key's own derivation path is not checked.
package derive

import (
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"

	"github.com/kassapay/kassa"
)

// Type is the script type of the derived addresses.
type Type string

// Address types.
const (
	// SegWit is BIP84: P2WPKH, bc1q… addresses.
	SegWit Type = "segwit"
	// Taproot is BIP86: P2TR with the BIP86 key-path tweak, bc1p…
	Taproot Type = "taproot"
)

// ParseType reads an address type; empty means SegWit.
func ParseType(s string) (Type, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "segwit", "bip84", "p2wpkh":
		return SegWit, nil
	case "taproot", "bip86", "p2tr":
		return Taproot, nil
	}
	return "", kassa.Errorf(kassa.Invalid, "unknown xpub type %q: use segwit or taproot", s)
}

// Version bytes of extended public keys (BIP32 and SLIP-132).
var (
	versionXpub = [4]byte{0x04, 0x88, 0xb2, 0x1e} // BIP32 mainnet
	versionZpub = [4]byte{0x04, 0xb2, 0x47, 0x46} // SLIP-132 mainnet P2WPKH
	versionTpub = [4]byte{0x04, 0x35, 0x87, 0xcf} // BIP32 testnet
	versionVpub = [4]byte{0x04, 0x5f, 0x1c, 0xf6} // SLIP-132 testnet P2WPKH

	mainnetNames = map[[4]byte]string{
		versionXpub:              "xpub",
		{0x04, 0x9d, 0x7c, 0xb2}: "ypub",
		versionZpub:              "zpub",
		{0x02, 0x95, 0xb4, 0x3f}: "Ypub",
		{0x02, 0xaa, 0x7e, 0xd3}: "Zpub",
	}
	testnetNames = map[[4]byte]string{
		versionTpub:              "tpub",
		versionVpub:              "vpub",
		{0x04, 0x4a, 0x52, 0x62}: "upub",
		{0x02, 0x42, 0x89, 0xef}: "Upub",
		{0x02, 0x57, 0x54, 0x83}: "Vpub",
	}
)

// ErrInvalidChild is returned by Address for one of the rare indexes
// whose key BIP32 declares invalid: the caller takes the next index.
var ErrInvalidChild = hdkeychain.ErrInvalidChild

// Account is the receive branch of an account key.
type Account struct {
	typ     Type
	params  *chaincfg.Params
	receive *hdkeychain.ExtendedKey
	// ID names the account whatever version bytes spell it: its type,
	// public key and chain code.
	ID string
	// key is the public key and chain code, whatever the type.
	key string
}

// SameKey reports whether a and b are the same account key, whatever the
// address type or the version bytes.
func SameKey(a, b *Account) (bool, error) { return a.key == b.key, nil }

// Mainnet reports whether params are Bitcoin's main network, whose keys
// are spelled xpub/zpub; every other network uses tpub/vpub.
func Mainnet(params *chaincfg.Params) bool { return params.Net == chaincfg.MainNetParams.Net }

// Parse reads xpub as an account key of typ for the network of params.
// Accepted: on mainnet xpub… (and zpub… for segwit), elsewhere tpub… (and
// vpub… for segwit). Refused, with a message that never repeats the key:
// private keys, keys of the other network, keys marked for another script
// type. The key's depth and path are not checked.
func Parse(xpub string, typ Type, params *chaincfg.Params) (*Account, error) {
	key, err := hdkeychain.NewKeyFromString(strings.TrimSpace(xpub))
	if err != nil {
		return nil, kassa.Errorf(kassa.Invalid, "xpub is not an extended public key (%v)", err)
	}
	mainnet := Mainnet(params)
	want := "tpub… or vpub…"
	if mainnet {
		want = "xpub… or zpub…"
	}
	if typ == Taproot {
		want = strings.Fields(want)[0]
	}
	if key.IsPrivate() {
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a private key: give the account's extended public key (%s) instead, and keep the private key secret", want)
	}
	var version [4]byte
	copy(version[:], key.Version())
	switch {
	case mainnet && (version == versionXpub || version == versionZpub && typ == SegWit):
		// accepted
	case !mainnet && (version == versionTpub || version == versionVpub && typ == SegWit):
		// accepted
	case !mainnet && mainnetNames[version] != "":
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a mainnet key (%s…), but the chain runs %s: give a testnet key (%s)", mainnetNames[version], params.Name, want)
	case mainnet && testnetNames[version] != "":
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a testnet key (%s…), but the chain runs mainnet: give %s", testnetNames[version], want)
	case mainnetNames[version] != "" || testnetNames[version] != "":
		name := mainnetNames[version] + testnetNames[version]
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a %s… key, not a single-key %s key: give %s", name, typ.bip(), want)
	default:
		return nil, kassa.Errorf(kassa.Invalid, "xpub has unknown version bytes %x: give %s", version, want)
	}
	pub, err := key.ECPubKey()
	if err != nil {
		return nil, kassa.Errorf(kassa.Invalid, "xpub holds no valid public key")
	}
	receive, err := key.Derive(0)
	if err != nil {
		return nil, kassa.Errorf(kassa.Invalid, "xpub has no receive branch m/0: %v", err)
	}
	return &Account{
		typ: typ, params: params, receive: receive,
		ID:  string(typ) + ":" + string(pub.SerializeCompressed()) + string(key.ChainCode()),
		key: string(pub.SerializeCompressed()) + string(key.ChainCode()),
	}, nil
}

func (t Type) bip() string {
	if t == Taproot {
		return "BIP86 taproot"
	}
	return "BIP84 P2WPKH"
}

// Type is the account's address type.
func (a *Account) Type() Type { return a.typ }

// Address returns the receive address m/0/index. For the rare index whose
// key is invalid it returns ErrInvalidChild; use the next index.
func (a *Account) Address(index uint32) (btcutil.Address, error) {
	if index >= hdkeychain.HardenedKeyStart {
		return nil, kassa.Errorf(kassa.Conflict, "the xpub has no unused receive address left")
	}
	child, err := a.receive.Derive(index)
	if err != nil {
		if errors.Is(err, hdkeychain.ErrInvalidChild) {
			return nil, ErrInvalidChild
		}
		return nil, fmt.Errorf("derive m/0/%d: %w", index, err)
	}
	pub, err := child.ECPubKey()
	if err != nil {
		return nil, fmt.Errorf("derive m/0/%d: %w", index, err)
	}
	if a.typ == Taproot {
		tweaked := txscript.ComputeTaprootKeyNoScript(pub)
		return btcutil.NewAddressTaproot(schnorr.SerializePubKey(tweaked), a.params)
	}
	return btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(pub.SerializeCompressed()), a.params)
}

// Script returns the output script that pays addr.
func Script(addr btcutil.Address) ([]byte, error) {
	return txscript.PayToAddrScript(addr)
}
