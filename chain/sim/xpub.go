package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"

	"github.com/kassapay/kassa"
)

// ErrAddressesExhausted is returned by NewAddress when a wallet has used
// every non-hardened receive index.
var ErrAddressesExhausted = kassa.Errorf(kassa.Conflict, "the store's xpub has no unused receive address left")

// Version bytes of extended public keys (BIP32 and SLIP-132). The
// simulated chain is regtest, which serialises keys like testnet.
var (
	versionTpub = [4]byte{0x04, 0x35, 0x87, 0xcf} // BIP32 testnet, any script
	versionVpub = [4]byte{0x04, 0x5f, 0x1c, 0xf6} // SLIP-132 testnet P2WPKH (BIP84)

	mainnetVersions = map[[4]byte]string{
		{0x04, 0x88, 0xb2, 0x1e}: "xpub",
		{0x04, 0x9d, 0x7c, 0xb2}: "ypub",
		{0x04, 0xb2, 0x47, 0x46}: "zpub",
		{0x02, 0x95, 0xb4, 0x3f}: "Ypub",
		{0x02, 0xaa, 0x7e, 0xd3}: "Zpub",
	}
	otherScriptVersions = map[[4]byte]string{
		{0x04, 0x4a, 0x52, 0x62}: "upub", // P2SH-P2WPKH (BIP49)
		{0x02, 0x42, 0x89, 0xef}: "Upub", // multisig P2SH-P2WSH
		{0x02, 0x57, 0x54, 0x83}: "Vpub", // multisig P2WSH
	}
)

// walletID names a wallet by its account key (public key and chain code),
// whatever version bytes spell it, so that the tpub and the vpub of one
// account share their addresses.
type walletID string

// wallet is the receive branch of one account key and the index of its
// next unused address.
type wallet struct {
	receive *hdkeychain.ExtendedKey // m/0 below the account key
	next    uint32
}

// parseAccountKey reads a store's xpub as an account-level BIP84 extended
// public key (m/84'/1'/account'). Accepted are the testnet serialisations,
// which regtest shares: tpub… (BIP32) and vpub… (SLIP-132 for P2WPKH).
// Refused are private keys (tprv…, vprv… and the like), mainnet keys
// (xpub…, ypub…, zpub…), and keys marked for another script type (upub…,
// Upub…, Vpub…). The key's depth is not checked: whatever key is given,
// addresses are its children m/0/i. Error messages never repeat the key.
func parseAccountKey(xpub string) (*hdkeychain.ExtendedKey, error) {
	key, err := hdkeychain.NewKeyFromString(strings.TrimSpace(xpub))
	if err != nil {
		return nil, kassa.Errorf(kassa.Invalid, "xpub is not an extended public key (%v)", err)
	}
	if key.IsPrivate() {
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a private key: give the account's extended public key (tpub… or vpub…) instead, and keep the private key secret")
	}
	var version [4]byte
	copy(version[:], key.Version())
	switch {
	case version == versionTpub || version == versionVpub:
		return key, nil
	case mainnetVersions[version] != "":
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a mainnet key (%s…), but the simulated chain runs regtest: give a testnet key (tpub… or vpub…)", mainnetVersions[version])
	case otherScriptVersions[version] != "":
		return nil, kassa.Errorf(kassa.Invalid, "xpub is a %s… key, not a single-key P2WPKH (BIP84) key: give a tpub… or vpub…", otherScriptVersions[version])
	}
	return nil, kassa.Errorf(kassa.Invalid, "xpub has unknown version bytes %x: give a tpub… or vpub…", version)
}

// deriveAddress returns the next receive address of store's xpub,
// m/0/i for the wallet's next index i. The index never goes below
// store.NextAddressIndex, so that a store that counts its own addresses
// gets no address twice after a restart of the simulation.
func (c *Chain) deriveAddress(store *kassa.Store) (string, error) {
	account, err := parseAccountKey(store.Xpub)
	if err != nil {
		return "", err
	}
	pub, err := account.ECPubKey()
	if err != nil {
		return "", kassa.Errorf(kassa.Invalid, "xpub holds no valid public key")
	}
	id := walletID(string(pub.SerializeCompressed()) + string(account.ChainCode()))

	w, err := c.wallet(id, account)
	if err != nil {
		return "", err
	}
	for {
		c.mu.Lock()
		index := max(w.next, store.NextAddressIndex)
		if index >= hdkeychain.HardenedKeyStart {
			c.mu.Unlock()
			return "", fmt.Errorf("new address for store %s: %w", store.ID, ErrAddressesExhausted)
		}
		w.next = index + 1
		c.mu.Unlock()

		child, err := w.receive.Derive(index)
		if errors.Is(err, hdkeychain.ErrInvalidChild) {
			continue // BIP32: skip an index whose key is invalid
		}
		if err != nil {
			return "", fmt.Errorf("derive m/0/%d: %w", index, err)
		}
		childPub, err := child.ECPubKey()
		if err != nil {
			return "", fmt.Errorf("derive m/0/%d: %w", index, err)
		}
		return p2wpkhAddress(childPub)
	}
}

// wallet returns the wallet of account key id, making it on first use.
func (c *Chain) wallet(id walletID, account *hdkeychain.ExtendedKey) (*wallet, error) {
	c.mu.Lock()
	w := c.wallets[id]
	c.mu.Unlock()
	if w != nil {
		return w, nil
	}
	// Derive outside the lock; if another call made the wallet meanwhile,
	// its counter wins.
	receive, err := account.Derive(0)
	if err != nil {
		return nil, kassa.Errorf(kassa.Invalid, "xpub has no receive branch m/0: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w = c.wallets[id]; w == nil {
		w = &wallet{receive: receive}
		c.wallets[id] = w
	}
	return w, nil
}
