package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

// userCreateFlags declares user create's flags.
func userCreateFlags(fs *flag.FlagSet) (email *string, fromStdin, admin *bool, tenant, role *string) {
	return fs.String("email", "", "login email (required)"),
		fs.Bool("password-stdin", false, "read the password from standard input (required)"),
		fs.Bool("admin", false, "the operator sees every tenant, as an owner"),
		fs.String("tenant", "", "make the operator a member of this tenant"),
		fs.String("role", string(domain.RoleOperator), "their role in --tenant: viewer (reads), operator (also resolves conflicts) "+
			"or owner (also providers, secrets, scopes, API tokens and members)")
}

func (e cliEnv) userCreate(ctx context.Context, args []string) error {
	fs := e.flags("user create")
	email, fromStdin, admin, tenant, role := userCreateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *email == "" || !*fromStdin {
		fs.Usage()
		return fmt.Errorf("user create: --email and --password-stdin are required")
	}
	memberRole, err := domain.ParseRole(*role)
	if err != nil {
		return fmt.Errorf("--role: %s", domain.ErrorMessage(err))
	}
	if *tenant == "" && flagSet(fs, "role") {
		return fmt.Errorf("user create: --role is the role in --tenant; give --tenant too")
	}
	password, err := e.passwordFromStdin("user create")
	if err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
		if err := s.CreateUser(ctx, *email, password, *admin, *tenant, memberRole); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created operator %s\n", strings.ToLower(*email))
		return nil
	})
}

// passwordFromStdin reads a password from the first line of standard input.
func (e cliEnv) passwordFromStdin(cmd string) (string, error) {
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	password := strings.TrimRight(line, "\r\n")
	if password == "" && err != nil {
		return "", fmt.Errorf("%s: no password on standard input: %w", cmd, err)
	}
	if password == "" {
		return "", fmt.Errorf("%s: the first line of standard input is empty; it must hold the password", cmd)
	}
	return password, nil
}

// userPasswordFlags declares user password's flags.
func userPasswordFlags(fs *flag.FlagSet) (email *string, fromStdin *bool) {
	return fs.String("email", "", "the operator's login email (required)"),
		fs.Bool("password-stdin", false, "read the new password from standard input (required)")
}

func (e cliEnv) userPassword(ctx context.Context, args []string) error {
	fs := e.flags("user password")
	email, fromStdin := userPasswordFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *email == "" || !*fromStdin {
		fs.Usage()
		return fmt.Errorf("user password: --email and --password-stdin are required")
	}
	password, err := e.passwordFromStdin("user password")
	if err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
		if err := s.ResetPassword(ctx, *email, password); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "set a new password for operator %s; their sessions have ended\n", strings.ToLower(strings.TrimSpace(*email)))
		return nil
	})
}
