package providerevents_test

import (
	"testing"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/endusersms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simclient"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/sinch"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// TestDefaultsMatchConfig keeps the retention package config documents and applies equal to
// the store's fallback.
func TestDefaultsMatchConfig(t *testing.T) {
	if providerevents.DefaultRetention != config.DefaultReceiptRetention {
		t.Errorf("providerevents.DefaultRetention %s, config.DefaultReceiptRetention %s", providerevents.DefaultRetention, config.DefaultReceiptRetention)
	}
}

// TestNamesMatchTheAdapters keeps the names receipts reads without linking the adapters equal
// to the adapters' own.
func TestNamesMatchTheAdapters(t *testing.T) {
	if providerevents.ContextConfigurationSet != endusersms.ContextConfigurationSet {
		t.Errorf("receipts reads the context key %q, endusersms writes %q", providerevents.ContextConfigurationSet, endusersms.ContextConfigurationSet)
	}
	if providerevents.ContextAttemptRef != endusersms.ContextAttemptRef {
		t.Errorf("receipts reads the context key %q, endusersms writes %q", providerevents.ContextAttemptRef, endusersms.ContextAttemptRef)
	}
	if config.SMSEndUserSMS != endusersms.Provider || config.SMSSimulator != simclient.Provider || config.SMSSinch != sinch.Provider {
		t.Errorf("provider names differ from the adapters'")
	}
	if config.SinchCallbackTokenQuery != sinch.CallbackTokenQuery {
		t.Errorf("the Sinch webhook reads the token from %q, the adapter puts it in %q", config.SinchCallbackTokenQuery, sinch.CallbackTokenQuery)
	}
}
