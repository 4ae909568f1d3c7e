package kassa

import (
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
