package audit

import (
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", DefaultRetention, false},
		{"400", 400 * 24 * time.Hour, false},
		{" 30 ", 30 * 24 * time.Hour, false},
		{"0", 0, true},
		{"-1", 0, true},
		{"1.5", 0, true},
		{"forever", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRetention(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseRetention(%q) = %s, %v; want %s, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
