package phoneregion

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// libraryTypes maps the library's number types to notify's.
var libraryTypes = map[phonenumbers.PhoneNumberType]notify.NumberType{
	phonenumbers.FIXED_LINE: notify.NumberFixedLine, phonenumbers.MOBILE: notify.NumberMobile,
	phonenumbers.FIXED_LINE_OR_MOBILE: notify.NumberFixedLineOrMobile, phonenumbers.TOLL_FREE: notify.NumberTollFree,
	phonenumbers.PREMIUM_RATE: notify.NumberPremiumRate, phonenumbers.SHARED_COST: notify.NumberSharedCost,
	phonenumbers.VOIP: notify.NumberVoIP, phonenumbers.PERSONAL_NUMBER: notify.NumberPersonal,
	phonenumbers.PAGER: notify.NumberPager, phonenumbers.UAN: notify.NumberUAN,
	phonenumbers.VOICEMAIL: notify.NumberVoicemail, phonenumbers.UNKNOWN: notify.NumberUnknown,
}

// library places e164 with the library itself: its E.164 form, its region ("001" for a
// non-geographic code) and type, "" and UNKNOWN when it does not parse.
func library(e164 string) (string, string, notify.NumberType) {
	n, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return "", "", notify.NumberUnknown
	}
	number := phonenumbers.Format(n, phonenumbers.E164)
	region := phonenumbers.GetRegionCodeForNumber(n)
	if region == "" {
		return number, "", notify.NumberUnknown
	}
	return number, region, libraryTypes[phonenumbers.GetNumberType(n)]
}

// testNumbers returns the table of numbers compared: every example number of every region,
// non-geographic code and type the library has, variants of each (a digit changed, added or
// removed, a national prefix put in front), and random digits under every calling code.
func testNumbers() []string {
	var out []string
	add := func(cc int, nsn string) {
		if nsn == "" {
			return
		}
		p := "+" + strconv.Itoa(cc)
		out = append(out, p+nsn, p+nsn[:len(nsn)-1], p+nsn+"0", p+nsn+"7", p+"0"+nsn, p+"1"+nsn, p+"9"+nsn)
		last := int(nsn[len(nsn)-1] - '0')
		out = append(out, p+nsn[:len(nsn)-1]+strconv.Itoa((last+1)%10))
		for d := range 10 {
			out = append(out, p+strconv.Itoa(d)+nsn[1:])
		}
	}
	types := []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
		phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST, phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER,
		phonenumbers.PAGER, phonenumbers.UAN, phonenumbers.VOICEMAIL}
	for region := range phonenumbers.GetSupportedRegions() {
		for _, typ := range types {
			if n := phonenumbers.GetExampleNumberForType(region, typ); n != nil {
				add(int(n.GetCountryCode()), phonenumbers.GetNationalSignificantNumber(n))
			}
		}
	}
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		if n := phonenumbers.GetExampleNumberForNonGeoEntity(cc); n != nil {
			add(cc, phonenumbers.GetNationalSignificantNumber(n))
		}
	}
	rnd := rand.New(rand.NewPCG(28, 29))
	var codes []int
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		codes = append(codes, cc)
	}
	slices.Sort(codes)
	for _, cc := range codes {
		for range 40 {
			nsn := make([]byte, 2+rnd.IntN(14))
			for i := range nsn {
				nsn[i] = byte('0' + rnd.IntN(10))
			}
			out = append(out, "+"+strconv.Itoa(cc)+string(nsn))
		}
	}
	out = append(out, "+", "+1", "+12", "+999123456", "+0123456789", "+1212555010x", "12125550100", "")
	slices.Sort(out)
	return slices.Compact(out)
}

// TestPlaceAnswersAsTheLibrary: the compiled table and its matcher give the library's region
// and type for every number of the table (tens of thousands, covering every region and type).
func TestPlaceAnswersAsTheLibrary(t *testing.T) {
	numbers := testNumbers()
	kinds := map[notify.NumberType]int{}
	bad := 0
	for _, n := range numbers {
		wantNumber, wantRegion, wantType := library(n)
		gotNumber, gotRegion, gotType := place(n)
		kinds[gotType]++
		if gotRegion != wantRegion || gotType != wantType || (gotNumber != wantNumber && gotType != notify.NumberUnknown) {
			bad++
			if bad <= 20 {
				t.Errorf("place(%s) = %s %s %s, the library says %s %s %s", n, gotNumber, gotRegion, gotType, wantNumber, wantRegion, wantType)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d numbers differ", bad, len(numbers))
	}
	// The table must reach every type, or it proves little.
	for _, k := range append(slices.Clone(notify.NumberTypes), notify.NumberUnknown) {
		if kinds[k] == 0 {
			t.Errorf("no number of the table is %s", k)
		}
	}
	t.Logf("%d numbers compared: %v", len(numbers), kinds)
}

// TestSupportedIsTheLibrarys: Supported and All name exactly the library's regions.
func TestSupportedIsTheLibrarys(t *testing.T) {
	var want []string
	for r := range phonenumbers.GetSupportedRegions() {
		want = append(want, r)
	}
	slices.Sort(want)
	if got := All(); !slices.Equal(got, want) {
		t.Errorf("All() = %d regions, the library %d", len(got), len(want))
	}
}

// TestPrepareCompilesAtOnce: Prepare parses and compiles the countries it is given, so that
// their first number finds them ready, and leaves the others for their first use.
func TestPrepareCompilesAtOnce(t *testing.T) {
	compiled := func(region string) bool {
		i, ok := territoryIndex(region)
		if !ok {
			t.Fatalf("no %s", region)
		}
		parsedOnce.Do(func() {
			parsedTerritories = make([]lazy, len(territories))
			parsedNonGeo = make([]lazy, len(nonGeographic))
		})
		return parsedTerritories[i].t.descs[descGeneral].re != nil
	}
	// Other tests of the package place numbers everywhere: forget FO and GL (no test of this
	// package runs in parallel).
	for _, r := range []string{"FO", "GL"} {
		compiled(r)
		i, _ := territoryIndex(r)
		parsedTerritories[i] = lazy{}
	}
	Regions{}.Prepare([]string{"FO"})
	if !compiled("FO") || compiled("GL") {
		t.Errorf("after Prepare(FO): FO compiled %v, GL compiled %v; want true, false", compiled("FO"), compiled("GL"))
	}
}
