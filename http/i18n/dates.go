package i18n

import (
	"github.com/go-playground/locales"
	arloc "github.com/go-playground/locales/ar"
	caloc "github.com/go-playground/locales/ca"
	csloc "github.com/go-playground/locales/cs"
	daloc "github.com/go-playground/locales/da"
	deloc "github.com/go-playground/locales/de"
	elloc "github.com/go-playground/locales/el"
	esloc "github.com/go-playground/locales/es"
	faloc "github.com/go-playground/locales/fa"
	filoc "github.com/go-playground/locales/fi"
	frloc "github.com/go-playground/locales/fr"
	heloc "github.com/go-playground/locales/he"
	hiloc "github.com/go-playground/locales/hi"
	huloc "github.com/go-playground/locales/hu"
	idloc "github.com/go-playground/locales/id"
	itloc "github.com/go-playground/locales/it"
	jaloc "github.com/go-playground/locales/ja"
	koloc "github.com/go-playground/locales/ko"
	msloc "github.com/go-playground/locales/ms"
	nbloc "github.com/go-playground/locales/nb"
	nlloc "github.com/go-playground/locales/nl"
	plloc "github.com/go-playground/locales/pl"
	ptloc "github.com/go-playground/locales/pt"
	roloc "github.com/go-playground/locales/ro"
	ruloc "github.com/go-playground/locales/ru"
	skloc "github.com/go-playground/locales/sk"
	svloc "github.com/go-playground/locales/sv"
	thloc "github.com/go-playground/locales/th"
	trloc "github.com/go-playground/locales/tr"
	ukloc "github.com/go-playground/locales/uk"
	viloc "github.com/go-playground/locales/vi"
	zhloc "github.com/go-playground/locales/zh"
)

// dateLocales are the CLDR date and time formats of each language with
// a catalogue (github.com/go-playground/locales, generated from CLDR).
// A new language adds its package here; TestTimeCLDR fails until it
// does.
var dateLocales = map[string]locales.Translator{
	"de": deloc.New(),
	"ar": arloc.New(),
	"fa": faloc.New(),
	"he": heloc.New(),
	"zh": zhloc.New(),
	"ja": jaloc.New(),
	"ko": koloc.New(),
	"hi": hiloc.New(),
	"es": esloc.New(),
	"fr": frloc.New(),
	"pt": ptloc.New(),
	"it": itloc.New(),
	"nl": nlloc.New(),
	"pl": plloc.New(),
	"tr": trloc.New(),
	"ru": ruloc.New(),
	"uk": ukloc.New(),
	"id": idloc.New(),
	"vi": viloc.New(),
	"th": thloc.New(),
	"sv": svloc.New(),
	"da": daloc.New(),
	"nb": nbloc.New(),
	"fi": filoc.New(),
	"cs": csloc.New(),
	"el": elloc.New(),
	"hu": huloc.New(),
	"ro": roloc.New(),
	"ca": caloc.New(),
	"ms": msloc.New(),
	"sk": skloc.New(),
}
