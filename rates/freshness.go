package rates

import "time"

// Fetched answers, for each provider, when it last brought a rate for any
// currency (zero: never), for the rate freshness metric.
func (s *Service) Fetched() map[string]time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]time.Time, len(s.state))
	for name, st := range s.state {
		var newest time.Time
		for _, p := range st.pairs {
			if p.at.After(newest) {
				newest = p.at
			}
		}
		out[name] = newest
	}
	return out
}

// Fetched answers the fixed rates as fetched now: they never age.
func (f Fixed) Fetched() map[string]time.Time {
	return map[string]time.Time{FixedSource: time.Now()}
}
