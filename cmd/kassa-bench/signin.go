package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The sign-in flood: wrong sign-ins from many client networks (forged
// with --client-ip-header, everything being loopback) while a merchant
// whose browser signed in before signs in again and again, each time
// from a new address with its device cookie.
const (
	floodNetworks = 400
	floodThreads  = 60
	floodFor      = 60 * time.Second
	goodEvery     = 300 * time.Millisecond
	goodWithin    = 2 * time.Second
	floodIPHeader = "X-Forwarded-For"
	floodEmail    = "merchant@example.com"
	floodPassword = "correct horse battery staple"
)

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// benchSignin runs the flood against the real `kassa serve` and prints
// the share of the merchant's sign-ins that succeeded within goodWithin
// and the server's resident memory.
func benchSignin(ctx context.Context) error {
	tmp, bin, cleanup, err := workspace("signin")
	if err != nil {
		return err
	}
	defer cleanup()
	k, err := startKassa(bin, filepath.Join(tmp, "kassa-data"), "--client-ip-header", floodIPHeader)
	if err != nil {
		return err
	}
	defer k.stop()
	body := fmt.Sprintf(`{"email":%q,"password":%q}`, floodEmail, floodPassword)
	req, _ := http.NewRequest("POST", k.base+"/dashboard/admin/users", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+k.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("create the merchant: %d", res.StatusCode)
	}
	c := newClient(floodThreads + 4)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	csrf, err := csrfPair(c, k.base)
	if err != nil {
		return err
	}
	// One sign-in with no flood: its device cookie (none from a build
	// without them).
	code, cookies, err := signIn(c, k.base, csrf, floodEmail, floodPassword, "192.0.2.1", nil)
	if err != nil || code != http.StatusSeeOther {
		return fmt.Errorf("first sign-in: %d %v", code, err)
	}
	var device *http.Cookie
	for _, ck := range cookies {
		if ck.Name == "kassa_device" {
			device = &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	if device == nil {
		fmt.Fprintln(os.Stderr, "signin: the first sign-in gave no device cookie")
	}

	deadline := time.Now().Add(floodFor)
	var sent, codes [6]atomic.Int64 // by status class
	var next atomic.Int64
	var wg sync.WaitGroup
	for range floodThreads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				i := next.Add(1)
				email := floodEmail
				if i%2 == 0 {
					email = fmt.Sprintf("nobody%d@example.com", i%1000)
				}
				code, _, err := signIn(c, k.base, csrf, email, "wrong password guess", floodAddress(i), nil)
				if err != nil {
					sent[0].Add(1)
					continue
				}
				codes[min(code/100, 5)].Add(1)
			}
		}()
	}
	var tried, good int
	var latencies []time.Duration
	tick := time.NewTicker(goodEvery)
	for n := 0; time.Now().Before(deadline); n++ {
		<-tick.C
		began := time.Now()
		code, _, err := signIn(c, k.base, csrf, floodEmail, floodPassword, fmt.Sprintf("198.18.%d.%d", n/250%256, n%250+1), device)
		took := time.Since(began)
		tried++
		if err == nil && code == http.StatusSeeOther && took <= goodWithin {
			good++
		}
		latencies = append(latencies, took)
	}
	tick.Stop()
	wg.Wait()
	rss, _, err := k.memory()
	if err != nil {
		return err
	}
	hwm := peakRSS(k.pid)
	fmt.Fprintf(os.Stderr, "signin: %d good sign-ins, %d within %v; flood answers 2xx/3xx %d, 4xx %d, 5xx %d, errors %d; good p50 %v max %v\n",
		tried, good, goodWithin, codes[2].Load()+codes[3].Load(), codes[4].Load(), codes[5].Load(), sent[0].Load(),
		percentile(latencies, 0.5), percentile(latencies, 1))
	bench("signin_flood_good_within_2s", float64(good)/float64(max(tried, 1)), "share")
	bench("signin_flood_rss_mb", float64(rss)/(1<<20), "MB")
	bench("signin_flood_peak_rss_mb", float64(hwm)/(1<<20), "MB")
	return nil
}

// floodAddress is the i-th flood request's client address: one of
// floodNetworks networks, half IPv4 (each in its own /24), half IPv6
// /64s (each in its own /48), at a varying address inside it.
func floodAddress(i int64) string {
	n := i % floodNetworks
	if n%2 == 0 {
		return fmt.Sprintf("10.%d.%d.%d", n/256+1, n%256, i%250+1)
	}
	return fmt.Sprintf("2001:db8:%x:1::%x", n, i%65536)
}

// csrfPair reads the login page and returns its CSRF cookie and token.
func csrfPair(c *http.Client, base string) ([2]string, error) {
	res, err := c.Get(base + "/dashboard/login")
	if err != nil {
		return [2]string{}, err
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfInput.FindSubmatch(page)
	for _, ck := range res.Cookies() {
		if ck.Name == "kassa_csrf" && m != nil {
			return [2]string{ck.Value, string(m[1])}, nil
		}
	}
	return [2]string{}, fmt.Errorf("login page: no CSRF token (%d)", res.StatusCode)
}

// signIn posts a sign-in from client address ip and returns the status
// and the answer's cookies.
func signIn(c *http.Client, base string, csrf [2]string, email, password, ip string, device *http.Cookie) (int, []*http.Cookie, error) {
	form := url.Values{"email": {email}, "password": {password}, "csrf": {csrf[1]}}
	req, _ := http.NewRequest("POST", base+"/dashboard/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(floodIPHeader, ip)
	req.AddCookie(&http.Cookie{Name: "kassa_csrf", Value: csrf[0]})
	if device != nil {
		req.AddCookie(device)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Cookies(), nil
}

// peakRSS is the process's peak resident set (VmHWM), in bytes, or 0.
func peakRSS(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// percentile is the p-quantile of ds (0 when empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(int(p*float64(len(s))), len(s)-1)]
}
