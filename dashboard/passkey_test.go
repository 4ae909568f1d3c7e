package dashboard

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// softKey is a software authenticator: one ES256 passkey, answering
// create and get as a browser hands them to the page, with "none"
// attestation. rpID and origin are what it signs for: another site's
// make a passkey of another site.
type softKey struct {
	t      *testing.T
	priv   *ecdsa.PrivateKey
	id     []byte
	count  uint32
	rpID   string
	origin string
	// handle is the user handle a discoverable passkey keeps (the
	// user id of its registration) and answers with; noUV answers
	// without user verification (a key without PIN or fingerprint).
	handle []byte
	noUV   bool
}

func newSoftKey(t *testing.T, rpID, origin string) *softKey {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	rand.Read(id)
	return &softKey{t: t, priv: priv, id: id, rpID: rpID, origin: origin}
}

// cborHead is a CBOR item's head (major type, argument).
func cborHead(major byte, n int) []byte {
	switch {
	case n < 24:
		return []byte{major<<5 | byte(n)}
	case n < 256:
		return []byte{major<<5 | 24, byte(n)}
	default:
		return []byte{major<<5 | 25, byte(n >> 8), byte(n)}
	}
}

func cborBytes(b []byte) []byte { return append(cborHead(2, len(b)), b...) }
func cborText(s string) []byte  { return append(cborHead(3, len(s)), s...) }

var b64url = base64.RawURLEncoding

// authData is the authenticator data: the RP id's hash, flags (user
// present and verified, attested data when attested), the counter.
func (k *softKey) authData(attested bool) []byte {
	rp := sha256.Sum256([]byte(k.rpID))
	flags := byte(0x01 | 0x04)
	if k.noUV {
		flags = 0x01
	}
	if attested {
		flags |= 0x40
	}
	k.count++
	out := append(rp[:], flags)
	out = binary.BigEndian.AppendUint32(out, k.count)
	if !attested {
		return out
	}
	out = append(out, make([]byte, 16)...) // AAGUID
	out = binary.BigEndian.AppendUint16(out, uint16(len(k.id)))
	out = append(out, k.id...)
	raw, err := k.priv.PublicKey.Bytes() // 0x04 | x | y
	if err != nil {
		k.t.Fatal(err)
	}
	x, y := raw[1:33], raw[33:65]
	// COSE key {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}
	cose := append([]byte{0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21}, cborBytes(x)...)
	cose = append(append(cose, 0x22), cborBytes(y)...)
	return append(out, cose...)
}

func (k *softKey) clientData(typ, challenge string) []byte {
	data, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": k.origin, "crossOrigin": false})
	return data
}

