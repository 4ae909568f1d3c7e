package greenfield

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

// Store permissions in BTCPay's strings (BTCPayServer.Client/Permissions.cs
// names; the plugin's list is src/Helper/GreenfieldApiAuthorization.php).
const (
	PermViewInvoices      = "btcpay.store.canviewinvoices"
	PermCreateInvoice     = "btcpay.store.cancreateinvoice"
	PermViewStoreSettings = "btcpay.store.canviewstoresettings"
	PermModifyInvoices    = "btcpay.store.canmodifyinvoices"
	// PermModifyWebhooks is the plugin's optional webhook permission,
	// which its webhook registration needs.
	PermModifyWebhooks = "btcpay.store.webhooks.canmodifywebhooks"
	// PermModifyStoreSettings is asked by the store payment methods'
	// includeConfig; no key holds it yet.
	PermModifyStoreSettings = "btcpay.store.canmodifystoresettings"
)

// StorePermissions are the permissions a key holds on its store: a key
// as made today has full access to its store, which through this API is
// exactly what its routes serve. BTCPay's WooCommerce plugin refuses a
// key whose permissions, less its optional ones, are not exactly its
// required four (GreenfieldApiAuthorization::hasRequiredPermissions), so
// nothing is listed that no route serves.
var StorePermissions = []string{PermViewInvoices, PermCreateInvoice, PermViewStoreSettings, PermModifyInvoices, PermModifyWebhooks}
