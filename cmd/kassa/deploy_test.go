package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The files under deploy/ name kassa's commands, flags, KASSA_*
// variables and configuration keys; these tests read them as systemd,
// compose and the container build would and check each name against the
// binary, so that a renamed flag cannot leave them behind. They cannot
// run the stack (no container engine or systemd here).

const deployDir = "../../deploy"

// deployNames checks kassa command lines and variables against the
// binary.
type deployNames struct {
	t     *testing.T
	serve *flag.FlagSet
	help  map[string]string // subcommand → its --help text
}

func newDeployNames(t *testing.T) *deployNames {
	c := DefaultConfig()
	var file string
	return &deployNames{t: t, serve: newConfigFlags(&c, "", &file), help: map[string]string{}}
}

// env checks a KASSA_* variable: a serve setting's, KASSA_CONFIG, or
// one the CLI reads.
func (d *deployNames) env(where, name string) {
	d.t.Helper()
	if !strings.HasPrefix(name, "KASSA_") {
		return
	}
	if name == "KASSA_SERVER" {
		return
	}
	found := false
	d.serve.VisitAll(func(f *flag.Flag) { found = found || envName(f.Name) == name })
	if !found {
		d.t.Errorf("%s: %s is no kassa variable", where, name)
	}
}

// command checks a kassa command line (the arguments after the binary):
// the subcommand exists and takes every --flag given.
func (d *deployNames) command(where string, args []string) {
	d.t.Helper()
	if len(args) == 0 {
		d.t.Errorf("%s: kassa without a command", where)
		return
	}
	sub := args[0]
	help, ok := d.help[sub]
	if !ok {
		stdout, stderr, code := runBinary(d.t, sub, "--help")
		if code != 0 {
			d.t.Errorf("%s: kassa %s: not a command (exit %d: %s)", where, sub, code, stderr)
			return
		}
		help, d.help[sub] = stdout, stdout
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + `\b`).MatchString(help) {
			d.t.Errorf("%s: kassa %s has no flag --%s", where, sub, name)
		}
	}
}

// configFile checks a configuration file's keys and values.
func (d *deployNames) configFile(path string) {
	d.t.Helper()
	c := DefaultConfig()
	var file string
	fs := newConfigFlags(&c, "", &file)
	for _, err := range applyConfigFile(fs, path, configSources{}) {
		d.t.Errorf("%v", err)
	}
}

// TestDeploySystemdUnit reads deploy/kassa.service: ExecStart runs a
// kassa command with flags that exist, every Environment= variable is
// kassa's, the sandbox directives are there, the stop timeout exceeds the
// graceful one, and systemd-analyze verify accepts it when it is
// installed.
func TestDeploySystemdUnit(t *testing.T) {
	needBinary(t)
	t.Parallel()
	path := filepath.Join(deployDir, "kassa.service")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := newDeployNames(t)
	directives := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s: %q is no directive", path, line)
			continue
		}
		directives[k] = append(directives[k], v)
	}
	execStart := strings.Fields(strings.Join(directives["ExecStart"], " "))
	if len(execStart) < 2 || filepath.Base(execStart[0]) != "kassa" {
		t.Fatalf("%s: ExecStart %q does not run kassa", path, execStart)
	}
	d.command(path+" ExecStart", execStart[1:])
	for i, a := range execStart {
		if a == "--config" && i+1 < len(execStart) && execStart[i+1] == "/etc/kassa/kassa.yaml" {
			d.configFile(filepath.Join(deployDir, "kassa.yaml"))
		}
	}
	for _, env := range directives["Environment"] {
		name, _, _ := strings.Cut(strings.Trim(env, `"`), "=")
		d.env(path+" Environment", name)
	}
	for k, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "CapabilityBoundingSet": "",
		"MemoryDenyWriteExecute": "yes", "StateDirectory": "kassa", "PrivateTmp": "yes", "ProtectHome": "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "User": "kassa",
	} {
		if got := directives[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s=%q, want %q", path, k, got, want)
		}
	}
	if stop, err := time.ParseDuration(strings.Join(directives["TimeoutStopSec"], "")); err != nil || stop <= DefaultConfig().ShutdownTimeout {
		t.Errorf("%s: TimeoutStopSec=%v must exceed the shutdown timeout %v", path, directives["TimeoutStopSec"], DefaultConfig().ShutdownTimeout)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze is not installed: the unit is checked only by this parser")
		return
	}
	// verify wants the ExecStart binary to exist: point it at the test's.
	unit := filepath.Join(t.TempDir(), "kassa.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(raw), execStart[0], binPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDeployCompose reads deploy/compose.yaml: the kassa service's command
// and health check are kassa commands with flags that exist, every
// KASSA_* variable is kassa's, its configuration file is there and
// valid, lnd's files are mounted where KASSA_LIGHTNING looks, and compose
// waits longer than the graceful stop.
func TestDeployCompose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(deployDir, "compose.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			StopGrace   string            `yaml:"stop_grace_period"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			Build struct {
				Context    string `yaml:"context"`
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, name := range []string{"kassa", "bitcoind", "lnd", "caddy"} {
		if _, ok := doc.Services[name]; !ok {
			t.Errorf("%s has no %s service", path, name)
		}
	}
	for name, svc := range doc.Services {
		if svc.Healthcheck.Test == nil {
			t.Errorf("%s: service %s has no healthcheck", path, name)
		}
	}
	k := doc.Services["kassa"]
	d := newDeployNames(t)
	d.command(path+" command", k.Command)
	hc := k.Healthcheck.Test
	if len(hc) < 3 || hc[0] != "CMD" || filepath.Base(hc[1]) != "kassa" {
		t.Errorf("%s: kassa's healthcheck %q does not run kassa", path, hc)
	} else {
		d.command(path+" healthcheck", hc[2:])
	}
	for name := range k.Environment {
		d.env(path+" environment", name)
	}
	if k.Environment["KASSA_CLIENT_IP_HEADER"] != "X-Forwarded-For" {
		t.Errorf("%s: behind Caddy, KASSA_CLIENT_IP_HEADER must be X-Forwarded-For", path)
	}
	if g, err := time.ParseDuration(k.StopGrace); err != nil || g <= DefaultConfig().ShutdownTimeout {
		t.Errorf("%s: stop_grace_period %q must exceed the shutdown timeout", path, k.StopGrace)
	}
	if filepath.Join(k.Build.Context, k.Build.Dockerfile) != filepath.Join("..", "deploy", "Containerfile") {
		t.Errorf("%s: kassa is built from %s/%s", path, k.Build.Context, k.Build.Dockerfile)
	}
	lndMount := ""
	for _, v := range k.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			continue
		}
		if strings.HasPrefix(parts[0], "./") {
			if _, err := os.Stat(filepath.Join(deployDir, parts[0])); err != nil {
				t.Errorf("%s: mounts %s: %v", path, parts[0], err)
			}
			if parts[1] == "/etc/kassa/kassa.yaml" {
				d.configFile(filepath.Join(deployDir, parts[0]))
			}
		}
		if parts[0] == "lnd" {
			lndMount = parts[1]
		}
	}
	if lndMount == "" || !strings.Contains(k.Environment["KASSA_LIGHTNING"], "tls="+lndMount+"/tls.cert") ||
		!strings.Contains(k.Environment["KASSA_LIGHTNING"], "macaroon="+lndMount+"/") {
		t.Errorf("%s: KASSA_LIGHTNING %q does not read lnd's volume (mounted at %q)", path, k.Environment["KASSA_LIGHTNING"], lndMount)
	}
}

