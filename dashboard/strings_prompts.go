package dashboard

import "maps"

func init() { maps.Copy(strs, promptStrs) }

// promptStrs are the confirmation prompts of the dashboard's
// destructive actions, the members page's message for an email that is
// not a member, and the other short texts the templates show in
// attributes and badges.
var promptStrs = map[string]string{
	"inv.invalidconfirm":   "Mark this invoice invalid?",
	"inv.dropped":          "dropped",
	"keys.deleteconfirm":   "Delete this API key? It stops working at once.",
	"keys.labelexample":    "shop plugin",
	"hook.deleteconfirm":   "Delete this webhook?",
	"links.archiveconfirm": "Archive this pay link? Customers can no longer pay it.",
	"members.notmember":    "%s is not a member of this store: change the role of, or remove, one of the members listed.",
	"members.badrole":      "Unknown role: choose Owner, Manager, Employee or Guest.",
	"members.toomany":      "There are %d open invitations, the most there can be: revoke some first.",
	"members.already":      "This account already belongs to the store.",
}
