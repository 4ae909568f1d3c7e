package greenfield

import "github.com/kassapay/kassa"

// BTCPayVersion is the BTCPay Server version this adapter speaks and
// reports in server/info: every shape, field and payment-method id here
// is read from its OpenAPI files (BTCPayServer/wwwroot/swagger/v1/ in
// btcpayserver/btcpayserver, tag v2.4.1, commit 03345c2886a5, version
// from Build/Version.csproj). BTCPay's WooCommerce plugin offers
// refunds from 1.7.6 on (src/Admin/GlobalSettings.php, v2.8.0).
const BTCPayVersion = "2.4.1"

// Payment-method ids as BTCPayVersion names them (swagger.template.json,
// components.schemas.PaymentMethodId).
const (
	MethodChain     = "BTC-CHAIN"
	MethodLightning = "BTC-LN"
)

// StorePermissions are what api-keys/current reports of a key made
// without a choice of permissions (kassa.DefaultKeyPermissions, which
// grants each of them): exactly what the routes of this API but the
// refund ones need; refunds spend the store's balance, so a key must be
// given their permissions.
// BTCPay's WooCommerce plugin refuses a key whose permissions, less its
// optional ones, are not exactly its required four
// (GreenfieldApiAuthorization::hasRequiredPermissions), so nothing is
// listed that no route serves.
var StorePermissions = kassa.Permissions{kassa.PermViewInvoices, kassa.PermCreateInvoice, kassa.PermViewStoreSettings, kassa.PermModifyInvoices, kassa.PermModifyWebhooks}
