package kassa

import (
	"reflect"
	"strings"
	"testing"
)

func TestStoreSettingsValidate(t *testing.T) {
	valid := func() StoreSettings {
		return StoreSettings{Name: "Corner Shop", PercentFee: decimalOf("1"), UnderpaymentTolerance: decimalOf("0.25"), ConfirmationsRequired: 1}
	}
	s := valid()
	if err := s.Validate(); err != nil || s.Currency != EUR {
		t.Fatalf("Validate = %v, currency %s; want EUR by default", err, s.Currency)
	}
	for _, tc := range []struct {
		name   string
		change func(*StoreSettings)
		fields []string
	}{
		{"currency", func(s *StoreSettings) { s.Currency = "usd" }, nil},
		{"no name", func(s *StoreSettings) { s.Name = "" }, []string{"name"}},
		{"long name", func(s *StoreSettings) { s.Name = string(make([]byte, 101)) }, []string{"name"}},
		{"unknown currency", func(s *StoreSettings) { s.Currency = "ZZZ" }, []string{"currency"}},
		{"fee 0", func(s *StoreSettings) { s.PercentFee = decimalOf("0") }, nil},
		{"fee 100", func(s *StoreSettings) { s.PercentFee = decimalOf("100") }, nil},
		{"fee above 100", func(s *StoreSettings) { s.PercentFee = decimalOf("100.01") }, []string{"percentFee"}},
		{"negative fee", func(s *StoreSettings) { s.PercentFee = decimalOf("-0.01") }, []string{"percentFee"}},
		{"tolerance 100", func(s *StoreSettings) { s.UnderpaymentTolerance = decimalOf("100") }, nil},
		{"tolerance above 100", func(s *StoreSettings) { s.UnderpaymentTolerance = decimalOf("101") }, []string{"underpaymentTolerance"}},
		{"negative tolerance", func(s *StoreSettings) { s.UnderpaymentTolerance = decimalOf("-1") }, []string{"underpaymentTolerance"}},
		{"0 confirmations", func(s *StoreSettings) { s.ConfirmationsRequired = 0 }, nil},
		{"negative confirmations", func(s *StoreSettings) { s.ConfirmationsRequired = -1 }, []string{"confirmations"}},
		{"101 confirmations", func(s *StoreSettings) { s.ConfirmationsRequired = 101 }, []string{"confirmations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.change(&s)
			checkFields(t, s.Validate(), tc.fields)
		})
	}
}

func TestNewStore(t *testing.T) {
	settings := StoreSettings{Name: "Corner Shop", Currency: CHF, PercentFee: decimalOf("0.5"), ConfirmationsRequired: 2, LightningAddress: "shop@example.com"}
	st := NewStore("store1", settings, scriptEpoch)
	if st.ID != "store1" || st.Name != "Corner Shop" || st.Currency != CHF || !st.PercentFee.Equal(decimalOf("0.5")) ||
		st.ConfirmationsRequired != 2 || st.LightningAddress != "shop@example.com" || !st.CreatedAt.Equal(scriptEpoch) {
		t.Errorf("NewStore = %+v", st)
	}
	if st.WalletMinSendable != 1_000 || st.WalletMaxSendable != 100_000_000_000 || st.CreditLimit != 100_000 {
		t.Errorf("defaults: min %d, max %d msat, credit %d sats", st.WalletMinSendable, st.WalletMaxSendable, st.CreditLimit)
	}
	if len(st.APIKeys) != 1 || len(st.APIKeys[0].Key) != 64 || !ValidID(st.APIKeys[0].ID) {
		t.Errorf("API keys = %+v", st.APIKeys)
	}
	if other := NewStore("store2", settings, scriptEpoch); other.APIKeys[0].Key == st.APIKeys[0].Key {
		t.Error("two stores share an API key")
	}
}

