package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

// The user commands manage dashboard accounts through the running
// server (POST /dashboard/admin/users with the admin token).
func init() {
	var email, passwordFile string
	var admin bool
	adminGroups["user"] = []adminCommand{{
		name: "user create", args: "--email EMAIL --password-file FILE [--admin]",
		summary: `create a dashboard account; --admin makes an operator, who sees every store; prints {"email","admin"}`,
		flags: func(fs *flag.FlagSet, _ *adminFlags) {
			fs.StringVar(&email, "email", "", "the account's email (required)")
			fs.StringVar(&passwordFile, "password-file", "", "file holding the password, at least 10 characters; - reads standard input (required)")
			fs.BoolVar(&admin, "admin", false, "make the account an operator")
		},
		run: func(ctx context.Context, c *adminClient, _ *adminFlags, rest []string, stdout io.Writer) error {
			if email == "" || passwordFile == "" || len(rest) > 0 {
				return errBadArgs
			}
			var password []byte
			var err error
			if passwordFile == "-" {
				password, err = io.ReadAll(io.LimitReader(os.Stdin, 4096))
			} else {
				password, err = os.ReadFile(passwordFile)
			}
			if err != nil {
				return fmt.Errorf("read the password: %w", err)
			}
			// A password file ends in a newline that is not part of it.
			password = bytes.TrimRight(password, "\r\n")
			return printJSON(stdout)(c.call(ctx, "POST", "/dashboard/admin/users", map[string]any{
				"email": email, "password": string(password), "admin": admin,
			}))
		},
	}}
}
