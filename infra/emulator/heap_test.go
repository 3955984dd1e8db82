package emulator

import "testing"

// TestJavaHeap: Options.JavaHeap wins, then RESETNOTIFY_DYNAMODB_JAVA_HEAP (make bench), then
// the default.
func TestJavaHeap(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvJavaHeap {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct{ set, env, want string }{
		{"", "", DefaultJavaHeap},
		{"", "1g", "1g"},
		{"512m", "1g", "512m"},
	} {
		if got := javaHeap(tc.set, env(tc.env)); got != tc.want {
			t.Errorf("javaHeap(%q) with $%s=%q = %q, want %q", tc.set, EnvJavaHeap, tc.env, got, tc.want)
		}
	}
}