// TestDeployContainerfile reads deploy/Containerfile: multi-stage, not
// root, its ENV variables kassa's, its entry point and health check
// kassa commands with flags that exist.
func TestDeployContainerfile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(deployDir, "Containerfile")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Join continued lines, drop comments.
	text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(raw), " ")
	d := newDeployNames(t)
	var from int
	var entry, cmd []string
	user := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			from++
		case "USER":
			user = rest
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				name, _, _ := strings.Cut(kv, "=")
				d.env(path+" ENV", name)
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &entry); err != nil {
				t.Errorf("%s: ENTRYPOINT %s: %v", path, rest, err)
			}
		case "CMD":
			if err := json.Unmarshal([]byte(rest), &cmd); err != nil {
				t.Errorf("%s: CMD %s: %v", path, rest, err)
			}
		case "HEALTHCHECK":
			_, exec, ok := strings.Cut(rest, "CMD ")
			var hc []string
			if !ok || json.Unmarshal([]byte(exec), &hc) != nil || len(hc) < 2 || filepath.Base(hc[0]) != "kassa" {
				t.Errorf("%s: HEALTHCHECK %q does not run kassa", path, rest)
				continue
			}
			d.command(path+" HEALTHCHECK", hc[1:])
		}
	}
	if from < 2 {
		t.Errorf("%s: %d stages, want a build stage and a runtime stage", path, from)
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("%s: USER %q: the image must not run as root", path, user)
	}
	if len(entry) != 1 || filepath.Base(entry[0]) != "kassa" {
		t.Errorf("%s: ENTRYPOINT %q is not kassa", path, entry)
	}
	d.command(path+" CMD", cmd)
}

// TestDeployReverseProxies checks that both proxy examples send the
// client's address in X-Forwarded-For, as the configuration examples'
// client-ip-header expects, and keep the admin API and the dashboard's
// admin-token routes private (issue 18: /dashboard/admin/users passed).
func TestDeployReverseProxies(t *testing.T) {
	t.Parallel()
	d := newDeployNames(t)
	d.configFile(filepath.Join(deployDir, "kassa.yaml"))
	yamlText, err := os.ReadFile(filepath.Join(deployDir, "kassa.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(yamlText), "\nclient-ip-header: X-Forwarded-For\n") {
		t.Errorf("deploy/kassa.yaml does not set client-ip-header: X-Forwarded-For for the proxies")
	}
	nginx, err := os.ReadFile(filepath.Join(deployDir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"proxy_set_header X-Forwarded-For $remote_addr;", "proxy_pass http://127.0.0.1:8080;", "location /admin/ {\n\t\treturn 404;", "location /dashboard/admin/ {\n\t\treturn 404;", "ssl_certificate"} {
		if !strings.Contains(string(nginx), want) {
			t.Errorf("deploy/nginx.conf lacks %q", want)
		}
	}
	caddy, err := os.ReadFile(filepath.Join(deployDir, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reverse_proxy kassa:8080", "@admin path /admin/* /dashboard/admin/*", "respond @admin 404"} {
		if !strings.Contains(string(caddy), want) {
			t.Errorf("deploy/Caddyfile lacks %q", want)
		}
	}
}