// TestStoreSettingsChangeNothing: Settings is the update that changes
// nothing: applied to the store it came from, every setting stays. The
// update used sets every field of StoreUpdate, so a field added there
// fails here until Settings carries it.
func TestStoreSettingsChangeNothing(t *testing.T) {
	u := StoreUpdate{Name: "Shop", Currency: USD, ConfirmationsRequired: 3, OnchainMinAmount: 5000,
		LightningAddress: "shop@wallet.example", Xpub: "", XpubType: "taproot",
		LogoURL: "data:image/png;base64,iVBORw0KGgo=", BrandColor: "#1a2b3c", DefaultRedirectURL: "https://shop.example/thanks",
		DefaultRedirectAutomatically: true, DefaultLanguage: "de", RefundAutoApproveMax: 5000, WalletGapLimit: 50}
	v := reflect.ValueOf(u)
	for i := range v.NumField() {
		if v.Field(i).IsZero() && v.Type().Field(i).Name != "Xpub" {
			t.Fatalf("the test's update leaves StoreUpdate.%s zero: set it", v.Type().Field(i).Name)
		}
	}
	base := &Store{ID: "st_1", Name: "Old", Currency: EUR}
	st, err := base.Apply(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Settings(); !reflect.DeepEqual(got, u) {
		t.Errorf("Settings() = %+v, want the update applied %+v", got, u)
	}
	again, err := st.Apply(st.Settings())
	if err != nil || !again.Equal(st) {
		t.Errorf("applying Settings() changed the store: %v\n%+v\n%+v", err, again, st)
	}
}

// TestStoreApplyNamedFields: with settings named, Apply sets those to
// the update's values and keeps every other one as the store has it,
// whatever the update holds for it, checking the result as a whole; an
// empty list of names changes nothing, an unknown name is Invalid.
func TestStoreApplyNamedFields(t *testing.T) {
	base := &Store{ID: "st_1", Name: "Shop", Currency: EUR, BrandColor: "#000000", RefundAutoApproveMax: 5000}
	u := StoreUpdate{Name: "", Currency: USD, BrandColor: "#112233"} // Name and Currency stale or empty
	st, err := base.Apply(u, StoreBrandColor)
	if err != nil {
		t.Fatal(err)
	}
	want := *base
	want.BrandColor = "#112233"
	if !st.Equal(&want) {
		t.Errorf("applied = %+v, want %+v", st, &want)
	}
	if same, err := base.Apply(u, []StoreField{}...); err != nil || !same.Equal(base) {
		t.Errorf("no field named: %+v, %v", same, err)
	}
	if _, err := base.Apply(u, StoreName); ErrorCode(err) != Invalid {
		t.Errorf("an empty name named: %v, want Invalid", err)
	}
	if _, err := base.Apply(u, "percentFee"); ErrorCode(err) != Invalid {
		t.Errorf("an unknown name: %v, want Invalid", err)
	}
	if _, err := base.Apply(u); ErrorCode(err) != Invalid {
		t.Errorf("none named applies every field (the empty name): %v, want Invalid", err)
	}
}

// TestStoreUpdateChangedSince: a form's digest of the settings it showed
// names exactly the settings changed since; a setting the digest does
// not list is not named; a damaged digest is Invalid.
func TestStoreUpdateChangedSince(t *testing.T) {
	shown := StoreUpdate{Name: "Shop", Currency: EUR, LogoURL: "data:image/png;base64," + strings.Repeat("A", 40000), ConfirmationsRequired: 1}
	digest := shown.Digest()
	if len(digest) > 600 {
		t.Errorf("digest of %d characters: it should not grow with the values", len(digest))
	}
	sent := shown
	if got, err := sent.ChangedSince(digest); err != nil || got == nil || len(got) != 0 {
		t.Errorf("nothing changed: %v, %v; want an empty list", got, err)
	}
	sent.BrandColor, sent.ConfirmationsRequired, sent.LogoURL = "#112233", 2, shown.LogoURL+"B"
	got, err := sent.ChangedSince(digest)
	if want := []StoreField{StoreConfirmations, StoreLogoURL, StoreBrandColor}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("changed = %v, %v; want %v", got, err, want)
	}
	partial := strings.Split(digest, ",")[0] // the name's only
	if got, err := sent.ChangedSince(partial); err != nil || len(got) != 0 {
		t.Errorf("settings the digest does not list: %v, %v; want none named", got, err)
	}
	for _, bad := range []string{"name", "name:12", "garbage,with,commas"} {
		if _, err := sent.ChangedSince(bad); ErrorCode(err) != Invalid {
			t.Errorf("digest %q: %v, want Invalid", bad, err)
		}
	}
}
