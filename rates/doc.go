// Package rates tells the price of one bitcoin in every ISO 4217 fiat
// currency that at least one configured provider quotes (Currencies: 153
// with all four providers). It implements kassa.Rates. BTC (1) and SATS
// (100 000 000 per bitcoin) are exact and never fail. A currency that no
// provider quotes is refused with an Invalid error that names the
// providers and the rates endpoint, which lists the served currencies.
//
// Each provider says which currencies it quotes (Provider.Quotes, lists
// in quotes.go) and is asked for no others; a currency is served when it
// is in kassa.FiatCurrencies (the ISO 4217 table) and quoted by one.
//
// # Sources
//
// Fixed answers constant, plausible rates; it is the simulation's default
// and says so in its Source ("fixed (simulation)"). Its rates cover every
// currency any provider quotes, so a simulation accepts what a server
// with all four providers does.
//
// Service keeps a cache filled by Providers, each a small client of one
// public JSON API:
//
//   - Kraken: GET /0/public/Ticker?pair=XBTEUR,… (last trade price)
//   - Coinbase: GET /v2/exchange-rates?currency=BTC (spot rates)
//   - Bitstamp: GET /api/v2/ticker/btceur/ per pair (last trade price;
//     Bitstamp trades bitcoin against EUR, USD and GBP only)
//   - CoinGecko: GET /api/v3/simple/price?ids=bitcoin&vs_currencies=eur,…
//
// Each provider's base URL can be overridden, for tests and proxies.
// Prices are parsed from the JSON text straight into decimals; no rate
// ever passes through float64.
//
// Run refreshes the cache in the background: a round at start, then one
// every Config.Refresh (30 s) after the previous round ended. A round asks
// all providers at once, each under its own timeout (5 s); a provider that
// answered 429 or 503 with Retry-After is left alone for that long. Each
// failure is logged once per round with the provider's name and error.
// Rate and Entries read the cache only: a request never waits for a
// provider.
//
// # Choosing a rate
//
// A quote older than Config.MaxAge (10 minutes) is stale and not used.
// With no primary configured, Rate combines the fresh quotes of all
// providers by this rule:
//
//   - one fresh quote is used as it is;
//   - of two or more, a quote counts when it lies within MaxDeviation
//     (10%, limit included) of the median of all fresh quotes; the others
//     are outliers, dropped and reported by Entries;
//   - at least two quotes must count, else the sources disagree and there
//     is no rate (a wrong rate costs a merchant more than a refused
//     invoice);
//   - the rate is the median of the quotes that count (the mean of the
//     middle two when their number is even).
//
// So a provider that answers a price 100 times off is outvoted by two
// that agree. A store may instead choose a primary and a fallback
// provider (Config.Primary and Fallback, or Service.RateWith per call):
// the primary's fresh rate, else the fallback's.
//
// With no rate, Rate answers a kassa.Unavailable error whose message names
// the currency and why each provider failed. Entries reports per currency
// the rate (zero when none) and those errors.
//
// FromFlag builds the rates from the --rates flag: "fixed", or a
// comma-separated list of providers such as "kraken,coinbase,bitstamp".
package rates
