// Package smssim is an HTTP SMS provider simulator: the "world" that the dispatch and reconcile
// workers talk to in local runs and tests. Its wire format is package simapi; its client
// adapter is package simclient.
//
// Each send request gets one Mode (accept, reject, throttle, unavailable,
// timeout_before_accept, accept_then_timeout, accept_then_drop, 500_after_accept, latency, and
// the faults of a broken path to the provider: 502_before_accept, 502_after_accept,
// 504_after_accept, truncated_after_accept, garbage_after_accept, reset_after_accept).
// The mode is chosen, in this order, by:
//
//  1. a fault scripted for the destination (SetFault, or POST /control/faults): its modes are
//     consumed one per request and the last one stays in force;
//  2. the first Rule whose suffix ends the destination number (Config.Rules, -rules 13=reject);
//  3. the seeded random Mix (Config.Mix, -mix accept=55,accept_then_timeout=15,...), drawn
//     from a generator per destination seeded by (Seed, number), so the modes a destination
//     sees depend only on the seed and the order of its own requests, not on other traffic;
//  4. otherwise accept.
//
// The simulator never deduplicates: every recorded message counts, so a test can prove that
// no notification was sent twice. It records a message only while the client is still
// waiting (a latency request whose client hung up is not recorded), so whatever it accepts
// for an attempt was recorded before that attempt's call returned. Accepting a message after
// its deadline is allowed — the simulator does not know deadlines; tests compare the inbox
// times with them.
//
// Visibility: a lookup does not see a message until Config.Visibility has passed since it
// was accepted. An invisible message looks exactly like a missing one (404 not_found, or an
// empty list), as it would at a real, eventually consistent provider: it is the client's job
// to count "not found" only after the window (sms.Absent).
//
// Delivery: a message is delivered Config.DeliveryDelay after acceptance. If its validity
// period is shorter than that, the carrier drops it: the inbox marks it Lapsed and its final
// status is undelivered / validity_expired. When Config.WebhookURL is set, the final status
// is POSTed there as a simapi.Receipt at that time.
//
// With Provider "twilio" it also speaks Twilio's Messages API under the account's URL, taking
// only its API key (HTTP basic, key SID and secret), with signed status callbacks and a list
// that lags (Config.ListLag). The simulator is the provider, so it sees numbers and bodies, but it never logs them: its
// logs carry the client reference, the mode and the message ID only.
package smssim
