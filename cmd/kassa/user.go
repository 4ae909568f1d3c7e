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
			password, err := readPassword(passwordFile)
			if err != nil {
				return err
			}
			return printJSON(stdout)(c.call(ctx, "POST", "/dashboard/admin/users", map[string]any{
				"email": email, "password": password, "admin": admin,
			}))
		},
	}, {
		name: "user password", args: "EMAIL --password-file FILE",
		summary: `set a dashboard account's password (a reset by the operator); every session of the account ends; prints {"email","sessionsEnded"}`,
		flags: func(fs *flag.FlagSet, _ *adminFlags) {
			fs.StringVar(&passwordFile, "password-file", "", "file holding the new password, at least 10 characters; - reads standard input (required)")
		},
		run: func(ctx context.Context, c *adminClient, _ *adminFlags, rest []string, stdout io.Writer) error {
			if len(rest) != 1 || passwordFile == "" {
				return errBadArgs
			}
			password, err := readPassword(passwordFile)
			if err != nil {
				return err
			}
			return printJSON(stdout)(c.call(ctx, "POST", "/dashboard/admin/users/password", map[string]any{
				"email": rest[0], "password": password,
			}))
		},
	}, {
		name: "user reset-2fa", args: "--email EMAIL",
		summary: `turn off a dashboard account's two-factor sign-in (a lost device); every session of the account ends; prints {"email","twoFactor","sessionsEnded"}`,
		flags: func(fs *flag.FlagSet, _ *adminFlags) {
			fs.StringVar(&email, "email", "", "the account's email (required)")
		},
		run: func(ctx context.Context, c *adminClient, _ *adminFlags, rest []string, stdout io.Writer) error {
			if email == "" || len(rest) > 0 {
				return errBadArgs
			}
			return printJSON(stdout)(c.call(ctx, "POST", "/dashboard/admin/users/reset-2fa", map[string]any{"email": email}))
		},
	}}
}

// readPassword reads a password from file, or standard input for "-".
func readPassword(file string) (string, error) {
	var password []byte
	var err error
	if file == "-" {
		password, err = io.ReadAll(io.LimitReader(os.Stdin, 4096))
	} else {
		password, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	// A password file ends in a newline that is not part of it.
	return string(bytes.TrimRight(password, "\r\n")), nil
}
