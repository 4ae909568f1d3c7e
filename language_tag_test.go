package kassa

import "testing"

func TestValidLanguageTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"en": true, "de-CH": true, "pt-BR": true, "zh-Hant-TW": true, "zh-SP": true, "es-419": true,
		"": false, "e": false, "en_US": false, "en-": false, "-en": false, "not a language": false,
		"12": false, "en-toolongsubtag": false, "en-US-aaaaaaaa-bbbbbbbb-cccccccc-dddddddd": false,
	} {
		if got := ValidLanguageTag(tag); got != want {
			t.Errorf("ValidLanguageTag(%q) = %v, want %v", tag, got, want)
		}
	}
}
