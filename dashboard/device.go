package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The device cookie: a browser that signed in to an account carries
// proof of it, so that its next sign-in to that account goes first to
// the hashing slots and is not held to the limits of its network, which
// strangers can fill. It is HMAC-SHA256 over the account, the time it
// was issued and the account's SessionGen, with a key kept in the
// key-value store; it is valid for deviceLifetime and until the
// password changes. It signs nobody in: the password is still checked.
const (
	deviceCookie   = "kassa_device"
	deviceLifetime = 90 * 24 * time.Hour
	deviceKeyRec   = "dash/device-key"
	// maxDeviceCookie bounds the cookie's value read.
	maxDeviceCookie = 512
)

// device is a device cookie whose signature and age check.
type device struct {
	email  string
	issued int64 // unix seconds
	gen    int
}

// failKey is the counter of the cookie's failed sign-ins.
func (d device) failKey() string {
	return "device:" + strconv.FormatInt(d.issued, 10) + "\x00" + d.email
}

func deviceMAC(key []byte, email string, issued int64, gen int) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("kassa-device\x00" + email + "\x00" + strconv.FormatInt(issued, 10) + "\x00" + strconv.Itoa(gen)))
	return m.Sum(nil)
}

// deviceKeys keeps the cookie's key once read.
type deviceKeys struct {
	mu  sync.Mutex
	key []byte
}

// deviceKey returns the key of device cookies, made and stored on first
// use. Two nodes of a cluster that make one at once both read back the
// one stored last; cookies signed with the other are not honoured, which
// costs only their priority.
func (h *Dashboard) deviceKey(ctx context.Context) ([]byte, error) {
	h.devKeys.mu.Lock()
	defer h.devKeys.mu.Unlock()
	if h.devKeys.key != nil {
		return h.devKeys.key, nil
	}
	key, ok, err := h.KV.GetValue(ctx, deviceKeyRec)
	if err != nil {
		return nil, err
	}
	if !ok || len(key) < 32 {
		key = make([]byte, 32)
		rand.Read(key)
		if err := h.KV.PutValue(ctx, deviceKeyRec, key, forever); err != nil {
			return nil, err
		}
		if key, _, err = h.KV.GetValue(ctx, deviceKeyRec); err != nil {
			return nil, err
		}
	}
	h.devKeys.key = key
	return key, nil
}

// deviceOf returns the request's device cookie for email when its
// signature checks and it is not too old; its SessionGen is for the
// caller to compare.
func (h *Dashboard) deviceOf(r *http.Request, email string) (device, bool) {
	c, err := r.Cookie(deviceCookie)
	if err != nil || len(c.Value) > maxDeviceCookie {
		return device{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 {
		return device{}, false
	}
	account, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	issued, err2 := strconv.ParseInt(parts[1], 10, 64)
	gen, err3 := strconv.Atoi(parts[2])
	mac, err4 := base64.RawURLEncoding.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || string(account) != email {
		return device{}, false
	}
	key, err := h.deviceKey(r.Context())
	if err != nil {
		h.log.Warn("dashboard: device cookie key", "err", err)
		return device{}, false
	}
	if !hmac.Equal(mac, deviceMAC(key, email, issued, gen)) {
		return device{}, false
	}
	at, now := time.Unix(issued, 0), h.Clock.Now()
	if at.After(now.Add(time.Minute)) || now.Sub(at) >= deviceLifetime {
		return device{}, false
	}
	return device{email: email, issued: issued, gen: gen}, true
}

// setDeviceCookie gives the browser a device cookie of u, issued now.
func (h *Dashboard) setDeviceCookie(w http.ResponseWriter, r *http.Request, u *user) {
	key, err := h.deviceKey(r.Context())
	if err != nil {
		h.log.Warn("dashboard: device cookie key", "err", err)
		return
	}
	issued := h.Clock.Now().Unix()
	value := base64.RawURLEncoding.EncodeToString([]byte(u.Email)) + "." + strconv.FormatInt(issued, 10) + "." +
		strconv.Itoa(u.SessionGen) + "." + base64.RawURLEncoding.EncodeToString(deviceMAC(key, u.Email, issued, u.SessionGen))
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: value, Path: Prefix + "/login", HttpOnly: true,
		Secure: !h.Dev, SameSite: http.SameSiteStrictMode, MaxAge: int(deviceLifetime / time.Second)})
}
