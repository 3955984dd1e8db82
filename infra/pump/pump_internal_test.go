package pump

import "testing"

func TestQueueARN(t *testing.T) {
	for url, want := range map[string]string{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/dispatch": "arn:aws:sqs:eu-west-1:123456789012:dispatch",
		"http://127.0.0.1:5000/000000000000/q":                      "arn:aws:sqs:eu-west-1:000000000000:q",
		"http://127.0.0.1:5000/q":                                   "",
	} {
		if got := queueARN(url, "eu-west-1"); got != want {
			t.Errorf("queueARN(%q) = %q, want %q", url, got, want)
		}
	}
}
