package reconcile

import (
	"testing"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
)

// TestOnlySinchNeedsASecondNotFound: the reconcile chain asks a second lookup of a "not found"
// at Sinch, whose lookup is not documented as exact, and of no other provider.
func TestOnlySinchNeedsASecondNotFound(t *testing.T) {
	var provs []provider.Provider
	for _, name := range []string{config.SMSEndUserSMS, config.SMSSinch, config.SMSSimulator, config.SMSSimulator2} {
		provs = append(provs, provider.Provider{Name: name})
	}
	for _, lr := range lookupRoutes(provs) {
		if lr.ConfirmNotFound != (lr.Name == config.SMSSinch) {
			t.Errorf("%s: confirm not found = %v", lr.Name, lr.ConfirmNotFound)
		}
	}
}
