package kassa

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateLogoURL(t *testing.T) {
	t.Parallel()
	good := []string{"", "data:image/png;base64,iVBORw0KGgo=", "data:image/webp;base64,UklGRg=="}
	for _, logo := range good {
		if err := ValidateLogoURL(logo); err != nil {
			t.Errorf("ValidateLogoURL(%q) = %v", logo, err)
		}
	}
	bad := []string{
		"https://shop.example.com/logo.png", // another origin
		"/logo.png",
		"data:image/svg+xml;base64,PHN2Zz4=",
		"data:image/png,rawbytes",
		"data:image/png;base64,not base64!",
		"data:image/png;base64,",
		"data:image/png;base64," + strings.Repeat("A", MaxLogoURLLength),
	}
	for _, logo := range bad {
		if err := ValidateLogoURL(logo); ErrorCode(err) != Invalid {
			t.Errorf("ValidateLogoURL(%.40q) = %v, want Invalid", logo, err)
		}
	}
}

func TestValidateBrandColor(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"", "#1a56db", "#FFFFFF"} {
		if err := ValidateBrandColor(c); err != nil {
			t.Errorf("ValidateBrandColor(%q) = %v", c, err)
		}
	}
	for _, c := range []string{"red", "#fff", "1a56db", "#1a56dg", "#1a56db;", "#1a56db0"} {
		if err := ValidateBrandColor(c); ErrorCode(err) != Invalid {
			t.Errorf("ValidateBrandColor(%q) = %v, want Invalid", c, err)
		}
	}
	s := StoreSettings{Name: "S", LogoURL: "https://x/l.png", BrandColor: "blue"}
	var e *Error
	if err := s.Validate(); !errors.As(err, &e) || len(e.Fields) != 2 || e.Fields[0].Field != "logoUrl" || e.Fields[1].Field != "brandColor" {
		t.Errorf("Validate = %v, want logoUrl and brandColor refused", err)
	}
	if st := NewStore("store_x", StoreSettings{Name: "S", LogoURL: "data:image/png;base64,AA==", BrandColor: "#123456"}, scriptEpoch); st.LogoURL == "" || st.BrandColor != "#123456" {
		t.Errorf("NewStore dropped the branding: %+v", st)
	}
}

// TestStoreUpdateLogoAsAtCreation: a store update (the dashboard's
// settings) accepts the same logos as store creation, and only those,
// since the customer pages show only a data: image.
func TestStoreUpdateLogoAsAtCreation(t *testing.T) {
	t.Parallel()
	s := &Store{Name: "Shop", Currency: EUR}
	u := StoreUpdate{Name: "Shop", Currency: EUR, LogoURL: "https://shop.example.com/logo.png"}
	if _, err := s.Apply(u); ErrorCode(err) != Invalid {
		t.Fatalf("update with an http logo = %v, want Invalid (the checkout would not show it)", err)
	}
	u.LogoURL = "data:image/png;base64,iVBORw0KGgo="
	next, err := s.Apply(u)
	if err != nil {
		t.Fatalf("update with a data: logo: %v", err)
	}
	if next.LogoURL != u.LogoURL {
		t.Fatalf("logo %q, want %q", next.LogoURL, u.LogoURL)
	}
}
