package sim

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/chain/derive"
)

// ErrAddressesExhausted is returned by NewAddress when a wallet has used
// every non-hardened receive index.
var ErrAddressesExhausted = kassa.Errorf(kassa.Conflict, "the store's xpub has no unused receive address left")

// Version bytes of the testnet serialisations, which regtest shares.
var (
	versionTpub = [4]byte{0x04, 0x35, 0x87, 0xcf} // BIP32 testnet, any script
	versionVpub = [4]byte{0x04, 0x5f, 0x1c, 0xf6} // SLIP-132 testnet P2WPKH (BIP84)
)

// walletID names a wallet by its account key (public key and chain code),
// whatever version bytes spell it, so that the tpub and the vpub of one
// account share their addresses.
type walletID string

// wallet is the receive branch of one account key and the index of its
// next unused address.
type wallet struct {
	account *derive.Account
	next    uint32
}

// parseAccountKey reads a store's xpub as an account-level BIP84 extended
// public key for regtest (tpub… or vpub…); package derive says what it
// accepts and refuses. Error messages never repeat the key.
func parseAccountKey(xpub string) (*derive.Account, error) {
	return derive.Parse(xpub, derive.SegWit, Params)
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
	w := c.wallet(walletID(account.ID), account)
	for {
		c.mu.Lock()
		index := max(w.next, store.NextAddressIndex)
		if index >= hdkeychain.HardenedKeyStart {
			c.mu.Unlock()
			return "", fmt.Errorf("new address for store %s: %w", store.ID, ErrAddressesExhausted)
		}
		w.next = index + 1
		c.mu.Unlock()

		addr, err := w.account.Address(index)
		if errors.Is(err, derive.ErrInvalidChild) {
			continue // BIP32: skip an index whose key is invalid
		}
		if err != nil {
			return "", fmt.Errorf("derive m/0/%d: %w", index, err)
		}
		return addr.EncodeAddress(), nil
	}
}

// wallet returns the wallet of account key id, making it on first use.
func (c *Chain) wallet(id walletID, account *derive.Account) *wallet {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wallets[id]
	if w == nil {
		w = &wallet{account: account}
		c.wallets[id] = w
	}
	return w
}