// options reads the publicKey options of a begin answer.
func passkeyOptions(t *testing.T, body string) map[string]any {
	t.Helper()
	var out struct {
		PublicKey map[string]any `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.PublicKey == nil {
		t.Fatalf("passkey options: %v: %s", err, body)
	}
	return out.PublicKey
}

// create answers registration options as navigator.credentials.create.
func (k *softKey) create(options map[string]any) string {
	if u, _ := options["user"].(map[string]any); u != nil {
		k.handle, _ = b64url.DecodeString(u["id"].(string))
	}
	att := append([]byte{0xa3}, cborText("fmt")...)
	att = append(att, cborText("none")...)
	att = append(att, cborText("attStmt")...)
	att = append(att, 0xa0)
	att = append(att, cborText("authData")...)
	att = append(att, cborBytes(k.authData(true))...)
	out, _ := json.Marshal(map[string]any{"id": b64url.EncodeToString(k.id), "rawId": b64url.EncodeToString(k.id), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64url.EncodeToString(k.clientData("webauthn.create", options["challenge"].(string))),
			"attestationObject": b64url.EncodeToString(att)}})
	return string(out)
}

// get answers login options as navigator.credentials.get.
func (k *softKey) get(options map[string]any) string {
	cd := k.clientData("webauthn.get", options["challenge"].(string))
	ad := k.authData(false)
	sum := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), sum[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, digest[:])
	if err != nil {
		k.t.Fatal(err)
	}
	response := map[string]any{"clientDataJSON": b64url.EncodeToString(cd), "authenticatorData": b64url.EncodeToString(ad),
		"signature": b64url.EncodeToString(sig)}
	if k.handle != nil {
		response["userHandle"] = b64url.EncodeToString(k.handle)
	}
	out, _ := json.Marshal(map[string]any{"id": b64url.EncodeToString(k.id), "rawId": b64url.EncodeToString(k.id), "type": "public-key",
		"response": response})
	return string(out)
}

// onLocalhost serves the dashboard under the host name localhost, as a
// relying party must be named.
func onLocalhost(d *Deps) { d.PublicURL = strings.Replace(d.PublicURL, "127.0.0.1", "localhost", 1) }

// registerPasskey adds k to c's account (which has two factors).
func registerPasskey(t *testing.T, c *client, k *softKey) {
	t.Helper()
	c.get("/dashboard/account/2fa")
	code, body, _ := c.post("/dashboard/account/2fa/passkey/begin", nil)
	if code != http.StatusOK {
		t.Fatalf("begin passkey registration: %d %s", code, body)
	}
	opts := passkeyOptions(t, body)
	if rp, _ := opts["rp"].(map[string]any); rp == nil || rp["id"] != "localhost" {
		t.Errorf("relying party %v, want localhost", opts["rp"])
	}
	if sel, _ := opts["authenticatorSelection"].(map[string]any); sel == nil || sel["residentKey"] != "required" {
		t.Errorf("registration asks for %v, want a discoverable (resident) key", opts["authenticatorSelection"])
	}
	if code, body, _ := c.post("/dashboard/account/2fa/passkey/finish", url.Values{"credential": {k.create(opts)}}); code != http.StatusOK {
		t.Fatalf("finish passkey registration: %d %s", code, body)
	}
}

// passkeyStep signs in with k after the password: the answer's status.
func passkeyStep(t *testing.T, c *client, k *softKey) (int, string) {
	t.Helper()
	c.get("/dashboard/login/2fa")
	code, body, _ := c.post("/dashboard/login/2fa/passkey/begin", nil)
	if code != http.StatusOK {
		t.Fatalf("begin passkey sign-in: %d %s", code, body)
	}
	code, body, _ = c.post("/dashboard/login/2fa/passkey/finish", url.Values{"credential": {k.get(passkeyOptions(t, body))}})
	return code, body
}

// TestPasskeySecondFactor: a passkey registered on the account page
// signs in after the password; one of another site (other RP id and
// origin) is refused and signs nobody in; an answer used once is refused
// again.
func TestPasskeySecondFactor(t *testing.T) {
	e := newEnv(t, onLocalhost)
	owner := e.client()
	owner.signup("shop@example.com")
	enrol(t, owner)
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	registerPasskey(t, owner, key)
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); len(u.TwoFactor.Passkeys) != 1 {
		t.Fatalf("passkeys stored: %+v", u.TwoFactor)
	}

	c := e.client()
	passwordStep(c, "shop@example.com")
	code, body := passkeyStep(t, c, key)
	if code != http.StatusOK || !strings.Contains(body, `"/dashboard/stores"`) || !signedIn(c) {
		t.Fatalf("passkey sign-in: %d %s, signed in %v", code, body, signedIn(c))
	}

	// A passkey of another site, with this one's credential id.
	evil := newSoftKey(t, "evil.example", "https://evil.example")
	evil.id, evil.priv = key.id, key.priv
	other := e.client()
	passwordStep(other, "shop@example.com")
	if code, body := passkeyStep(t, other, evil); code != http.StatusUnauthorized || !strings.Contains(body, "message") {
		t.Errorf("a passkey of another site: %d %s", code, body)
	}
	if signedIn(other) {
		t.Fatal("a passkey of another site signed in")
	}
	// A passkey not registered here.
	stranger := newSoftKey(t, "localhost", e.dash.PublicURL)
	if code, _ := passkeyStep(t, other, stranger); code != http.StatusUnauthorized || signedIn(other) {
		t.Errorf("an unknown passkey: %d", code)
	}

	// An answer replayed on a new challenge.
	replay := e.client()
	passwordStep(replay, "shop@example.com")
	replay.get("/dashboard/login/2fa")
	_, body, _ = replay.post("/dashboard/login/2fa/passkey/begin", nil)
	first := key.get(passkeyOptions(t, body))
	if code, _, _ := replay.post("/dashboard/login/2fa/passkey/finish", url.Values{"credential": {first}}); code != http.StatusOK {
		t.Fatalf("passkey sign-in: %d", code)
	}
	again := e.client()
	passwordStep(again, "shop@example.com")
	again.get("/dashboard/login/2fa")
	again.post("/dashboard/login/2fa/passkey/begin", nil)
	if code, _, _ := again.post("/dashboard/login/2fa/passkey/finish", url.Values{"credential": {first}}); code != http.StatusUnauthorized || signedIn(again) {
		t.Errorf("a replayed passkey answer: %d", code)
	}
}

// TestPasskeysNeedHostName: served under an IP address, the dashboard
// offers no passkeys and says why (a relying party is a host name).
func TestPasskeysNeedHostName(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("shop@example.com")
	enrol(t, c)
	_, body, _ := c.get("/dashboard/account/2fa")
	if !strings.Contains(body, msg("passkey.nohost")) {
		t.Error("the account page does not say passkeys need a host name")
	}
	if code, _, _ := c.post("/dashboard/account/2fa/passkey/begin", nil); code != http.StatusConflict {
		t.Errorf("begin passkey registration under an IP address: %d, want 409", code)
	}
}

// TestPasskeyGuessesCounted: a refused passkey counts as a wrong code:
// after maxFailsAccount of them from one network, the right passkey is
// refused there too (429).
func TestPasskeyGuessesCounted(t *testing.T) {
	e := newEnv(t, onLocalhost, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	owner := e.client()
	owner.signup("shop@example.com")
	enrol(t, owner)
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	registerPasskey(t, owner, key)
	const stranger = "203.0.113.7"
	c := e.client()
	c.get("/dashboard/login")
	c.postFrom("/dashboard/login", stranger, url.Values{"email": {"shop@example.com"}, "password": {"correct horse battery"}})
	c.get("/dashboard/login/2fa")
	try := func(k *softKey) int {
		_, body, _ := c.postFrom("/dashboard/login/2fa/passkey/begin", stranger, url.Values{})
		code, _, _ := c.postFrom("/dashboard/login/2fa/passkey/finish", stranger, url.Values{"credential": {k.get(passkeyOptions(t, body))}})
		return code
	}
	for i := range maxFailsAccount {
		if code := try(newSoftKey(t, "localhost", e.dash.PublicURL)); code != http.StatusUnauthorized {
			t.Fatalf("wrong passkey %d: %d", i, code)
		}
	}
	if code := try(key); code != http.StatusTooManyRequests || signedIn(c) {
		t.Errorf("the right passkey after %d wrong ones: %d", maxFailsAccount, code)
	}
}

// passkeyAlone signs c in with k alone, from the login page, from the
// client address ip: the finish's status and body.
func passkeyAlone(t *testing.T, c *client, k *softKey, ip string) (int, string) {
	t.Helper()
	c.get("/dashboard/login")
	code, body, _ := c.postFrom("/dashboard/login/passkey/begin", ip, url.Values{})
	if code != http.StatusOK {
		t.Fatalf("begin passkey sign-in: %d %s", code, body)
	}
	opts := passkeyOptions(t, body)
	if opts["userVerification"] != "required" || opts["allowCredentials"] != nil {
		t.Errorf("passkey sign-in options: user verification %v, credentials %v; want required and none", opts["userVerification"], opts["allowCredentials"])
	}
	code, body, _ = c.postFrom("/dashboard/login/passkey/finish", ip, url.Values{"credential": {k.get(opts)}})
	return code, body
}

// TestPasskeyAlone: a passkey signs in alone from the login page, which
// offers it, without email or password; the session opens a store that
// requires two factors. A passkey not registered, one that names the
// account's handle but is another key, one without user verification,
// and an answer used once already sign nobody in.
func TestPasskeyAlone(t *testing.T) {
	e := newEnv(t, onLocalhost, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	owner := e.client()
	owner.signup("shop@example.com")
	enrol(t, owner)
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	registerPasskey(t, owner, key)
	st := owner.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	owner.get(base + "/twofactor")
	if code, _, _ := owner.post(base+"/twofactor", url.Values{"required": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("requiring two factors: %d", code)
	}

	c := e.client()
	if _, body, _ := c.get("/dashboard/login"); !strings.Contains(body, `id="passkey-signin"`) || !strings.Contains(body, msg("passkey.signin")) {
		t.Error("the login page offers no passkey sign-in")
	}
	code, body := passkeyAlone(t, c, key, "198.51.100.1")
	if code != http.StatusOK || !strings.Contains(body, `"/dashboard/stores"`) || !signedIn(c) {
		t.Fatalf("passkey sign-in: %d %s, signed in %v", code, body, signedIn(c))
	}
	if code, _, hdr := c.get(base + "/"); code != http.StatusOK {
		t.Errorf("a passkey session opening a store that requires two factors: %d to %q", code, hdr.Get("Location"))
	}

	refused := func(what string, k *softKey) {
		t.Helper()
		other := e.client()
		if code, _ := passkeyAlone(t, other, k, "198.51.100.2"); code != http.StatusUnauthorized || signedIn(other) {
			t.Errorf("%s: %d, signed in %v", what, code, signedIn(other))
		}
	}
	refused("an unknown passkey", newSoftKey(t, "localhost", e.dash.PublicURL))
	impostor := newSoftKey(t, "localhost", e.dash.PublicURL)
	impostor.handle = key.handle
	refused("another key naming the account's handle", impostor)
	lazy := *key
	lazy.noUV = true
	refused("the passkey without user verification", &lazy)
	evil := *key
	evil.rpID, evil.origin = "evil.example", "https://evil.example"
	refused("the passkey's answer for another site", &evil)

	// An answer replayed on a new ceremony.
	replay := e.client()
	replay.get("/dashboard/login")
	_, body, _ = replay.post("/dashboard/login/passkey/begin", nil)
	first := key.get(passkeyOptions(t, body))
	if code, _, _ := replay.post("/dashboard/login/passkey/finish", url.Values{"credential": {first}}); code != http.StatusOK {
		t.Fatalf("passkey sign-in: %d", code)
	}
	again := e.client()
	again.get("/dashboard/login")
	again.post("/dashboard/login/passkey/begin", nil)
	if code, _, _ := again.post("/dashboard/login/passkey/finish", url.Values{"credential": {first}}); code != http.StatusUnauthorized || signedIn(again) {
		t.Errorf("a replayed passkey answer: %d", code)
	}
	// Either step without the form's CSRF token.
	forged := e.client()
	forged.get("/dashboard/login")
	forged.csrf = "forged"
	if code, _, _ := forged.post("/dashboard/login/passkey/begin", nil); code != http.StatusForbidden {
		t.Errorf("begin without the CSRF token: %d", code)
	}
	if code, _, _ := forged.post("/dashboard/login/passkey/finish", url.Values{"credential": {first}}); code != http.StatusForbidden || signedIn(forged) {
		t.Errorf("finish without the CSRF token: %d", code)
	}
	// Finished without a ceremony begun.
	none := e.client()
	none.get("/dashboard/login")
	if code, _, _ := none.post("/dashboard/login/passkey/finish", url.Values{"credential": {first}}); code != http.StatusUnauthorized || signedIn(none) {
		t.Errorf("a passkey answer without a ceremony: %d", code)
	}
}

// TestPasskeyAloneGuessesCounted: a refused passkey sign-in counts as a
// wrong password for the account its answer names: after
// maxFailsAccount of them from one network, the right passkey is
// refused there too (429), and from another network it still signs in.
func TestPasskeyAloneGuessesCounted(t *testing.T) {
	e := newEnv(t, onLocalhost, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	owner := e.client()
	owner.signup("shop@example.com")
	enrol(t, owner)
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	registerPasskey(t, owner, key)
	const stranger = "203.0.113.7"
	c := e.client()
	for i := range maxFailsAccount {
		impostor := newSoftKey(t, "localhost", e.dash.PublicURL)
		impostor.handle = key.handle
		if code, _ := passkeyAlone(t, c, impostor, stranger); code != http.StatusUnauthorized {
			t.Fatalf("wrong passkey %d: %d", i, code)
		}
	}
	if code, _ := passkeyAlone(t, c, key, stranger); code != http.StatusTooManyRequests || signedIn(c) {
		t.Errorf("the right passkey after %d wrong ones: %d", maxFailsAccount, code)
	}
	if code, _ := passkeyAlone(t, c, key, "198.51.100.9"); code != http.StatusOK || !signedIn(c) {
		t.Errorf("the right passkey from another network: %d", code)
	}
}
