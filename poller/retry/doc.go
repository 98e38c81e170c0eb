// Package retry is dbxtop's one retry policy: it classifies the error of
// each attempt (retry, give up, ask for a fresh connection), waits with
// jittered exponential backoff or the server's Retry-After, bounds each
// call by attempts, elapsed time and a per-attempt timeout, and rations
// retries with a per-workspace budget that refills only on success
// (docs/retry-policy.md). It also owns what every caller of the policy
// shares: the injectable Clock, GiveUpError and ErrorInfoOf, and the close
// queue's CloseRetryWait.
//
// It imports only model, sources and textfmt: the follow engine (poller)
// and the proxy both build on it, so it must never import poller, proxy
// or anything above them.
package retry
